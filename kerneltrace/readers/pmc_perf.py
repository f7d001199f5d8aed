"""rocprof-compute workload dirs: pmc_perf.csv (wide format) + timestamps.csv + sysinfo.csv -> CounterRun."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kerneltrace.counters.table import block_of, strip_sum
from kerneltrace.errors import InputError
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun, parse_number
from kerneltrace.readers.frames import CsvSource, floats, integers, read_text, text_frame

PMC_PERF = "pmc_perf.csv"
RERUN = "re-run rocprof-compute profile"


def is_workload_dir(path: Path) -> bool:
    return Path(path).is_dir() and (Path(path) / PMC_PERF).is_file()


def _frame(path: Path) -> tuple[CsvSource, pd.DataFrame]:
    source = CsvSource(path, PMC_PERF, RERUN)
    text = read_text(source)
    if not text.strip():
        raise InputError("empty file", str(path), RERUN)
    return source, text_frame(source, text, (), "")


def _whole(column: pd.Series, source: CsvSource, what: str) -> pd.Series:
    """Integer cells (Dispatch_ID, timestamps) as Python ints; the first that is not a number is an InputError."""
    found = integers(column)
    if found.isna().any():
        floats(column[found.isna()], source, what, "re-export the file from rocprofv3; values must be numbers "
               "such as 2.000000 or 0.00000000e+00")
    return found


def read_workload(directory: Path) -> CounterRun:
    """One run from a rocprof-compute workload dir; counters of its passes are already merged per dispatch."""
    directory = Path(directory)
    perf = directory / PMC_PERF
    if not perf.is_file():
        raise InputError("no pmc_perf.csv in directory", str(directory), "pass a rocprof-compute workload dir")
    source, frame = _frame(perf)
    for col in ("Dispatch_ID", "Kernel_Name"):
        if col not in frame:
            raise InputError(f"pmc_perf.csv has no {col} column", str(perf), "pass an unmodified rocprof-compute workload")
    if frame.empty:
        raise InputError("pmc_perf.csv has a header but no rows", str(perf), RERUN)
    ids = _whole(frame["Dispatch_ID"], source, "Dispatch_ID")
    counters: dict[str, dict[int, float]] = {}  # counter -> {row: value} of its collected (non-empty) cells
    for col in frame.columns:
        if block_of(col) is not None and col.split("_", 1)[0].isupper():
            cells = frame[col].str.strip()
            counters[col] = floats(cells[cells != ""], source, col, _VALUE_FIX).to_dict()  # empty: never 0
    stamps = _own_timestamps(frame, source).to_dict("index")
    timestamps = _timestamps(directory)
    agents = frame["GPU_ID"].tolist() if "GPU_ID" in frame else [None] * len(frame)
    dispatches = []
    for row, (dispatch_id, kernel, agent) in enumerate(zip(ids.tolist(), frame["Kernel_Name"].tolist(), agents,
                                                           strict=True)):
        dispatch = CounterDispatch(dispatch_id=dispatch_id, kernel=kernel, agent=agent)
        for col, values in counters.items():
            if row in values:
                dispatch.counters[strip_sum(col)] = float(values[row])
        if row in stamps:
            dispatch.start_ns, dispatch.end_ns = stamps[row]["start"], stamps[row]["end"]
        elif dispatch_id in timestamps:
            dispatch.start_ns, dispatch.end_ns = timestamps[dispatch_id]
        dispatches.append(dispatch)
    dispatches.sort(key=lambda d: d.dispatch_id)
    run = CounterRun(source=str(directory), format="pmc_perf", dispatches=dispatches)
    run.notes.append(
        "rocprof-compute merged its counter passes per dispatch; timestamps are those of one pass"
    )
    _attach_sysinfo(run, directory / "sysinfo.csv")
    return run


_VALUE_FIX = "re-export the file from rocprofv3; values must be numbers such as 2.000000 or 0.00000000e+00"


def _own_timestamps(frame: pd.DataFrame, source: CsvSource) -> pd.DataFrame:
    """Start/End of the rows that carry both (the others take timestamps.csv's)."""
    if "Start_Timestamp" not in frame or "End_Timestamp" not in frame:
        return pd.DataFrame({"start": [], "end": []})
    start, end = frame["Start_Timestamp"].str.strip(), frame["End_Timestamp"].str.strip()
    both = (start != "") & (end != "")
    return pd.DataFrame({"start": _whole(start[both], source, "Start_Timestamp"),
                         "end": _whole(end[both], source, "End_Timestamp")})


def _timestamps(directory: Path) -> dict[int, tuple[int, int]]:
    path = directory / "timestamps.csv"
    if not path.is_file():
        return {}
    source, frame = _frame(path)
    columns = ("Dispatch_ID", "Start_Timestamp", "End_Timestamp")
    if not set(columns) <= set(frame.columns):
        return {}
    ids, starts, ends = (_whole(frame[col], source, col) for col in columns)
    return dict(zip(ids, zip(starts, ends, strict=True), strict=True))


def _attach_sysinfo(run: CounterRun, path: Path) -> None:
    if not path.is_file():
        return
    _, frame = _frame(path)
    if frame.empty:
        return
    info = frame.iloc[0]
    run.arch = (info.get("gpu_arch") or "").strip() or None
    run.arch_source = "sysinfo.csv gpu_arch"
    run.product = (info.get("gpu_model") or "").strip() or None
    hbm = (info.get("hbm_bw") or "").strip()
    if hbm:
        # rocprof-compute's own per-product peak in GB/s (MI300A: 5324.8, MI200: 1638.4).
        run.peak_gbps = parse_number(hbm, f"{path}:2", "hbm_bw")
        run.peak_source = "sysinfo.csv hbm_bw (rocprof-compute spec)"
