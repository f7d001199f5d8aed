"""How every script meets Snakemake: a `script:` job runs the script's own ``main(argv)``, logged, with its exit code.

Each script in scripts/ has ``main(argv)`` (its command line) and ``snakemake_argv(smk)`` (the
same command line built from the rule's input/output/params). Its last lines are always::

    if "snakemake" in globals():
        run_rule(snakemake, main, snakemake_argv)
    elif __name__ == "__main__":
        sys.exit(run_cli(main))

so a rule runs exactly the code a user runs by hand (the PyPSA-Eur pattern), and the rule's
``conda:`` environment is the one that runs it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

from kerneltrace.errors import run_cli


class LogSink:
    """A text stream writing to a rule's log file that remembers the last `error:` line."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.last_error = ""

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.startswith("error:"):
                self.last_error = line
        return self.handle.write(text)

    def flush(self) -> None:
        self.handle.flush()


def run_rule(snakemake: Any, main: Callable[[list[str] | None], int],
             snakemake_argv: Callable[[Any], list[str]]) -> None:
    """Run ``main(snakemake_argv(snakemake))`` for a `script:` job.

    stdout and stderr go to the rule's log (log[0]); bad input is one `error:` line there (run_cli)
    and, with the log's path, on the console; a non-zero exit code fails the job.
    """
    argv = [str(arg) for arg in snakemake_argv(snakemake)]
    log_path = snakemake.log[0] if len(snakemake.log) else None
    if log_path is None:
        code = run_cli(main, argv)
        if code:
            sys.exit(code)
        return
    with open(log_path, "a", encoding="utf-8") as log:
        tee = LogSink(log)
        with contextlib.redirect_stdout(tee), contextlib.redirect_stderr(tee):
            code = run_cli(main, argv)
    if code:
        message = tee.last_error or f"error: exit code {code}"
        print(f"{message} (log: {log_path})", file=sys.stderr)
        sys.exit(code)
