"""rocprof-compute workload dirs: pmc_perf.csv (wide format) + timestamps.csv + sysinfo.csv -> CounterRun."""

from __future__ import annotations

import csv
from pathlib import Path

from kerneltrace.counters.table import block_of, strip_sum
from kerneltrace.errors import InputError
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun, parse_number
from kerneltrace.readers.regular import CSV_LIMIT, read_regular

PMC_PERF = "pmc_perf.csv"


def is_workload_dir(path: Path) -> bool:
    return Path(path).is_dir() and (Path(path) / PMC_PERF).is_file()


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    text = read_regular(path, PMC_PERF, CSV_LIMIT).decode("utf-8", errors="replace")
    if not text.strip():
        raise InputError("empty file", str(path), "re-run rocprof-compute profile")
    reader = csv.DictReader(text.splitlines())
    try:
        return list(reader.fieldnames or []), list(reader)
    except csv.Error as err:
        raise InputError(f"malformed CSV: {err}", str(path), "re-run rocprof-compute profile") from None


def read_workload(directory: Path) -> CounterRun:
    """One run from a rocprof-compute workload dir; counters of its passes are already merged per dispatch."""
    directory = Path(directory)
    perf = directory / PMC_PERF
    if not perf.is_file():
        raise InputError("no pmc_perf.csv in directory", str(directory), "pass a rocprof-compute workload dir")
    header, rows = _rows(perf)
    for col in ("Dispatch_ID", "Kernel_Name"):
        if col not in header:
            raise InputError(f"pmc_perf.csv has no {col} column", str(perf), "pass an unmodified rocprof-compute workload")
    if not rows:
        raise InputError("pmc_perf.csv has a header but no rows", str(perf), "re-run rocprof-compute profile")
    counter_cols = [col for col in header if block_of(col) is not None and col.split("_", 1)[0].isupper()]
    timestamps = _timestamps(directory)
    dispatches = []
    for line_no, row in enumerate(rows, start=2):
        where = f"{perf}:{line_no}"
        dispatch_id = int(parse_number(row["Dispatch_ID"], where, "Dispatch_ID"))
        dispatch = CounterDispatch(dispatch_id=dispatch_id, kernel=row.get("Kernel_Name") or "",
                                   agent=row.get("GPU_ID"))
        for col in counter_cols:
            text = (row.get(col) or "").strip()
            if text == "":
                continue  # counter not collected for this dispatch: absent, never 0
            dispatch.counters[strip_sum(col)] = parse_number(text, where, col)
        start, end = (row.get("Start_Timestamp") or "").strip(), (row.get("End_Timestamp") or "").strip()
        if start and end:
            dispatch.start_ns = int(parse_number(start, where, "Start_Timestamp"))
            dispatch.end_ns = int(parse_number(end, where, "End_Timestamp"))
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


def _timestamps(directory: Path) -> dict[int, tuple[int, int]]:
    path = directory / "timestamps.csv"
    if not path.is_file():
        return {}
    header, rows = _rows(path)
    if not {"Dispatch_ID", "Start_Timestamp", "End_Timestamp"} <= set(header):
        return {}
    found = {}
    for line_no, row in enumerate(rows, start=2):
        where = f"{path}:{line_no}"
        found[int(parse_number(row["Dispatch_ID"], where, "Dispatch_ID"))] = (
            int(parse_number(row["Start_Timestamp"], where, "Start_Timestamp")),
            int(parse_number(row["End_Timestamp"], where, "End_Timestamp")),
        )
    return found


def _attach_sysinfo(run: CounterRun, path: Path) -> None:
    if not path.is_file():
        return
    _, rows = _rows(path)
    if not rows:
        return
    info = rows[0]
    run.arch = (info.get("gpu_arch") or "").strip() or None
    run.arch_source = "sysinfo.csv gpu_arch"
    run.product = (info.get("gpu_model") or "").strip() or None
    hbm = (info.get("hbm_bw") or "").strip()
    if hbm:
        # rocprof-compute's own per-product peak in GB/s (MI300A: 5324.8, MI200: 1638.4).
        run.peak_gbps = parse_number(hbm, f"{path}:2", "hbm_bw")
        run.peak_source = "sysinfo.csv hbm_bw (rocprof-compute spec)"
