"""argparse value types for numbers: finite and in range, else one InputError line (never NaN/inf)."""

from __future__ import annotations

import math
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
            value = math.nan
        bad = not math.isfinite(value) or (
            minimum is not None and (value <= minimum if exclusive_min else value < minimum)) or (
            maximum is not None and value > maximum)
        if bad:
            raise InputError(f"{option} must be {wanted}, got {text!r}", "command line",
                             f"pass {option} with {wanted}")
        return value

    parse.__name__ = "integer" if integer else "number"
    return parse
