"""PMC inputs by kind: counter CSVs (or a dir of them), rocprof-compute workload dirs, rocpd databases -> CounterRuns."""

from __future__ import annotations

from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.counter_csv import find_counter_csvs, read_counter_csv
from kerneltrace.readers.counter_run import CounterRun
from kerneltrace.readers.pmc_perf import is_workload_dir, read_workload
from kerneltrace.readers.rocpd import read_rocpd


def load_pmc_inputs(paths: list[Path]) -> list[CounterRun]:
    """Runs from each input: a counter CSV, a dir of them (pass_N/), a rocprof-compute workload dir or a rocpd .db.

    Every file (and every rocpd guid) is one run; runs are never merged here.
    """
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
