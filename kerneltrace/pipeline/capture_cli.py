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
    """--job, --cmd, --out-dir, --rocprofv3, --timeout, --env, --log, --record."""
    parser.add_argument("--job", type=Path, required=True, help=job_help)
    parser.add_argument("--cmd", required=True, help=cmd_help)
    parser.add_argument("--out-dir", type=Path, required=True, help="final capture folder")
    parser.add_argument("--rocprofv3", default="rocprofv3")
    parser.add_argument("--timeout", type=number("--timeout", minimum=0), default=3600, help="seconds (0 = none)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--log", type=Path, help="log file (default OUT_DIR.log)")
    parser.add_argument("--record", type=Path, help="capture record JSON (default OUT_DIR.capture.json)")


def env_pairs(items: list[str]) -> dict[str, str]:
    """KEY=VALUE strings (repeatable --env) → dict; items without '=' are ignored."""
    return dict(item.split("=", 1) for item in items if "=" in item)


def common_options(args: argparse.Namespace) -> dict[str, Any]:
    """The common options from the command line (see add_common_arguments)."""
    return {"job_path": args.job, "cmd": args.cmd, "rocprofv3": args.rocprofv3, "env_extra": env_pairs(args.env),
            "timeout": args.timeout, "capture_dir": args.out_dir,
            "log_path": args.log or args.out_dir.with_suffix(".log")}


def snakemake_common_argv(smk: Any) -> list[str]:
    """The common options of a capture rule (input.job, params, log, output.record) as a command line."""
    argv = ["--job", smk.input.job, f"--cmd={smk.params.cmd}", "--out-dir", smk.params.capture_dir,
            f"--rocprofv3={smk.params.rocprofv3}", f"--timeout={smk.params.timeout}",
            "--log", smk.log[0], "--record", smk.output.record]
    return argv + [f"--env={key}={value}" for key, value in dict(smk.params.env).items()]


def run_from_args(args: argparse.Namespace, capture: Capture, describe: Callable[[dict[str, object]], str]) -> int:
    """Run ``capture(**common options)``; write the record beside OUT_DIR (OUT_DIR.capture.json).

    A failed capture prints one ``error:`` line and returns its exit code (no record is written).
    """
    try:
        record = capture(**common_options(args))
    except CaptureFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code or 1
    atomic.write_json(args.record or args.out_dir.with_name(args.out_dir.name + ".capture.json"), record)
    print(describe(record))
    return 0
