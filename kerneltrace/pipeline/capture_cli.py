"""Glue shared by the capture scripts (att_capture.py, pmc_capture.py): common options, record writing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerneltrace import atomic
from kerneltrace.cliargs import number
from kerneltrace.rocprof.capture import CaptureFailed

# called with the common options as keywords (job_path, cmd, ...); returns the capture record
Capture = Callable[..., dict[str, object]]


def add_common_arguments(parser: argparse.ArgumentParser, *, job_help: str, cmd_help: str) -> None:
    """--job, --cmd, --out-dir, --rocprofv3, --timeout, --env, --log."""
    parser.add_argument("--job", type=Path, required=True, help=job_help)
    parser.add_argument("--cmd", required=True, help=cmd_help)
    parser.add_argument("--out-dir", type=Path, required=True, help="final capture folder")
    parser.add_argument("--rocprofv3", default="rocprofv3")
    parser.add_argument("--timeout", type=number("--timeout", minimum=0), default=3600, help="seconds (0 = none)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--log", type=Path, help="log file (default OUT_DIR.log)")


def env_pairs(items: list[str]) -> dict[str, str]:
    """KEY=VALUE strings (repeatable --env) → dict; items without '=' are ignored."""
    return dict(item.split("=", 1) for item in items if "=" in item)


def common_options(args: argparse.Namespace) -> dict[str, Any]:
    """The common options from the command line (see add_common_arguments)."""
    return {"job_path": args.job, "cmd": args.cmd, "rocprofv3": args.rocprofv3, "env_extra": env_pairs(args.env),
            "timeout": args.timeout, "capture_dir": args.out_dir,
            "log_path": args.log or args.out_dir.with_suffix(".log")}


def common_options_from_snakemake(smk: Any) -> dict[str, Any]:
    """The common options from a capture rule (input.job, params, log)."""
    return {"job_path": Path(smk.input.job), "cmd": smk.params.cmd, "rocprofv3": smk.params.rocprofv3,
            "env_extra": dict(smk.params.env), "timeout": float(smk.params.timeout),
            "capture_dir": Path(smk.params.capture_dir), "log_path": Path(smk.log[0])}


def run_from_args(args: argparse.Namespace, capture: Capture, describe: Callable[[dict[str, object]], str]) -> int:
    """Run ``capture(**common options)``; write the record beside OUT_DIR (OUT_DIR.capture.json).

    A failed capture prints one ``error:`` line and returns its exit code (no record is written).
    """
    try:
        record = capture(**common_options(args))
    except CaptureFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code or 1
    atomic.write_json(args.out_dir.with_name(args.out_dir.name + ".capture.json"), record)
    print(describe(record))
    return 0


def run_from_snakemake(snakemake: Any, capture: Capture) -> None:
    """Run ``capture(**common options)`` as a Snakemake job; the record goes to output.record."""
    from kerneltrace.pipeline.smk import run_job

    def job(smk: Any) -> None:
        atomic.write_json(smk.output.record, capture(**common_options_from_snakemake(smk)))

    run_job(snakemake, job)
