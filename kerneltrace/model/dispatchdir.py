"""What a dispatch dir is: finding them under a folder and describing one (name, kernel, format, emptiness, files).

One model for the CLI, the pipeline, compare and the capture retries. A dispatch dir is a
decoded rocprofv3 ATT directory (`ui_output_agent_<agent>_dispatch_<id>[suffix]`, or any folder
holding a `code.json`, e.g. legacy `*_ui`). `describe` reads its code.json once (through the
code.json reader) and says what it holds; `find_dispatch_dirs` walks a folder and never lets one
bad entry stop the others: unreadable folders, names that cannot travel through the manifest
(tab, newline, control characters, bytes that are not UTF-8) and broken or empty code.json files
are skipped, each with one note naming the path and the reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.model.metadata import find_csv_files
from kerneltrace.model.naming import (
    DispatchName,
    display_path,
    is_dispatch_dir,
    parse_dispatch_name,
    unsafe_path_reason,
)
from kerneltrace.readers.codejson import CodeFormat, CodeTable, read_code_json
from kerneltrace.readers.wavefile.reader import wave_files


def executed(table: CodeTable) -> bool:
    """True when some instruction row counts anything (hits, cycles or PC samples)."""
    return any(
        row.hits or row.latency or row.stall or row.idle or row.pc_issued or row.pc_stalled
        for row in table.rows
    )


def table_emptiness(table: CodeTable) -> str | None:
    """Why a parsed code.json holds no usable trace (None when it does)."""
    if table.format == CodeFormat.EMPTY and not table.kernels:
        return "code.json has code: null (no wave ran on the traced CU)"
    if not executed(table):
        return "no executed instruction in code.json (empty trace)"
    return None


@dataclass(frozen=True)
class DispatchDir:
    """One decoded dispatch directory and the files that belong to it."""

    path: Path
    name: DispatchName
    kernel: str = ""        # first kernel label of code.json (demangled when present), or ""
    format: str = ""        # code.json format: a readers.codejson.CodeFormat
    empty: str | None = None  # why it holds no usable trace, None when it does
    wave_files: int = 0     # se*_sm*_sl*_wv*.json files inside
    kernel_trace_csv: Path | None = None  # CSV metadata found for it (kerneltrace.model.metadata)
    agent_info_csv: Path | None = None
    pmc_files: tuple[Path, ...] = ()

    @property
    def agent(self) -> int | None:
        return self.name.agent

    @property
    def dispatch(self) -> int | None:
        return self.name.id

    @property
    def label(self) -> str:
        return self.name.label


def describe(path: Path) -> DispatchDir:
    """Read one dispatch dir's code.json once and describe it; raises InputError when unreadable."""
    path = Path(path)
    code = path / "code.json"
    if not code.is_file():
        raise InputError("no code.json", str(path), "pass a decoded ui_output_agent_*_dispatch_* directory")
    table = read_code_json(code)
    kernel = table.kernels[0].name if table.kernels else ""
    try:
        waves = len(wave_files(path))
    except OSError as err:
        raise InputError(f"cannot list the folder ({err.strerror})", str(path), "check permissions") from None
    return DispatchDir(path, parse_dispatch_name(path), kernel, table.format, table_emptiness(table), waves)


def emptiness(dispatch_dir: Path) -> str | None:
    """Why the directory holds no usable trace (None when it does); unreadable counts as empty."""
    try:
        return describe(dispatch_dir).empty
    except InputError as err:
        return f"unreadable code.json ({err.what})"


@dataclass
class Discovery:
    """The usable dispatch dirs under a folder and a note for each entry skipped (path and reason)."""

    kept: list[DispatchDir] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _walk(root: Path, notes: list[str]) -> list[Path]:
    """Dispatch dirs under root (root included), in sorted walk order; unreadable folders noted."""
    if is_dispatch_dir(root):
        return [root]
    found: list[Path] = []

    def unreadable(err: OSError) -> None:
        notes.append(f"skipped {display_path(err.filename or root)}: cannot read the folder ({err.strerror})")

    for dirpath, dirnames, _files in os.walk(root, onerror=unreadable):
        dirnames.sort()
        here = Path(dirpath)
        for name in list(dirnames):
            child = here / name
            try:
                hit = is_dispatch_dir(child)
            except OSError as err:
                notes.append(f"skipped {display_path(child)}: cannot read it ({err.strerror})")
                dirnames.remove(name)
                continue
            if hit:
                found.append(child)
                dirnames.remove(name)  # a dispatch dir never nests another
    return found


def find_dispatch_dirs(search_root: Path, *, metadata: bool = True) -> Discovery:
    """All usable dispatch dirs under ``search_root`` (which may itself be one), with their CSVs.

    Every entry that cannot be analysed is skipped with a note (``dropped PATH: reason`` for empty
    or broken captures, ``skipped PATH: reason`` for names and folders that cannot be read);
    the others are kept.
    """
    root = Path(search_root).resolve()
    if not root.is_dir():
        raise InputError("directory not found", str(search_root), "pass dir=PATH to an existing folder")
    result = Discovery()
    for path in _walk(root, result.notes):
        unsafe = unsafe_path_reason(path)
        if unsafe:
            result.notes.append(f"skipped {display_path(path)}: {unsafe} (rename it to analyse it)")
            continue
        try:
            item = describe(path)
        except InputError as err:
            result.notes.append(f"dropped {display_path(path)}: unreadable code.json ({err.what})")
            continue
        if item.empty:
            result.notes.append(f"dropped {display_path(path)}: {item.empty}")
            continue
        if metadata:
            found = find_csv_files(path, item.name.id, [item.kernel] if item.kernel else [])
            item = replace(item, kernel_trace_csv=found.kernel_trace, agent_info_csv=found.agent_info,
                           pmc_files=tuple(found.pmc_files))
        result.kept.append(item)
    return result


def no_dispatch_dirs_error(search_root: Path, notes: list[str]) -> InputError:
    extra = f" ({len(notes)} entr(ies) skipped: {'; '.join(notes[:3])})" if notes else ""
    return InputError(
        f"no usable ui_output_agent_*_dispatch_* directory (nor any folder with code.json) found "
        f"recursively under {display_path(search_root)}{extra}", display_path(search_root),
        "point dir= at a folder holding decoded rocprofv3 --att output, or at one dispatch dir")
