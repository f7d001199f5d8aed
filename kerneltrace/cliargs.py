"""argparse value types: numbers finite and in range (never NaN/inf), JSON objects; else one InputError line."""

from __future__ import annotations

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
