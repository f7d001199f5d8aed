"""Work per wave: are two captures comparable per wave, or only per executed instruction (hit)?

A persistent-kernel variant runs several tiles per wave: ~7× the executed instructions (hits) per
wave of the one-tile-per-wave original. Per-wave sums then grow with the work, not with a
slowdown. When hits per traced wave differ by more than `WORK_RATIO` either way, the comparison
is normalised per hit (latency and stall per executed instruction); if the per-hit figures do not
show the change either, the verdict is `not-comparable` instead of a false `regressed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

WORK_RATIO = 1.5  # hits per wave differing by more than this factor: different work per wave


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def work_per_wave(before: Mapping[str, Any], after: Mapping[str, Any],
                  waves_before: int | None, waves_after: int | None,
                  ratio_limit: float = WORK_RATIO) -> dict[str, Any]:
    """The `work_per_wave` object of kerneltrace.compare/1 (docs/compare-json.md)."""
    tb, ta = before.get("totals") or {}, after.get("totals") or {}
    hits_b, hits_a = _num(tb.get("hits")), _num(ta.get("hits"))
    out: dict[str, Any] = {"hits_per_wave_before": None, "hits_per_wave_after": None,
                           "ratio": None, "threshold": ratio_limit, "comparable_per_wave": True,
                           "per_hit": None}
    if not (hits_b and hits_a and waves_before and waves_after):
        return out
    per_wave_b, per_wave_a = hits_b / waves_before, hits_a / waves_after
    ratio = per_wave_a / per_wave_b
    out.update(hits_per_wave_before=round(per_wave_b, 2), hits_per_wave_after=round(per_wave_a, 2),
               ratio=round(ratio, 3),
               comparable_per_wave=1 / ratio_limit <= ratio <= ratio_limit)
    per_hit = {}
    for metric in ("latency_cycles", "stall_cycles"):
        b, a = _num(tb.get(metric)), _num(ta.get(metric))
        if b is not None and a is not None:
            per_hit[metric] = {"before": round(b / hits_b, 2), "after": round(a / hits_a, 2),
                               "relative": round((a / hits_a) / (b / hits_b) - 1, 4) if b else None}
    out["per_hit"] = per_hit
    return out


def verdict_for_work(verdict: str, work: Mapping[str, Any], threshold: float | None
                     ) -> tuple[str, str | None]:
    """(verdict, reason): a per-wave verdict stands unless the work per wave changed; then the
    per-hit latency decides a regression, or the pair is `not-comparable`."""
    if work.get("comparable_per_wave", True) or verdict != "regressed":
        return verdict, None
    latency = ((work.get("per_hit") or {}).get("latency_cycles") or {}).get("relative")
    floor = threshold if threshold is not None else 0.1
    what = (f"hits per wave changed {work['hits_per_wave_before']:g} → "
            f"{work['hits_per_wave_after']:g} (×{work['ratio']:g}): the waves do different work")
    if latency is not None and latency > floor:
        return "regressed", f"{what}; per executed instruction latency still rose {latency:+.1%}"
    return "not-comparable", (f"{what}, so per-wave sums cannot say whether it got slower; per "
                              "executed instruction latency "
                              + (f"changed {latency:+.1%}" if latency is not None else "is unknown")
                              + ": time both kernels end to end instead")
