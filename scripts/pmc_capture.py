#!/usr/bin/env python3
"""PMC capture of one planned job: `rocprofv3 -i JOB -d DIR -o pmc -- bash -c CMD`, checked and promoted on success."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import os  # noqa: E402

from kerneltrace.errors import run_cli  # noqa: E402
from kerneltrace.pipeline import capture_cli  # noqa: E402
from kerneltrace.rocprof import capture, commands, jobfile  # noqa: E402


def pmc_capture(*, job_path: Path, cmd: str, rocprofv3: str, env_extra: dict[str, str], timeout: float,
                capture_dir: Path, log_path: Path) -> dict:
    """Run one single-pass job; fail when the run fails or a requested counter has no rows."""
    from kerneltrace.counters.table import strip_sum
    from kerneltrace.readers.counter_csv import find_counter_csvs, read_counter_csv

    env = commands.child_env(os.environ, env_extra, debug_info=False)  # no line info needed for PMC
    exe = commands.require_rocprofv3(rocprofv3, env)
    jobs = jobfile.load_jobs(job_path.read_text(encoding="utf-8"), job_path.suffix)
    requested = {strip_sum(name) for job in jobs for name in job.get("pmc", [])}
    tmp = capture.fresh_tmp(capture_dir, "pmc")
    argv = commands.pmc_argv(exe, str(job_path), str(tmp), commands.AppCommand(cmd))
    result = capture.run_in_tmp(tmp, argv, env, log_path, timeout)
    if result.timed_out or result.returncode:
        raise capture.failure_message("PMC capture", result, log_path, timeout)
    files = find_counter_csvs(tmp)
    if not files:
        raise capture.CaptureFailed(f"PMC capture wrote no counter_collection.csv (log: {log_path}); "
                                    "the kernel regex matched no dispatch or the counters are unavailable", 1)
    found = {name for path in files for d in read_counter_csv(path).dispatches for name in d.counters}
    missing = sorted(requested - found)
    if missing:
        # rocprofv3 only warns about unknown counters; a missing counter is an error, never a 0
        raise capture.CaptureFailed(f"counters missing from the output: {', '.join(missing)} (log: {log_path}); "
                                    "check the names with `rocprofv3-avail list --pmc` for this GPU", 1)
    capture.promote(tmp, capture_dir)
    return {"capture_dir": str(capture_dir), "job": str(job_path), "argv": argv,
            "counters": sorted(requested), "files": [str(capture_dir / p.relative_to(tmp)) for p in files]}


def main_from_snakemake(snakemake) -> None:  # noqa: ANN001 - the Snakemake object
    capture_cli.run_from_snakemake(snakemake, pmc_capture)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    capture_cli.add_common_arguments(parser, job_help="job file from pmc_plan.py (one single-pass job)",
                                     cmd_help="benchmark command (one shell string, run by bash -c)")
    args = parser.parse_args(argv)
    return capture_cli.run_from_args(
        args, pmc_capture,
        lambda record: f"captured {len(record['files'])} counter file(s) into {record['capture_dir']}")


if "snakemake" in globals():
    main_from_snakemake(snakemake)  # noqa: F821
elif __name__ == "__main__":
    sys.exit(run_cli(main))
