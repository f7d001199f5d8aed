"""argparse value types: numbers finite and in range (never NaN/inf), JSON objects; else one InputError line. And a help formatter that asks the terminal width only when it formats text."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kerneltrace.errors import InputError


def _range_text(minimum: float | None, maximum: float | None, exclusive_min: bool) -> str:
    low = "" if minimum is None else f"{'>' if exclusive_min else '>='} {minimum:g}"
    high = "" if maximum is None else f"<= {maximum:g}"
    return " and ".join(part for part in (low, high) if part)


def number(option: str, *, minimum: float | None = None, maximum: float | None = None,
           exclusive_min: bool = False, integer: bool = False) -> Callable[[str], float | int]:
    """A ``type=`` for ``option``: parses a finite number in [minimum, maximum] (or (minimum, ...])."""
    wanted = ("an integer" if integer else "a finite number") + (
        f" {_range_text(minimum, maximum, exclusive_min)}" if minimum is not None or maximum is not None else "")

    def parse(text: str) -> float | int:
        try:
            value: float | int = int(text, 10) if integer else float(text)
        except ValueError:
            value = float("nan")
        bad = value - value != 0 or (  # NaN or ±inf (inf - inf is NaN); an int is finite
            minimum is not None and (value <= minimum if exclusive_min else value < minimum)) or (
            maximum is not None and value > maximum)
        if bad:
            raise InputError(f"{option} must be {wanted}, got {text!r}", "command line",
                             f"pass {option} with {wanted}")
        return value

    parse.__name__ = "integer" if integer else "number"
    return parse


def json_object(option: str, example: str) -> Callable[[str], dict]:
    """A ``type=`` for ``option``: a JSON object (e.g. thresholds overrides, `example` in the fix)."""

    def parse(text: str) -> dict:
        import json  # off the start-up path of CLIs that are not given the option

        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"{option} is not JSON ({err.msg})", "command line",
                             f"give e.g. '{example}'") from None
        if not isinstance(value, dict):
            raise InputError(f"{option} must be a JSON object", "command line",
                             f"give e.g. '{example}'")
        return value

    parse.__name__ = "JSON object"
    return parse


class LazyWidthHelpFormatter(argparse.HelpFormatter):
    """argparse.HelpFormatter, the terminal width (and the help column it bounds) found only when
    help or usage text is formatted.

    argparse builds a formatter for every add_argument (to check the metavar) and the stock one
    asks shutil.get_terminal_size() at once: `import shutil` pulls in zlib, bz2, lzma and fnmatch
    (≈ 2 ms of every CLI run that never prints help). The width is computed as the stock
    formatter computes it (shutil's columns - 2), so help and usage read the same."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        self._asked = (indent_increment, max_help_position, width)
        self._sizes: tuple[int, int] | None = None
        super().__init__(prog, indent_increment, max_help_position, width=80 if width is None else width)

    def _sized(self) -> tuple[int, int]:
        if self._sizes is None:
            indent_increment, max_help_position, width = self._asked
            if width is None:
                import shutil

                width = shutil.get_terminal_size().columns - 2
            self._sizes = (width, min(max_help_position, max(width - 20, indent_increment * 2)))
        return self._sizes

    # HelpFormatter.__init__ assigns both; the values it assigns are replaced by the lazy ones
    _width = property(lambda self: self._sized()[0], lambda self, value: None)
    _max_help_position = property(lambda self: self._sized()[1], lambda self, value: None)
