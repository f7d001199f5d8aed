"""The one exception type for bad input, and how command-line scripts report it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable

from kerneltrace.records import record
from kerneltrace.safetext import one_line


@record
class InputError(Exception):
    """Bad user input: what is wrong, where, and how to fix it (printed as one line, exit 2)."""

    what: str
    where: str = ""
    fix: str = ""

    def __str__(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(f"fix: {self.fix}")
        return " -- ".join(parts)


def require_all(required: Iterable[str], present: Container[str], what: str, where: str, fix: str) -> None:
    """Raise InputError(what, where, fix) when a required name (column, view) is not present.

    ``what`` names the missing ones through a ``{missing}`` placeholder (comma-separated, in order).
    """
    missing = [name for name in required if name not in present]
    if missing:
        raise InputError(what.format(missing=", ".join(missing)), where, fix)


EXIT_BAD_INPUT = 2


def run_cli(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run a CLI entry point; turn InputError into one stderr line and exit code 2."""
    try:
        return main(argv)
    except InputError as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
