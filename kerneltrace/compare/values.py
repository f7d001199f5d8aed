"""Numbers of the before/after comparison: safe reads, relative and per-wave deltas, traced waves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def relative(before: float, after: float) -> float | None:
    if before == 0:
        return 0.0 if after == 0 else None
    return (after - before) / before


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
            if isinstance(value, int) and value > 0:
                return value, f"waves.{key}"
    ordered = program_order(doc)
    for instr in ordered:
        hits = instr.get("hits")
        if isinstance(hits, int) and hits > 0:
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
