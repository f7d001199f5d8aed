"""Work per wave: are two captures comparable per wave, or only per executed instruction (hit)?

A persistent-kernel variant runs several tiles per wave: ~7× the executed instructions (hits) per
wave of the one-tile-per-wave original. Per-wave sums then grow with the work, not with a
slowdown. When hits per traced wave differ by more than `compare.work_ratio` either way, the time change
comes from the launch (compare/launch.py: workgroup rounds × wave lifetime); without the launch
facts the verdict is `not-comparable` (never a false `regressed`) and the figures per unit of work
(per executed instruction, per hot-loop iteration) are shown instead of a time change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kerneltrace.compare.values import finite as _num
from kerneltrace.thresholds import DEFAULT_COMPARE


def work_per_wave(before: Mapping[str, Any], after: Mapping[str, Any],
                  waves_before: int | None, waves_after: int | None,
                  ratio_limit: float = DEFAULT_COMPARE.work_ratio) -> dict[str, Any]:
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


def different_work(work: Mapping[str, Any]) -> str:
    """'hits per wave changed A → B (×R): the waves do different work'."""
    return (f"hits per wave changed {work['hits_per_wave_before']:g} → "
            f"{work['hits_per_wave_after']:g} (×{work['ratio']:g}): the waves do different work")


def per_unit_of_work(work: Mapping[str, Any], components: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Figures that do not grow with the work a wave does: per executed instruction (hit) and per
    hot-loop iteration, each ``{unit, before, after, relative}`` (what a not-comparable pair shows
    instead of a time change)."""
    rows = []
    for metric, label in (("latency_cycles", "latency cycles per executed instruction"),
                          ("stall_cycles", "stall cycles per executed instruction")):
        entry = (work.get("per_hit") or {}).get(metric)
        if entry:
            rows.append({"unit": label, "before": entry["before"], "after": entry["after"],
                         "relative": entry["relative"]})
    before, after = (list(components.get("hot_loop_cycles_per_iteration") or [None, None]) + [None])[:2]
    if _num(before) and _num(after) is not None:
        rows.append({"unit": "hot-loop cycles per iteration", "before": before, "after": after,
                     "relative": round(after / before - 1, 4)})
    before, after = (list(components.get("hot_loop_iterations_per_wave") or [None, None]) + [None])[:2]
    if _num(before) and _num(after) is not None:
        rows.append({"unit": "hot-loop iterations per wave", "before": before, "after": after,
                     "relative": round(after / before - 1, 4)})
    if work.get("hits_per_wave_before") and work.get("hits_per_wave_after") is not None:
        rows.append({"unit": "executed instructions (hits) per wave",
                     "before": work["hits_per_wave_before"], "after": work["hits_per_wave_after"],
                     "relative": round(work["ratio"] - 1, 4) if work.get("ratio") else None})
    return rows
