"""Waves resident at once per SIMD and per CU, from the traced waves' lifetimes (the `residency` field).

The occupancy model computes how many waves a SIMD *could* hold; the wave files show how many it
*did*. Per traced CU (one per SE) and SIMD, a sweep over the waves' [begin, end) gives the most
waves alive at once. `refilled` says a wave began on a CU after another wave of that CU had
ended: the CU received more waves than it held at once, so it was full at its peak — the grid
did not run out first (with a short kernel the dispatcher's pace could also explain a refill;
the plan weighs it with the grid when the kernel trace has one).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def _most_at_once(spans: list[tuple[int, int]]) -> int:
    """Most intervals [begin, end) alive at one time (an end frees its slot before an equal begin)."""
    events = sorted([(begin, 1) for begin, _ in spans] + [(end, -1) for _, end in spans])
    alive = best = 0
    for _, step in events:
        alive += step
        best = max(best, alive)
    return best


def residency_summary(per_wave: list[tuple]) -> dict[str, Any] | None:
    """{max_waves_per_simd, max_waves_per_cu, cus, simds, waves_per_cu, refilled} of the traced
    waves (`per_wave` records as accumulate.add_group builds them: file, se, simd, slot, begin,
    end, …); None without waves."""
    if not per_wave:
        return None
    by_simd: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    by_cu: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for record in per_wave:
        _, se, simd, _, begin, end = record[:6]
        by_simd[(se, simd)].append((begin, end))
        by_cu[se].append((begin, end))
    refilled = any(max(begin for begin, _ in spans) >= min(end for _, end in spans)
                   for spans in by_cu.values() if len(spans) > 1)
    return {
        "source": "wave files",
        "max_waves_per_simd": max(_most_at_once(spans) for spans in by_simd.values()),
        "max_waves_per_cu": max(_most_at_once(spans) for spans in by_cu.values()),
        "cus": len(by_cu),
        "simds": len(by_simd),
        "waves_per_cu": round(len(per_wave) / len(by_cu), 3),
        "refilled": refilled,
    }
