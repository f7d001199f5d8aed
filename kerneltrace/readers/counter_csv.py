"""rocprofv3 counter_collection.csv (long format, pass_N layouts) -> one CounterRun per file.

Also defines CounterDispatch / CounterRun, the shape every PMC reader (rocpd, pmc_perf) returns.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from kerneltrace.counters.table import strip_sum
from kerneltrace.errors import InputError, require_all
from kerneltrace.readers.regular import CSV_LIMIT, read_regular

REQUIRED_COLUMNS = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")


@dataclass
class CounterDispatch:
    """Counters of one dispatch of one run. Counter names are stored without the '_sum' suffix."""

    dispatch_id: int
    kernel: str
    counters: dict[str, float] = field(default_factory=dict)
    start_ns: int | None = None
    end_ns: int | None = None
    agent: str | None = None

    @property
    def duration_ns(self) -> int | None:
        if self.start_ns is None or self.end_ns is None or self.end_ns <= self.start_ns:
            return None
        return self.end_ns - self.start_ns


@dataclass
class CounterRun:
    """One application run (one rocprofv3 pass / job, one rocpd guid, one rocprof-compute workload)."""

    source: str  # file or directory as given
    format: str  # "counter_csv" | "rocpd" | "pmc_perf"
    dispatches: list[CounterDispatch]  # in dispatch order within the run
    arch: str | None = None  # gfx target when the run says so
    arch_source: str = ""
    product: str | None = None
    peak_gbps: float | None = None  # a peak shipped with the data (rocprof-compute sysinfo hbm_bw)
    peak_source: str = ""
    notes: list[str] = field(default_factory=list)

    def kernels(self) -> list[str]:
        return sorted({d.kernel for d in self.dispatches})


def parse_number(text: str, where: str, what: str) -> float:
    """float() with a clear InputError for non-numeric or non-finite values."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise InputError(
            f"{what} {text!r} is not a finite number",
            where,
            "re-export the file from rocprofv3; values must be numbers such as 2.000000 or 0.00000000e+00",
        )
    return value


def _optional_int(text: str | None, where: str, what: str) -> int | None:
    if text is None or text.strip() == "":
        return None
    return int(parse_number(text, where, what))


def read_counter_csv(path: Path) -> CounterRun:
    """Read one counter_collection.csv; columns by header name; rows pivoted per dispatch."""
    path = Path(path)
    text = read_regular(path, "counter file", CSV_LIMIT).decode("utf-8", errors="replace")
    if not text.strip():
        raise InputError("empty counter file", str(path), "re-run the PMC capture; the file has no header and no rows")
    reader = csv.DictReader(text.splitlines())
    try:
        header = reader.fieldnames or []
        rows = list(reader)
    except csv.Error as err:
        raise InputError(f"malformed CSV: {err}", str(path), "re-export the file from rocprofv3") from None
    require_all(REQUIRED_COLUMNS, header, "not a rocprofv3 counter_collection.csv (missing columns {missing})",
                str(path), "pass *_counter_collection.csv files, a rocprof-compute workload dir or a rocpd .db")
    by_id: dict[int, CounterDispatch] = {}
    for line_no, row in enumerate(rows, start=2):
        where = f"{path}:{line_no}"
        dispatch_id = _optional_int(row.get("Dispatch_Id"), where, "Dispatch_Id")
        name = (row.get("Counter_Name") or "").strip()
        if dispatch_id is None or not name:
            raise InputError("row without Dispatch_Id or Counter_Name", where, "re-export the file from rocprofv3")
        value = parse_number(row.get("Counter_Value") or "", where, f"Counter_Value of {name}")
        dispatch = by_id.get(dispatch_id)
        if dispatch is None:
            dispatch = CounterDispatch(
                dispatch_id=dispatch_id,
                kernel=row.get("Kernel_Name") or "",
                start_ns=_optional_int(row.get("Start_Timestamp"), where, "Start_Timestamp"),
                end_ns=_optional_int(row.get("End_Timestamp"), where, "End_Timestamp"),
                agent=row.get("Agent_Id"),
            )
            by_id[dispatch_id] = dispatch
        # X and X_sum print the same device total; keep one entry per hardware event.
        dispatch.counters[strip_sum(name)] = value
    if not by_id:
        raise InputError("counter file has a header but no rows", str(path), "check that the kernel filter matched a dispatch")
    run = CounterRun(source=str(path), format="counter_csv", dispatches=[by_id[k] for k in sorted(by_id)])
    _attach_agent_info(run, path)
    return run


def sibling_agent_info(path: Path) -> Path | None:
    """`<prefix>_agent_info.csv` beside `<prefix>_counter_collection.csv` (or any *agent_info.csv there)."""
    name = path.name
    if name.endswith("counter_collection.csv"):
        candidate = path.with_name(name[: -len("counter_collection.csv")] + "agent_info.csv")
        if candidate.is_file():
            return candidate
    others = sorted(path.parent.glob("*agent_info.csv"))
    return others[0] if len(others) == 1 else None


def _attach_agent_info(run: CounterRun, counter_path: Path) -> None:
    from kerneltrace.readers.csvs import gpu_agents, read_agent_info

    info = sibling_agent_info(counter_path)
    if info is None:
        return
    gpus = gpu_agents(read_agent_info(info))
    if not gpus:
        return
    agents = {d.agent for d in run.dispatches if d.agent}
    chosen = next((g for g in gpus if f"Agent {g.logical_node_id}" in agents), gpus[0])
    run.arch = chosen.name or None
    run.arch_source = f"{info.name} Name"
    run.product = chosen.product_name or None


def find_counter_csvs(directory: Path) -> list[Path]:
    """Every *counter_collection.csv under a directory (pass_N/ subdirs included), sorted."""
    found = [p for p in Path(directory).rglob("*counter_collection.csv") if p.is_file()]
    return sorted(found, key=_natural_key)


def _natural_key(path: Path) -> list[object]:
    # pass_2 sorts before pass_10
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def load_pmc_inputs(paths: list[Path]) -> list[CounterRun]:
    """Runs from each input: a counter CSV, a dir of them (pass_N/), a rocprof-compute workload dir or a rocpd .db.

    Every file (and every rocpd guid) is one run; runs are never merged here.
    """
    # Lazy imports: rocpd and pmc_perf import this module for the dataclasses.
    from kerneltrace.readers.pmc_perf import is_workload_dir, read_workload
    from kerneltrace.readers.rocpd import read_rocpd

    runs: list[CounterRun] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError("input not found", str(path), "pass counter CSVs, a rocprof-compute workload dir or a rocpd .db")
        if path.is_dir():
            if is_workload_dir(path):
                runs.append(read_workload(path))
                continue
            found = find_counter_csvs(path)
            databases = sorted(path.glob("*.db"))
            if not found and not databases:
                raise InputError(
                    "directory holds no *counter_collection.csv, pmc_perf.csv or .db",
                    str(path),
                    "point at the PMC output directory (with pass_N/ subdirs) or at the files",
                )
            runs.extend(read_counter_csv(p) for p in found)
            for db in databases:
                runs.extend(read_rocpd(db))
        elif path.suffix in (".db", ".sqlite", ".sqlite3"):
            runs.extend(read_rocpd(path))
        else:
            runs.append(read_counter_csv(path))
    return runs
