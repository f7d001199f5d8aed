"""The one exception type for bad input, and how command-line scripts report it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
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


EXIT_BAD_INPUT = 2


def run_cli(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run a CLI entry point; turn InputError into one stderr line and exit code 2."""
    try:
        return main(argv)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
