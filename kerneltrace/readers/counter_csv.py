"""rocprofv3 counter_collection.csv (long format, pass_N layouts) -> one CounterRun per file."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from kerneltrace.counters.table import strip_sum
from kerneltrace.errors import InputError, require_all
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun, parse_number
from kerneltrace.readers.regular import CSV_LIMIT, read_regular

REQUIRED_COLUMNS = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")


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
