"""rocprofv3 counter_collection.csv (long format, pass_N layouts) -> one CounterRun per file."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from kerneltrace.counters.table import strip_sum
from kerneltrace.errors import InputError
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun, parse_number
from kerneltrace.readers.frames import CsvSource, floats, integer, integers, read_text, text_frame

REQUIRED_COLUMNS = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")
REEXPORT = "re-export the file from rocprofv3"
VALUE_FIX = "re-export the file from rocprofv3; values must be numbers such as 2.000000 or 0.00000000e+00"


def _optional_int(text: str | None, where: str, what: str) -> int | None:
    if text is None or text.strip() == "":
        return None
    number = integer(text)
    if number is None:
        parse_number(text, where, what)  # raises the not-a-finite-number error
    return number


def read_counter_csv(path: Path) -> CounterRun:
    """Read one counter_collection.csv; columns by header name; rows pivoted per dispatch."""
    source = CsvSource(Path(path), "counter file", REEXPORT)
    text = read_text(source)
    if not text.strip():
        raise InputError("empty counter file", str(path), "re-run the PMC capture; the file has no header and no rows")
    frame = text_frame(source, text, REQUIRED_COLUMNS,
                       "not a rocprofv3 counter_collection.csv (missing columns {missing})",
                       "pass *_counter_collection.csv files, a rocprof-compute workload dir or a rocpd .db")
    if frame.empty:
        raise InputError("counter file has a header but no rows", str(path), "check that the kernel filter matched a dispatch")
    run = CounterRun(source=str(path), format="counter_csv", dispatches=_dispatches(frame, source))
    _attach_agent_info(run, Path(path))
    return run


def _dispatches(frame: pd.DataFrame, source: CsvSource) -> list[CounterDispatch]:
    """One CounterDispatch per Dispatch_Id (ascending): kernel, timestamps and agent from its first
    row; one counter per hardware event (X and X_sum print the same device total), its last value."""
    ids = integers(frame["Dispatch_Id"])
    names = frame["Counter_Name"].str.strip()
    first = (~ids.duplicated() & ids.notna()).to_numpy()
    firsts = frame[first]
    stamps = {col: integers(firsts[col]) for col in ("Start_Timestamp", "End_Timestamp") if col in frame}
    bad_stamps = any(((firsts[col].str.strip() != "") & stamps[col].isna()).any() for col in stamps)
    if ids.isna().any() or (names == "").any() or bad_stamps:
        _raise_first_bad_row(frame, source)
    values = floats(frame["Counter_Value"], source, lambda row: f"Counter_Value of {names[row]}", VALUE_FIX)
    counters = pd.DataFrame({"dispatch": ids, "counter": names.map(strip_sum), "value": values})
    last = counters.groupby(["dispatch", "counter"], sort=False)["value"].last()  # first-seen order

    def column(name: str) -> list:
        return firsts[name].tolist() if name in firsts else [None] * len(firsts)

    by_id = {
        dispatch_id: CounterDispatch(dispatch_id=dispatch_id, kernel=kernel, start_ns=start, end_ns=end, agent=agent)
        for dispatch_id, kernel, start, end, agent in zip(
            ids[first].tolist(), column("Kernel_Name"),
            stamps["Start_Timestamp"].tolist() if "Start_Timestamp" in stamps else [None] * len(firsts),
            stamps["End_Timestamp"].tolist() if "End_Timestamp" in stamps else [None] * len(firsts),
            column("Agent_Id"), strict=True)
    }
    for (dispatch_id, counter), value in zip(last.index, last.tolist(), strict=True):
        by_id[dispatch_id].counters[counter] = value
    return [by_id[key] for key in sorted(by_id)]


def _raise_first_bad_row(frame: pd.DataFrame, source: CsvSource) -> None:
    """The error of the first bad row, checked in the order the rows are read (the slow path of a bad file)."""
    seen: set[int] = set()
    for row, cells in enumerate(frame.to_dict("records")):
        where = source.where(row)
        dispatch_id = _optional_int(cells["Dispatch_Id"], where, "Dispatch_Id")
        name = cells["Counter_Name"].strip()
        if dispatch_id is None or not name:
            raise InputError("row without Dispatch_Id or Counter_Name", where, REEXPORT)
        parse_number(cells["Counter_Value"], where, f"Counter_Value of {name}")
        if dispatch_id not in seen:
            seen.add(dispatch_id)
            _optional_int(cells.get("Start_Timestamp"), where, "Start_Timestamp")
            _optional_int(cells.get("End_Timestamp"), where, "End_Timestamp")


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
