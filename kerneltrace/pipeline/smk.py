"""Glue for scripts run by Snakemake `script:`: log to the rule log, turn bad input into an exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from kerneltrace.errors import EXIT_BAD_INPUT, InputError
from kerneltrace.rocprof.capture import CaptureFailed


def run_job(snakemake: Any, job: Callable[[Any], None]) -> None:
    """Run ``job(snakemake)`` with stderr going to the rule log; errors → one line + exit code."""
    log_path = snakemake.log[0] if len(snakemake.log) else None
    real_stderr = sys.stderr
    log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
    if log is not None:
        sys.stderr = log
    code = 0
    message = ""
    try:
        job(snakemake)
    except CaptureFailed as err:
        code, message = err.exit_code or 1, str(err)
    except InputError as err:
        code, message = EXIT_BAD_INPUT, str(err)
    finally:
        sys.stderr = real_stderr
        if log is not None:
            if message:
                log.write(f"error: {message}\n")
            log.close()
    if code:
        where = f" (log: {log_path})" if log_path and "log:" not in message else ""
        print(f"error: {message}{where}", file=real_stderr)
        sys.exit(code)
