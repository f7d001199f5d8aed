"""Work split across the traced waves: how many did no work (left at a work-range check), and their per-row cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np


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


def empty_rows(paths: list[Path], code_rows: int, mfma_by_line: np.ndarray) -> list[dict]:
    """Per-row sums of the empty waves' files `paths` (hits, latency, stall, idle), by the same
    whole-group pass as the dispatch's totals (accumulate.add_group), so that the busy waves'
    figures are exactly code.json − these (the invariant code.json = Σ wave files). Empty waves
    run few instructions, so re-reading their files costs little."""
    from kerneltrace.analysis.waves.accumulate import WaveTotals
    from kerneltrace.analysis.waves.stream import stream

    totals = stream(paths, WaveTotals.empty(code_rows), mfma_by_line, settle=False)
    return [{"index": index, "hits": int(totals.hits[index]),
             "latency_cycles": int(totals.latency[index]), "stall_cycles": int(totals.stall[index]),
             "idle_cycles": int(totals.idle[index])}
            for index in totals.hits.nonzero()[0].tolist()]
