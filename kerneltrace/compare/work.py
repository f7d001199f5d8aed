"""Work per wave: are two captures comparable per wave, or only per executed instruction (hit)?

A persistent-kernel variant runs several tiles per wave: ~7× the executed instructions (hits) per
wave of the one-tile-per-wave original. Per-wave sums then grow with the work, not with a
slowdown. The unit of work is the MFMA instruction when both sides run the same MFMA shapes (a
bigger tile doubles a wave's MFMAs with ×1.4 hits), else the executed instruction. When the work
per traced wave differs by more than `compare.work_ratio` either way, the time change comes from
the launch (compare/launch.py: workgroup rounds × wave lifetime), else from the time per unit of
work (compare/estimate.py `by_work_unit`); the figures per unit of work (per executed
instruction, per hot-loop iteration) are listed as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kerneltrace.compare.values import finite as _num
from kerneltrace.thresholds import DEFAULT_COMPARE


def mfma_hits(doc: Mapping[str, Any]) -> dict[str, int]:
    """Executed MFMA instructions per opcode (shape and type) of a hotspot document."""
    counts: dict[str, int] = {}
    for ins in doc.get("instructions") or []:
        asm = ins.get("asm") if isinstance(ins, Mapping) else None
        hits = ins.get("hits") if isinstance(ins, Mapping) else None
        if not isinstance(asm, str) or not isinstance(hits, int) or hits <= 0:
            continue
        op = asm.split(None, 1)[0].lower() if asm.strip() else ""
        if op.startswith(("v_mfma", "v_smfmac")):
            counts[op] = counts.get(op, 0) + hits
    return counts


def work_unit(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, float, float] | None:
    """(unit, work before, work after) summed over the traced waves: the MFMAs when both sides run
    the same MFMA shapes (a matrix kernel's work: the same problem needs the same number of them,
    however it is tiled), else the executed instructions (hits)."""
    mfma_b, mfma_a = mfma_hits(before), mfma_hits(after)
    if mfma_b and mfma_a and set(mfma_b) == set(mfma_a):
        return "MFMA instructions", float(sum(mfma_b.values())), float(sum(mfma_a.values()))
    hits_b = _num((before.get("totals") or {}).get("hits"))
    hits_a = _num((after.get("totals") or {}).get("hits"))
    if hits_b and hits_a:
        return "executed instructions (hits)", hits_b, hits_a
    return None


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
    unit = work_unit(before, after)
    if unit is not None and unit[0] != "executed instructions (hits)":
        # a 128×128 → 256×128 tile doubles each wave's MFMAs with ×1.4 hits: the hits alone
        # would take the two for the same work per wave
        name, work_b, work_a = unit
        unit_ratio = (work_a / waves_after) / (work_b / waves_before)
        out.update(unit=name, work_per_wave_before=round(work_b / waves_before, 2),
                   work_per_wave_after=round(work_a / waves_after, 2), work_ratio=round(unit_ratio, 3))
    else:
        unit_ratio = ratio
        out.update(unit="executed instructions (hits)", work_per_wave_before=round(per_wave_b, 2),
                   work_per_wave_after=round(per_wave_a, 2), work_ratio=round(ratio, 3))
    out.update(hits_per_wave_before=round(per_wave_b, 2), hits_per_wave_after=round(per_wave_a, 2),
               ratio=round(ratio, 3),
               comparable_per_wave=(1 / ratio_limit <= ratio <= ratio_limit
                                    and 1 / ratio_limit <= unit_ratio <= ratio_limit))
    per_hit = {}
    for metric in ("latency_cycles", "stall_cycles"):
        b, a = _num(tb.get(metric)), _num(ta.get(metric))
        if b is not None and a is not None:
            per_hit[metric] = {"before": round(b / hits_b, 2), "after": round(a / hits_a, 2),
                               "relative": round((a / hits_a) / (b / hits_b) - 1, 4) if b else None}
    out["per_hit"] = per_hit
    return out


def different_work(work: Mapping[str, Any]) -> str:
    """'hits per wave changed A → B (×R): the waves do different work' (or the MFMAs per wave)."""
    if work.get("unit") == "MFMA instructions" and work.get("work_ratio") != work.get("ratio"):
        return (f"MFMA instructions per wave changed {work['work_per_wave_before']:g} → "
                f"{work['work_per_wave_after']:g} (×{work['work_ratio']:g}; hits ×{work['ratio']:g}): "
                "the waves do different work")
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
