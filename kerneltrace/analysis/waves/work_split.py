"""Work split across the traced waves: how many did no work (left at a work-range check), and their per-row cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from kerneltrace.analysis.waves.accumulate import WaveTotals
    from kerneltrace.readers.codejson import CodeRow


# `work_split.cost_basis` of a document whose rows are the busy waves' (document/busy_view.py)
BUSY_BASIS = "busy waves"


def _mean(values: list[int]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def empty_indices(per_wave: list[tuple], limits: StructureThresholds = DEFAULT_STRUCTURE) -> list[int] | None:
    """Positions in `per_wave` of the empty waves (see `work_split`), None when it cannot tell."""
    if not per_wave:
        return None
    counts = [record[6] for record in per_wave]
    busiest = max(counts)
    if busiest < limits.empty_wave_min_busy:
        return None
    cut = busiest * limits.empty_wave_share
    return [i for i, count in enumerate(counts) if count <= cut]


def work_split(per_wave: list[tuple], limits: StructureThresholds = DEFAULT_STRUCTURE) -> dict | None:
    """`waves.work_split`: waves whose instruction count is at most `limits.empty_wave_share` of
    the busiest wave's are empty (a persistent or split-K kernel whose work list gave them
    nothing, a decode kernel whose metadata gave their workgroup no range); the rest are busy.

    `per_wave`: the records of accumulate.add_group (file, se, simd, slot, begin, end,
    instructions, *states). None without waves or when the busiest wave runs fewer than
    `limits.empty_wave_min_busy` instructions (a kernel too short to tell work from none).
    `busy_max_cycles`: the longest busy wave (the busy waves' critical path)."""
    empty_set = empty_indices(per_wave, limits)
    if empty_set is None:
        return None
    counts = [record[6] for record in per_wave]
    durations = [record[5] - record[4] for record in per_wave]
    empty = set(empty_set)
    busy = [i for i in range(len(counts)) if i not in empty]
    return {
        "waves": len(counts),
        "empty_waves": len(empty),
        "busy_waves": len(busy),
        "empty_share": round(len(empty) / len(counts), 4),
        "busiest_instructions": max(counts),
        "empty_max_instructions": max((counts[i] for i in empty), default=None),
        "empty_mean_cycles": _mean([durations[i] for i in sorted(empty)]),
        "busy_mean_cycles": _mean([durations[i] for i in busy]),
        "busy_max_cycles": max((durations[i] for i in busy), default=None),
    }


def empty_part(paths: list[Path], totals: WaveTotals, mfma_by_line: np.ndarray,
               rows: dict[int, CodeRow]) -> dict:
    """The empty waves' share of the totals: `empty_rows`, their per-row sums (hits, latency,
    stall, idle) from their files `paths`, by the same whole-group pass as the dispatch's
    `totals` (accumulate.add_group), so that the busy waves' figures are exactly code.json −
    these (the invariant code.json = Σ wave files); and the wait attribution of the busy waves
    alone (`busy_waitcnt`, `busy_wait_links`: `totals` − the empty waves'). Empty waves run few
    instructions, so re-reading their files costs little."""
    from kerneltrace.analysis.waves.accumulate import WaveTotals, grow
    from kerneltrace.analysis.waves.stream import stream
    from kerneltrace.analysis.waves.waitcnt import WaitTotals, wait_links, waitcnt_summary

    empty = stream(paths, WaveTotals.empty(totals.rows), mfma_by_line, settle=False)
    grow(empty, totals.rows)
    busy = WaitTotals()
    for key, cycles in totals.waits.cycles.items():
        busy.cycles[key] = cycles - empty.waits.cycles.get(key, 0)
    for key, count in totals.waits.count.items():
        busy.count[key] = count - empty.waits.count.get(key, 0)
    for row, cycles in totals.waits.unattributed.items():
        busy.unattributed[row] = cycles - empty.waits.unattributed.get(row, 0)
    for row, producers in totals.waits.producers.items():
        busy.producers[row] = set(producers)
    stall, hits = totals.stall[:empty.rows] - empty.stall, totals.hits[:empty.rows] - empty.hits
    return {
        "empty_rows": [
            {"index": index, "hits": int(empty.hits[index]),
             "latency_cycles": int(empty.latency[index]), "stall_cycles": int(empty.stall[index]),
             "idle_cycles": int(empty.idle[index])}
            for index in empty.hits.nonzero()[0].tolist()],
        "busy_waitcnt": waitcnt_summary(busy, stall, hits, rows),
        "busy_wait_links": wait_links(busy, stall),
    }
