"""The three rocprofv3 runs of the pipeline from their options: kernel discovery, ATT capture, PMC capture."""

from __future__ import annotations

import os
from pathlib import Path

from kerneltrace import atomic
from kerneltrace.errors import InputError
from kerneltrace.rocprof import commands, decoder, discover, jobfile
from kerneltrace.rocprof.capture import (
    CaptureFailed,
    capture_att,
    failure_message,
    fresh_tmp,
    run_discovery,
    run_in_tmp,
)


def discover_stats(*, cmd: str, raw_dir: Path, rocprofv3: str, env_extra: dict[str, str], timeout: float,
                   log_path: Path) -> Path:
    """Run the command once under `rocprofv3 --kernel-trace --stats`; the stats file it wrote."""
    if not cmd:
        raise InputError("no command to profile", "discover_kernels", "give --cmd or --stats")
    env = commands.child_env(os.environ, env_extra)
    exe = commands.require_rocprofv3(rocprofv3, env)
    run_discovery(rocprofv3=exe, app=commands.AppCommand(cmd), env=env, final_dir=raw_dir,
                  log_path=log_path, timeout=timeout)
    stats = discover.find_stats_file(raw_dir)
    if stats is None:
        raise InputError("rocprofv3 wrote no *_kernel_stats.csv nor results.db", str(raw_dir),
                         f"check the log {log_path}; the command may launch no GPU kernel")
    return stats


def preflight_decoder(att_library_path: list[str], env: dict[str, str]) -> str:
    """The decoder library, found before the (expensive) run: rocprofv3 could not decode without it."""
    lookup = decoder.find_decoder(att_library_path, env)
    if lookup.found is None:
        raise InputError(decoder.missing_message(lookup, decoder.rocm_version()), "att_capture",
                         "install the decoder, then re-run (discovery results are kept)")
    return str(lookup.found)


def capture_att_job(*, job_path: Path, job_format: str, cmd: str, rocprofv3: str, env_extra: dict[str, str],
                    att_library_path: list[str], timeout: float, retries: int, capture_dir: Path,
                    log_path: Path) -> dict[str, object]:
    """ATT capture of the one job in ``job_path`` (retried on empty traces); the capture record."""
    env = commands.child_env(os.environ, env_extra)
    exe = commands.require_rocprofv3(rocprofv3, env)
    found = preflight_decoder(att_library_path, env)
    jobs = jobfile.load_jobs(job_path.read_text(encoding="utf-8"), job_path.suffix)
    if len(jobs) != 1:
        raise InputError(f"{len(jobs)} jobs in the ATT job file", str(job_path), "one ATT job per file")
    return capture_att(rocprofv3=exe, job=jobs[0], job_format=job_format, app=commands.AppCommand(cmd),
                       env=env, final_dir=capture_dir, log_path=log_path, timeout=timeout, retries=retries,
                       decoder=found).to_dict()


def capture_pmc(*, job_path: Path, cmd: str, rocprofv3: str, env_extra: dict[str, str], timeout: float,
                capture_dir: Path, log_path: Path) -> dict:
    """Run one single-pass job; fail when the run fails or a requested counter has no rows."""
    from kerneltrace.counters.table import strip_sum
    from kerneltrace.readers.counter_csv import find_counter_csvs, read_counter_csv

    env = commands.child_env(os.environ, env_extra, debug_info=False)  # no line info needed for PMC
    exe = commands.require_rocprofv3(rocprofv3, env)
    jobs = jobfile.load_jobs(job_path.read_text(encoding="utf-8"), job_path.suffix)
    requested = {strip_sum(name) for job in jobs for name in job.get("pmc", [])}
    tmp = fresh_tmp(capture_dir, "pmc")
    argv = commands.pmc_argv(exe, str(job_path), str(tmp), commands.AppCommand(cmd))
    result = run_in_tmp(tmp, argv, env, log_path, timeout)
    if result.timed_out or result.returncode:
        raise failure_message("PMC capture", result, log_path, timeout)
    files = find_counter_csvs(tmp)
    if not files:
        raise CaptureFailed(f"PMC capture wrote no counter_collection.csv (log: {log_path}); "
                                    "the kernel regex matched no dispatch or the counters are unavailable", 1)
    found = {name for path in files for d in read_counter_csv(path).dispatches for name in d.counters}
    missing = sorted(requested - found)
    if missing:
        # rocprofv3 only warns about unknown counters; a missing counter is an error, never a 0
        raise CaptureFailed(f"counters missing from the output: {', '.join(missing)} (log: {log_path}); "
                                    "check the names with `rocprofv3-avail list --pmc` for this GPU", 1)
    atomic.replace_dir(tmp, capture_dir)
    return {"capture_dir": str(capture_dir), "job": str(job_path), "argv": argv,
            "counters": sorted(requested), "files": [str(capture_dir / p.relative_to(tmp)) for p in files]}
