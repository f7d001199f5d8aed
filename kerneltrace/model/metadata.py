"""CSV metadata of one dispatch (kernel_trace row, agent_info agents, counter files) found by content in its capture bundle.

The capture bundle is the dispatch dir and up to BUNDLE_LEVELS folders above it, each with its
direct subfolders that hold no other dispatch dirs (FlyDSL keeps `compute_viewer/*_agent_info.csv`
beside `att_viewer/big/…`). The search depends only on the dispatch dir, never on the folder a
user pointed at, so the CLI on a dispatch dir and the pipeline on it or any parent give the same
answer. The nearest level holding a file of the kind is used; farther ones are never mixed in. A kernel_trace CSV is matched by content: a row of the same run with this dispatch's id
(and, when both are known, a kernel name that agrees), else a row with the kernel's exact name
(discover_* CSVs number another run's dispatches, so they are only ever joined by name).
Agent info: the nearest CSV listing GPU agents, a file named after the capture folder or sharing
the kernel_trace CSV's prefix first.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.model.naming import DISPATCH_RE, is_dispatch_dir
from kerneltrace.readers.csvs import (
    AgentInfo,
    KernelTraceRow,
    KernelTraceTable,
    gpu_agents,
    read_agent_info,
    read_kernel_trace_table,
)
from kerneltrace.records import field, record

BUNDLE_LEVELS = 3  # folders searched above the dispatch dir (parent, grandparent, great-grandparent)
KERNEL_TRACE = ("*kernel_trace*.csv",)
AGENT_INFO = ("*agent_info*.csv",)
COUNTERS = ("*counter_collection.csv", "pass_*/*counter_collection.csv")
OTHER_RUN_PREFIXES = ("discover_",)  # the discovery run: its Dispatch_Id numbers another run


def is_other_run(path: Path) -> bool:
    return path.name.startswith(OTHER_RUN_PREFIXES)


def _files(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    try:
        for pattern in patterns:
            found.extend(sorted(p for p in folder.glob(pattern) if p.is_file()))
    except OSError:
        return []
    return found


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not DISPATCH_RE.match(p.name))
    except OSError:
        return []


def holds_captures(folder: Path, limit: int = 2000) -> bool:
    """True when dispatch dirs sit in the folder or one level down: another capture's bundle.

    A folder too large to look through counts as holding captures (it is not searched).
    """
    seen = 0
    pending = [(folder, 0)]
    while pending:
        here, depth = pending.pop()
        try:
            entries = [entry for entry in os.scandir(here) if entry.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                return True
            if is_dispatch_dir(Path(entry.path)):
                return True
            if depth == 0:
                pending.append((Path(entry.path), 1))
    return False


def bundle_folders(folder: Path, came_from: Path) -> list[Path]:
    """The folders a bundle searches one level up: ``folder`` and its subfolders but ``came_from``
    (absolute) and those holding dispatch dirs (other captures' bundles)."""
    return [folder, *(sub for sub in _subfolders(folder)
                      if sub.absolute() != came_from and not holds_captures(sub))]


def bundle_levels(dispatch_dir: Path, patterns: tuple[str, ...]) -> list[list[Path]]:
    """Matching files per level, nearest first: the dir itself, then each ancestor + its subfolders.

    Subfolders holding other dispatch dirs are other captures' bundles and are not searched.
    """
    dispatch_dir = Path(dispatch_dir)
    prefer = dispatch_dir.absolute().parent.name + "_"
    levels = [_files(dispatch_dir, patterns)]
    folder = dispatch_dir  # kept relative while the given path allows: found paths read as given
    for _ in range(BUNDLE_LEVELS):
        came_from = folder.absolute()
        if folder.parent == folder:
            if folder.is_absolute():
                break
            folder = folder.absolute()
        folder = folder.parent
        here = [path for place in bundle_folders(folder, came_from) for path in _files(place, patterns)]
        # a file named after the capture's folder ("big_agent_info.csv" for .../big/) wins
        here.sort(key=lambda p: (not p.name.startswith(prefer), is_other_run(p), str(p)))
        levels.append(here)
    return levels


def nearest(dispatch_dir: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The files of the nearest level that has any (a nearer capture's files shadow farther ones)."""
    return next((level for level in bundle_levels(dispatch_dir, patterns) if level), [])


@functools.lru_cache(maxsize=256)
def _cached(kind: str, path: str, stamp: tuple[int, int]) -> KernelTraceTable | tuple:
    if kind == "trace":
        return read_kernel_trace_table(Path(path))
    return tuple(read_agent_info(Path(path)))


def _read(kind: str, path: Path) -> KernelTraceTable | tuple:
    try:
        info = os.stat(path)
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror})", str(path), "check permissions") from None
    return _cached(kind, str(path), (info.st_mtime_ns, info.st_size))


def _normal(name: str) -> str:
    name = name.strip()
    return name[:-3] if name.endswith(".kd") else name


def names_agree(row_name: str, names: list[str]) -> bool:
    """True when the CSV's kernel name and one of the code.json names denote the same kernel."""
    row = _normal(row_name)
    known = [_normal(n) for n in names if n]
    if not row or not known:
        return True
    return any(n == row or (len(n) >= 4 and (n in row or row in n)) for n in known)


@record
class TraceMatch:
    row: KernelTraceRow | None = None
    join: str | None = None        # "dispatch_id" | "kernel_name"
    csv: Path | None = None


def match_kernel_trace(
    candidates: list[Path],
    dispatch_id: int | None,
    names: list[str],
    kernel_filter: str | None,
    warnings: list[str],
) -> TraceMatch:
    """The kernel_trace row of this dispatch among ``candidates`` (in preference order)."""
    tables: list[tuple[Path, KernelTraceTable]] = []
    for path in candidates:
        try:
            tables.append((path, _read("trace", path)))
        except InputError as err:
            warnings.append(f"ignored {path}: {err.what}")
    if dispatch_id is not None:
        for path, table in tables:
            if is_other_run(path):
                continue
            same = [at for at, found in enumerate(table.ids) if found == dispatch_id]
            agreeing = [at for at in same if names_agree(table.names[at], names)]
            if agreeing:
                return TraceMatch(table.row(agreeing[0]), "dispatch_id", path)
    wanted = {n for n in names if n}
    for path, table in tables:
        by_name = [at for at, name in enumerate(table.names) if name in wanted]
        if not by_name and kernel_filter:
            needle = kernel_filter.lower()
            by_name = [at for at, name in enumerate(table.names) if needle in name.lower()]
        if by_name:
            if len(table.resources(by_name)) > 1:
                warnings.append(
                    f"{path}: {len(by_name)} rows match the kernel name with different resources; using the first"
                )
            return TraceMatch(table.row(by_name[0]), "kernel_name", path)
    return TraceMatch()


def match_agents(
    candidates: list[Path], trace: TraceMatch, warnings: list[str]
) -> tuple[list[AgentInfo], Path | None]:
    """GPU agents of the first candidate listing any (the trace row's agent when it is there)."""
    if trace.csv is not None and not is_other_run(trace.csv):
        # the agents of the run whose kernel_trace row this is
        prefix = trace.csv.name.split("kernel_trace")[0]
        candidates = sorted(candidates, key=lambda p: not (prefix and p.name.startswith(prefix)))
    for path in candidates:
        try:
            agents = _read("agents", path)
        except InputError as err:
            warnings.append(f"ignored {path}: {err.what}")
            continue
        gpus = [agent for agent in gpu_agents(list(agents)) if agent.name]
        if not gpus:
            continue
        number = trace.row.agent_number if trace.row else None
        chosen = [agent for agent in gpus if number is not None and agent.logical_node_id == number]
        return (chosen or gpus), path
    return [], None


@record
class Metadata:
    """What the bundle says about one dispatch."""

    trace: TraceMatch = field(default_factory=TraceMatch)
    agents: list[AgentInfo] = field(default_factory=list)
    agent_csv: Path | None = None
    warnings: list[str] = field(default_factory=list)


def find_metadata(
    dispatch_dir: Path,
    dispatch_id: int | None,
    names: list[str],
    *,
    kernel_trace_csv: Path | None = None,
    agent_info_csv: Path | None = None,
    kernel_filter: str | None = None,
) -> Metadata:
    """The kernel_trace row and GPU agents of one dispatch: explicit CSVs, else the bundle's."""
    result = Metadata()
    if kernel_trace_csv is not None:
        result.trace = match_kernel_trace([Path(kernel_trace_csv)], dispatch_id, names, kernel_filter,
                                          result.warnings)
        if result.trace.row is None:
            result.warnings.append(
                f"{kernel_trace_csv}: no row for this dispatch (Dispatch_Id {dispatch_id}) or kernel name; "
                "occupancy uses the ISA register scan only"
            )
    else:
        result.trace = match_kernel_trace(nearest(dispatch_dir, KERNEL_TRACE), dispatch_id, names,
                                          kernel_filter, result.warnings)
    agent_csvs = [Path(agent_info_csv)] if agent_info_csv is not None else nearest(dispatch_dir, AGENT_INFO)
    result.agents, result.agent_csv = match_agents(agent_csvs, result.trace, result.warnings)
    return result


@record(frozen=True)
class CsvFiles:
    """The metadata and counter files the bundle holds for one dispatch (what the manifest lists)."""

    kernel_trace: Path | None
    agent_info: Path | None
    pmc_files: list[Path]


def find_csv_files(dispatch_dir: Path, dispatch_id: int | None, names: list[str]) -> CsvFiles:
    """find_metadata's choice of CSVs, plus the counter files of the nearest level holding any."""
    found = find_metadata(dispatch_dir, dispatch_id, names)
    return CsvFiles(found.trace.csv, found.agent_csv, nearest(dispatch_dir, COUNTERS))


def first_gpu_arch(folder: Path) -> str | None:
    """gfx target of the first GPU named by any *agent_info.csv under ``folder`` (a discovery output)."""
    for path in sorted(Path(folder).rglob("*agent_info.csv")):
        gpus = [agent for agent in gpu_agents(list(_read("agents", path))) if agent.name]
        if gpus:
            return gpus[0].name
    return None
