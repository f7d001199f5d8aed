"""Numbers of the before/after comparison: safe reads, relative and per-wave deltas, traced waves."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

# Larger than any real count or cycle sum (64-bit counts summed over a code object stay below
# 1e25), small enough that products and ratios of two stay finite floats.
MAX_MAGNITUDE = 1e30


def finite(value: Any) -> float | None:
    """``value`` as a float if it is a number of plausible size, else None (never raises)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond every float
        return None
    return number if math.isfinite(number) and abs(number) <= MAX_MAGNITUDE else None


def num(value: Any) -> float:
    number = finite(value)
    return 0.0 if number is None else number


def relative(before: float, after: float) -> float | None:
    if before == 0:
        return 0.0 if after == 0 else None
    change = (after - before) / before
    return change if math.isfinite(change) else None


def out_of_range(doc: Any, path: str = "") -> Iterator[str]:
    """JSON paths of numbers in ``doc`` that are not finite or beyond MAX_MAGNITUDE."""
    stack = [(path, doc)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend((f"{where}.{key}" if where else str(key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", item) for index, item in enumerate(value))
        elif isinstance(value, int | float) and not isinstance(value, bool) and finite(value) is None:
            yield where


def delta(before: float, after: float, scale_before: float, scale_after: float) -> dict:
    """Raw and per-wave delta of one quantity (scales are traced-wave counts or 1)."""
    before_pw, after_pw = before / scale_before, after / scale_after
    return {
        "before": before,
        "after": after,
        "delta": after - before,
        "relative": relative(before, after),
        "before_per_wave": before_pw,
        "after_per_wave": after_pw,
        "delta_per_wave": after_pw - before_pw,
        "relative_per_wave": relative(before_pw, after_pw),
    }


def traced_waves(doc: Mapping[str, Any]) -> tuple[int | None, str]:
    """Number of traced waves of a hotspot document, and how it was found.

    Prefer the wave analysis (``waves`` object of /2 documents); otherwise the hit count of the
    kernel's first executed instruction: every wave executes the entry instruction exactly once.
    """
    waves = doc.get("waves")
    if isinstance(waves, Mapping):
        for key in ("count", "wave_count", "traced_waves", "n_waves"):
            value = waves.get(key)
            if isinstance(value, int) and value > 0 and finite(value) is not None:
                return value, f"waves.{key}"
    ordered = program_order(doc)
    for instr in ordered:
        hits = instr.get("hits")
        if isinstance(hits, int) and hits > 0 and finite(hits) is not None:
            return hits, "hits of the first executed instruction"
    return None, "unknown (no executed instruction)"


def program_order(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    instrs = doc.get("instructions") or []
    return sorted(instrs, key=lambda item: (item.get("index") is None, item.get("index") or 0))


def mapped_fraction(doc: Mapping[str, Any]) -> float:
    mapping = doc.get("source_mapping")
    if isinstance(mapping, Mapping) and isinstance(mapping.get("mapped_fraction"), int | float):
        return float(mapping["mapped_fraction"])
    instrs = doc.get("instructions") or []
    if not instrs:
        return 0.0
    return sum(1 for item in instrs if item.get("source")) / len(instrs)
