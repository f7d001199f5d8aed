"""CSV metadata of one dispatch (kernel_trace row, agent_info agents, counter files) found by content in its capture bundle.

The capture bundle is the dispatch dir and up to BUNDLE_LEVELS folders above it, each with its
direct subfolders that hold no other dispatch dirs (FlyDSL keeps `compute_viewer/*_agent_info.csv`
beside `att_viewer/big/…`; rocprofv3 writes `<out>/<host>/<pid>_agent_info.csv` beside the
`ui_output_*` dirs). The bundle is bounded (``bundle``): the climb stops below `/`, below the
parent of a mount point, at a folder another user owns or anyone may write to (`/tmp`), at a system
folder (`/proc`, `/sys`, `/dev`), and at a folder that holds other captures' bundles (a subfolder
with dispatch dirs and files of the searched kind of its own: agent-info and kernel-trace CSVs,
or counter CSVs). Files and subfolders owned by another user than
the dispatch dir's owner (a linked subfolder: its target's owner) are never looked at; every
filesystem error is a skip. The search depends only on the dispatch dir, never on the folder a
user pointed at, so the CLI on a dispatch dir and the pipeline on it or any parent give the same
answer. The nearest level holding a file of the kind is used; farther ones are never mixed in. A kernel_trace CSV is matched by content: a row of the same run with this dispatch's id
(and, when both are known, a kernel name that agrees), else a row with the kernel's exact name
(discover_* CSVs number another run's dispatches, so they are only ever joined by name).
Agent info: the nearest CSV listing GPU agents, a file named after the capture folder or sharing
the kernel_trace CSV's prefix first.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from _thread import _local  # threading.local itself: `import threading` costs ≈ 0.7 ms a CLI run
from operator import attrgetter
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.model import lookupcache
from kerneltrace.model.naming import DISPATCH_RE
from kerneltrace.namematch import name_matches
from kerneltrace.readers.csvs import (
    AgentInfo,
    KernelTraceFile,
    KernelTraceRow,
    KernelTraceTable,
    gpu_agents,
    read_agent_info,
    read_kernel_trace_file,
)
from kerneltrace.records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI start-up path)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

BUNDLE_LEVELS = 3  # folders searched above the dispatch dir (parent, grandparent, great-grandparent)
KERNEL_TRACE = ("*kernel_trace*.csv",)
AGENT_INFO = ("*agent_info*.csv",)
COUNTERS = ("*counter_collection.csv", "pass_*/*counter_collection.csv")
OTHER_RUN_PREFIXES = ("discover_",)  # the discovery run: its Dispatch_Id numbers another run
SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")  # never listed, nor anything below /proc and /sys
SCAN_LIMIT = 2000  # entries looked at per subfolder check; a larger folder counts as holding captures


def is_other_run(path: Path) -> bool:
    return path.name.startswith(OTHER_RUN_PREFIXES)


_NAME = attrgetter("name")
_scope = _local()  # the folder listings of one search (find_metadata, find_csv_files)


def _once(key: tuple, compute: Callable[..., object], *args: object) -> object:
    """``compute(*args)``, once per search for ``key`` (the kernel-trace and agent-info lookups climb
    the same folders: each stat, realpath and mount test of a folder is asked several times)."""
    listings = getattr(_scope, "listings", None)
    if listings is None:
        return compute(*args)
    if key not in listings:
        listings[key] = compute(*args)
    return listings[key]


def _stat_now(path: Path | str, follow: bool) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return None


def _stat(path: Path | str, follow: bool = True) -> os.stat_result | None:
    return _once(("stat", os.fspath(path), follow), _stat_now, path, follow)


def _system_path(text: str) -> bool:
    return text == "/" or text in SYSTEM_FOLDERS or text.startswith(("/proc/", "/sys/"))


def _is_system(path: Path, resolve: bool = False) -> bool:
    """`/`, /proc, /sys, /dev (and below /proc, /sys); ``resolve``: after following links (the
    dispatch dir, each ancestor and each linked subfolder are resolved once; plain entries of
    those need not be)."""
    if not resolve:
        return _system_path(os.path.abspath(path))
    return _system_path(_once(("realpath", os.fspath(path)), os.path.realpath, path))


def _is_mount(path: Path) -> bool:
    return _once(("mount", os.fspath(path)), os.path.ismount, path)


@contextlib.contextmanager
def _one_search() -> Iterator[None]:
    """Within this block a folder is listed once (a search asks for the same folders repeatedly)."""
    outer = getattr(_scope, "listings", None)
    if outer is None:
        _scope.listings = {}
    try:
        yield
    finally:
        if outer is None:
            _scope.listings = None


def one_search() -> contextlib.AbstractContextManager[None]:
    """A block in which every folder is listed once, by the bundle search and by ``listed_names``
    (the hotspot document lists the dispatch dir for its wave files too: thousands of names)."""
    return _one_search()


def listed_names(folder: Path) -> list[str]:
    """The names in ``folder`` in the order the system lists them (the search's listing when one
    is open); an OSError when it cannot be listed, as os.listdir."""
    listings = getattr(_scope, "listings", None)
    entries = None if listings is None else listings.get(os.path.abspath(folder))
    if not entries:  # not listed yet, or nothing listed (an unreadable folder: os.listdir says why)
        return os.listdir(folder)
    return [entry.name for entry in entries]


def _entries(folder: Path) -> list[os.DirEntry]:
    """The folder's entries in the order the system lists them (callers that return entries sort
    what they keep: a dispatch dir holds thousands of wave files); [] when it cannot be listed
    (or must never be)."""
    listings = getattr(_scope, "listings", None)
    key = os.path.abspath(folder)
    if listings is not None and key in listings:
        return listings[key]
    entries: list[os.DirEntry] = []
    if not _system_path(key):
        try:
            with os.scandir(folder) as found:
                entries = list(found)
        except (OSError, ValueError):
            entries = []
    if listings is not None:
        listings[key] = entries
    return entries


def _is_dir(entry: os.DirEntry, follow: bool = False) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def _owned_file(entry: os.DirEntry, owner: int | None) -> bool:
    """A regular file (a link is followed) owned by ``owner`` (any owner when None)."""
    info = _stat(entry.path)
    return info is not None and stat.S_ISREG(info.st_mode) and (owner is None or info.st_uid == owner)


def _ending(folder: Path, entries: list[os.DirEntry], tail: str) -> list[os.DirEntry]:
    """The entries whose names end with ``tail``, once per search (a dispatch dir of 4000 wave
    files is asked for each kind of CSV)."""
    listings = getattr(_scope, "listings", None)
    key = ("ending", os.path.abspath(folder), tail)
    if listings is not None and key in listings:
        return listings[key]
    found = sorted((entry for entry in entries if entry.name.endswith(tail)), key=_NAME)
    if listings is not None:
        listings[key] = found
    return found


def _files(folder: Path, patterns: tuple[str, ...], owner: int | None = None) -> list[Path]:
    """Regular files of ``folder`` matching the patterns (``pass_*/*.csv``: one folder down)."""
    found: list[Path] = []
    entries = _entries(folder)
    for pattern in patterns:
        head, _, tail = pattern.rpartition("/")
        if head:
            places = [folder / entry.name for entry in entries
                      if _is_dir(entry) and name_matches(entry.name, head)]
            found.extend(sorted(path for place in places for path in _files(place, (tail,), owner)))
            continue
        tail_text = pattern.rsplit("*", 1)[-1]  # the literal end (".csv"): a cheap first filter
        found.extend(folder / entry.name for entry in _ending(folder, entries, tail_text)
                     if name_matches(entry.name, pattern) and _owned_file(entry, owner))
    return found


def _has_code_json(folder: str) -> bool:
    info = _stat(os.path.join(folder, "code.json"))
    return info is not None and stat.S_ISREG(info.st_mode)


def holds_captures(folder: Path, limit: int = SCAN_LIMIT) -> bool:
    """True when dispatch dirs sit in the folder or one level down: another capture's bundle.

    A folder too large to look through counts as holding captures (it is not searched).
    """
    seen = 0
    pending = [(Path(folder), 0)]
    while pending:
        here, depth = pending.pop()
        for entry in _entries(here):
            if not _is_dir(entry):
                continue
            seen += 1
            if seen > limit:
                return True
            if DISPATCH_RE.match(entry.name) or _has_code_json(entry.path):
                return True
            if depth == 0:
                pending.append((Path(entry.path), 1))
    return False


def _holds_metadata(folder: Path, owner: int | None, patterns: tuple[str, ...]) -> bool:
    """Files of the searched kind in the folder or one level down."""
    if _files(folder, patterns, owner):
        return True
    return any(_files(Path(entry.path), patterns, owner) for entry in _entries(folder) if _is_dir(entry))


@record(frozen=True)
class _Capture:
    """Whose files the bundle may hold: the dispatch dir's owner and filesystem."""

    owner: int | None
    device: int | None


def _capture_of(dispatch_dir: Path) -> _Capture:
    info = _stat(dispatch_dir)
    return _Capture(info.st_uid if info else None, info.st_dev if info else None)


def _own_folder(path: Path, capture: _Capture) -> bool:
    """A folder (a link's target) of the capture's owner that not everybody may write to, not a
    system folder."""
    info = _stat(path)
    return (info is not None and stat.S_ISDIR(info.st_mode) and not _is_system(path, os.path.islink(path))
            and (capture.owner is None or info.st_uid == capture.owner)
            and not info.st_mode & stat.S_IWOTH)


def _subfolders(folder: Path, capture: _Capture) -> list[Path]:
    """Direct subfolders (a linked one when its target is the owner's too), no dispatch dirs."""
    return [folder / entry.name for entry in sorted(_entries(folder), key=_NAME)
            if _is_dir(entry, follow=True) and not DISPATCH_RE.match(entry.name)
            and _own_folder(folder / entry.name, capture)]


def bundle_folders(folder: Path, came_from: Path, capture: _Capture | None = None) -> list[Path]:
    """The folders a bundle searches one level up: ``folder`` and its subfolders but ``came_from``
    (absolute) and those holding dispatch dirs (other captures' bundles)."""
    capture = capture or _Capture(None, None)
    return [folder, *(sub for sub in _subfolders(folder, capture)
                      if sub.absolute() != came_from and not holds_captures(sub))]


def _climb_stops(folder: Path, came_from: Path, capture: _Capture, level: int,
                 patterns: tuple[str, ...]) -> bool:
    """True when ``folder`` (the parent of ``came_from``) is outside the capture's bundle."""
    if _is_system(folder, resolve=True) or _is_mount(came_from) or not _own_folder(folder, capture):
        return True
    info = _stat(folder)
    if info is None or (capture.device is not None and info.st_dev != capture.device):
        return True
    for entry in _entries(folder):
        sub = Path(entry.path)
        if not _is_dir(entry) or sub.absolute() == came_from:
            continue
        if DISPATCH_RE.match(entry.name) or _has_code_json(entry.path):
            if level > 1:  # the parent's other dispatch dirs are the same capture
                return True
            continue
        if holds_captures(sub) and _holds_metadata(sub, capture.owner, patterns):
            # a sibling capture with its own files of this kind: this folder holds several
            # bundles, and its files of the kind may be the sibling's (a counter CSV beside two
            # captures that have none of their own is still found)
            return True
    return False


def bundle(dispatch_dir: Path, patterns: tuple[str, ...] = KERNEL_TRACE + AGENT_INFO) -> list[list[Path]]:
    """The folders searched per level for files of one kind, nearest first: [the dir], then each
    ancestor + subfolders."""
    listings = getattr(_scope, "listings", None)
    key = ("bundle", str(dispatch_dir), patterns)
    if listings is not None and key in listings:
        return listings[key]
    levels = _bundle(Path(dispatch_dir), patterns)
    if listings is not None:
        listings[key] = levels
    return levels


def _bundle(dispatch_dir: Path, patterns: tuple[str, ...]) -> list[list[Path]]:
    capture = _capture_of(dispatch_dir)
    levels = [[dispatch_dir]]
    if _is_system(dispatch_dir, resolve=True):
        return levels
    folder = dispatch_dir  # kept relative while the given path allows: found paths read as given
    for level in range(1, BUNDLE_LEVELS + 1):
        came_from = folder.absolute()
        if folder.parent == folder:
            if folder.is_absolute():
                break
            folder = folder.absolute()
        folder = folder.parent
        if _climb_stops(folder, came_from, capture, level, patterns):
            break
        levels.append(bundle_folders(folder, came_from, capture))
    return levels


def bundle_levels(dispatch_dir: Path, patterns: tuple[str, ...]) -> list[list[Path]]:
    """Matching files per level, nearest first: the dir itself, then each ancestor + its subfolders.

    Subfolders holding other dispatch dirs are other captures' bundles and are not searched; files
    another user owns are never part of the bundle.
    """
    dispatch_dir = Path(dispatch_dir)
    with _one_search():
        owner = _capture_of(dispatch_dir).owner
        prefer = dispatch_dir.absolute().parent.name + "_"
        folders = bundle(dispatch_dir, patterns)
        levels = [_files(dispatch_dir, patterns, owner) if not _is_system(dispatch_dir, True) else []]
        for places in folders[1:]:
            here = [path for place in places for path in _files(place, patterns, owner)]
            # a file named after the capture's folder ("big_agent_info.csv" for .../big/) wins
            here.sort(key=lambda p: (not p.name.startswith(prefer), is_other_run(p), str(p)))
            levels.append(here)
    return levels


def source_label(csv_path: Path | str | None, dispatch_dir: Path | str) -> str | None:
    """Where a metadata CSV sits, as a user reads it: relative to the folder it shares with the
    dispatch dir ("compute_viewer/big_agent_info.csv"), or its own name beside the capture."""
    if not csv_path:
        return None
    csv_abs, directory = os.path.abspath(csv_path), os.path.abspath(dispatch_dir)
    try:
        common = os.path.commonpath([csv_abs, directory])
    except ValueError:
        return str(csv_path)
    return os.path.relpath(csv_abs, common)


def nearest(dispatch_dir: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The files of the nearest level that has any (a nearer capture's files shadow farther ones)."""
    return next((level for level in bundle_levels(dispatch_dir, patterns) if level), [])


@functools.lru_cache(maxsize=256)
def _cached(kind: str, path: str, stamp: tuple[int, int]) -> KernelTraceFile | tuple:
    if kind == "trace":
        return read_kernel_trace_file(Path(path))
    return tuple(read_agent_info(Path(path)))


def _readable_stat(path: Path) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror})", str(path), "check permissions") from None


def _read(kind: str, path: Path, info: os.stat_result | None = None) -> KernelTraceFile | tuple:
    info = _readable_stat(path) if info is None else info
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
    """The kernel_trace row of this dispatch among ``candidates`` (in preference order).

    A lookup by name of a CSV the dispatch-id search does not read is taken from the per-user
    cache (kerneltrace.model.lookupcache) when the same file was looked up for the same names
    before: it is then not read at all (it read without error then and is unchanged since)."""
    wanted = {n for n in names if n}
    key = lookupcache.query_key(wanted, kernel_filter)
    # (path, its stat, the file read or None, the cached lookup or MISS)
    files: list[tuple[Path, os.stat_result, KernelTraceFile | None, object]] = []
    by_name_only = {path for path in candidates if dispatch_id is None or is_other_run(path)}
    for path in candidates:
        try:
            info = _readable_stat(path)
            if path in by_name_only:  # the dispatch-id search never reads it
                hit = lookupcache.find(str(path), info, key, __file__)
                if hit is not lookupcache.MISS:
                    files.append((path, info, None, hit))
                    continue
            files.append((path, info, _read("trace", path, info), lookupcache.MISS))
        except InputError as err:
            warnings.append(f"ignored {path}: {err.what}")
    if dispatch_id is not None:
        for path, _, trace, _ in files:
            if is_other_run(path) or trace is None:
                continue
            table = trace.table()
            same = [at for at, found in enumerate(table.ids) if found == dispatch_id]
            agreeing = [at for at in same if names_agree(table.names[at], names)]
            if agreeing:
                return TraceMatch(table.row(agreeing[0]), "dispatch_id", path)
    for path, info, trace, found in files:
        if trace is not None:
            found = _by_name(trace, wanted, kernel_filter)
            if path in by_name_only:  # (another is read every run: storing its lookup would not pay)
                lookupcache.store(str(path), info, key, found, __file__)
        if found is not None:
            header, cells, count, mixed = found
            if mixed:
                warnings.append(
                    f"{path}: {count} rows match the kernel name with different resources; using the first"
                )
            return TraceMatch(KernelTraceTable(header, [cells], str(path)).row(0), "kernel_name", path)
    return TraceMatch()


def _by_name(trace: KernelTraceFile, wanted: set[str], kernel_filter: str | None) -> list | None:
    """[header, the typical row's cells, how many rows, whether their resources differ] of the
    rows naming the kernel (exactly one of ``wanted``, else holding ``kernel_filter`` in any case),
    or None. The typical row: the median duration among those launched like the first (the first
    launch of a kernel is often a cold one: JIT, caches, clocks; a 45 % longer first dispatch on a
    real FlyDSL capture), so the kernel time a plan states is a typical dispatch's."""
    # only the rows that can name the kernel are parsed (a discovery CSV's ~10^4 rows)
    table = trace.naming(wanted)
    by_name = [at for at, name in enumerate(table.names) if name in wanted]
    if not by_name and kernel_filter:
        needle = kernel_filter.lower()
        table = trace.mentioning(kernel_filter)
        by_name = [at for at, name in enumerate(table.names) if needle in name.lower()]
    if not by_name:
        return None
    return [table.header, table.cells(table.typical(by_name)), len(by_name),
            len(table.resources(by_name)) > 1]


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
    with _one_search():  # one listing per folder for both lookups
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
    with _one_search():
        found = find_metadata(dispatch_dir, dispatch_id, names)
        return CsvFiles(found.trace.csv, found.agent_csv, nearest(dispatch_dir, COUNTERS))


def first_gpu_arch(folder: Path) -> str | None:
    """gfx target of the first GPU named by any *agent_info.csv under ``folder`` (a discovery output)."""
    for path in sorted(Path(folder).rglob("*agent_info.csv")):
        gpus = [agent for agent in gpu_agents(list(_read("agents", path))) if agent.name]
        if gpus:
            return gpus[0].name
    return None
