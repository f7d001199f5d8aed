"""The one percentage formatter, for every layer's text (verdicts, L2 lines, compare, renderers)."""

from __future__ import annotations


def percent(fraction: object, digits: int = 1, *, sign: bool = False, width: int = 0,
            missing: str = "n/a", sep: str = "") -> str:
    """A fraction as a percentage: `percent(0.1234)` '12.3%', `digits=0` '12%', `sign=True`
    '+12.3%', `width=5` right-aligned number, `sep=" "` '12.3 %'; not a finite number → `missing`."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or fraction - fraction != 0:
        return missing  # (x - x is nan for nan and ±inf: no "nan%" in any text)
    spec = f"{'+' if sign else ''}{width or ''}.{digits}f"
    return f"{100 * fraction:{spec}}{sep}%"
