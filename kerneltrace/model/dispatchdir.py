"""Find decoded ATT dispatch dirs under a folder, drop empty shells, locate their sibling CSVs."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.reader import wave_files

DISPATCH_RE = re.compile(r"^ui_output_agent_(\d+)_dispatch_(\d+)(.*)$")
MANIFEST_COLUMNS = ("id", "kernel_id", "kernel", "dispatch_dir", "label", "agent", "dispatch",
                    "kernel_trace_csv", "agent_info_csv", "pmc_files", "source", "wave_files")


@dataclass(frozen=True)
class DispatchDir:
    """One decoded dispatch directory and the metadata files that belong to it."""

    path: Path
    agent: int | None
    dispatch: int | None
    label: str  # name suffix after the dispatch id (e.g. "_after_loc_fix"), kept verbatim
    kernel: str = ""
    kernel_trace_csv: Path | None = None
    agent_info_csv: Path | None = None
    pmc_files: tuple[Path, ...] = ()
    wave_files: int = 0  # se*_sm*_sl*_wv*.json files inside (the pipeline adds --waves when > 0)


@dataclass
class Discovery:
    kept: list[DispatchDir] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. empty shells dropped, and why


def parse_name(name: str) -> tuple[int | None, int | None, str]:
    match = DISPATCH_RE.match(name)
    if not match:
        return None, None, name
    return int(match.group(1)), int(match.group(2)), match.group(3).lstrip("_")


def _has_executed_instruction(rows: object) -> bool:
    """True if some instruction row has a positive count (Hit/Latency/... or PC-sampling samples)."""
    if not isinstance(rows, list):
        return False
    for row in rows:
        if not isinstance(row, list) or not row or (isinstance(row[0], str) and row[0].startswith(";")):
            continue
        for value in row[6:]:
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float) and value > 0:
                return True
            if isinstance(value, list) and any(isinstance(v, int | float) and v > 0 for v in value):
                return True
    return False


def emptiness(dispatch_dir: Path) -> str | None:
    """Why the directory holds no usable trace (None when it does)."""
    code = dispatch_dir / "code.json"
    if not code.is_file():
        return "no code.json"
    try:
        with open(code, "rb") as handle:
            document = json.load(handle)
    except (OSError, ValueError) as err:
        return f"unreadable code.json ({err.__class__.__name__})"
    rows = document.get("code") if isinstance(document, dict) else None
    if rows is None:
        return "code.json has code: null (no wave ran on the traced CU)"
    if not _has_executed_instruction(rows):
        return "no executed instruction in code.json (empty trace)"
    return None


def kernel_name(dispatch_dir: Path) -> str:
    """Kernel named by the first label row of code.json (demangled when present), else ""."""
    try:
        with open(dispatch_dir / "code.json", "rb") as handle:
            rows = json.load(handle).get("code") or []
    except (OSError, ValueError, AttributeError):
        return ""
    for row in rows:
        if isinstance(row, list) and row and isinstance(row[0], str) and row[0].startswith(";"):
            label = row[0][1:].strip()
            if label.lower().startswith("begin att"):
                continue
            demangled = row[3] if len(row) > 3 and isinstance(row[3], str) else ""
            return demangled or label
    return ""


def _candidates(directory: Path, patterns: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        found.extend(sorted(p for p in directory.glob(pattern) if p.is_file()))
    return found


def _nearest(dispatch_dir: Path, root: Path, patterns: tuple[str, ...]) -> list[Path]:
    """Files matching ``patterns`` in the nearest ancestor (up to ``root``) or its subfolders."""
    prefer = dispatch_dir.parent.name
    level = dispatch_dir.parent
    while True:
        found = _candidates(level, patterns)
        if not found:
            for sub in sorted(p for p in level.iterdir() if p.is_dir() and not DISPATCH_RE.match(p.name)):
                found.extend(_candidates(sub, patterns))
        if found:
            # A file named after the capture's folder ("big_agent_info.csv" for .../big/) wins.
            return sorted(found, key=lambda p: (not p.name.startswith(prefer + "_"), str(p)))
        if level == root or root not in level.parents:
            return []
        level = level.parent


def _is_dispatch_dir(path: Path) -> bool:
    return bool(DISPATCH_RE.match(path.name)) or (path / "code.json").is_file()


def find_dispatch_dirs(search_root: Path) -> Discovery:
    """All dispatch dirs under ``search_root`` (which may itself be one); empty shells noted and dropped."""
    root = search_root.resolve()
    if not root.is_dir():
        raise InputError("directory not found", str(search_root), "pass dir=PATH to an existing folder")
    found: list[Path] = []
    if _is_dispatch_dir(root):
        found.append(root)
    else:
        for dirpath, dirnames, _files in os.walk(root):
            dirnames.sort()
            here = Path(dirpath)
            for name in list(dirnames):
                child = here / name
                if _is_dispatch_dir(child):
                    found.append(child)
                    dirnames.remove(name)  # a dispatch dir never nests another
    result = Discovery()
    walk_root = root if not _is_dispatch_dir(root) else root.parent
    for path in found:
        why = emptiness(path)
        if why:
            result.notes.append(f"dropped {path}: {why}")
            continue
        agent, dispatch, label = parse_name(path.name)
        traces = _nearest(path, walk_root, ("*kernel_trace*.csv",))
        agents = _nearest(path, walk_root, ("*agent_info*.csv",))
        pmc = _nearest(path, walk_root, ("*counter_collection.csv", "pass_*/*counter_collection.csv"))
        result.kept.append(DispatchDir(path, agent, dispatch, label if agent is not None else "",
                                       kernel_name(path), traces[0] if traces else None,
                                       agents[0] if agents else None, tuple(pmc),
                                       len(wave_files(path))))
    return result


def no_dispatch_dirs_error(search_root: Path, notes: list[str]) -> InputError:
    extra = f" ({len(notes)} empty shell(s) dropped: {'; '.join(notes[:3])})" if notes else ""
    return InputError(
        f"no usable ui_output_agent_*_dispatch_* directory (nor any folder with code.json) found "
        f"recursively under {search_root}{extra}", str(search_root),
        "point dir= at a folder holding decoded rocprofv3 --att output, or at one dispatch dir")


def manifest_rows(dirs: list[DispatchDir], *, id_prefix: str = "d", kernel_id: str = "",
                  source: str = "dir") -> list[dict[str, str]]:
    rows = []
    for number, item in enumerate(dirs):
        rows.append({
            "id": f"{id_prefix}{number:03d}", "kernel_id": kernel_id, "kernel": item.kernel,
            "dispatch_dir": str(item.path), "label": item.label,
            "agent": "" if item.agent is None else str(item.agent),
            "dispatch": "" if item.dispatch is None else str(item.dispatch),
            "kernel_trace_csv": str(item.kernel_trace_csv or ""),
            "agent_info_csv": str(item.agent_info_csv or ""),
            "pmc_files": ";".join(str(p) for p in item.pmc_files), "source": source,
            "wave_files": str(item.wave_files)})
    return rows


def _clean(value: str) -> str:
    return value.replace("\t", " ").replace("\n", " ")


def manifest_tsv(rows: list[dict[str, str]]) -> str:
    lines = ["\t".join(MANIFEST_COLUMNS)]
    lines += ["\t".join(_clean(row.get(col, "")) for col in MANIFEST_COLUMNS) for row in rows]
    return "\n".join(lines) + "\n"


def read_manifest(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
