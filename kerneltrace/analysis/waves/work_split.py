"""Work split across the traced waves: how many did no work (left at a work-range check)."""

from __future__ import annotations

from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds


def _mean(values: list[int]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def work_split(per_wave: list[tuple], limits: StructureThresholds = DEFAULT_STRUCTURE) -> dict | None:
    """`waves.work_split`: waves whose instruction count is at most `limits.empty_wave_share` of
    the busiest wave's are empty (a persistent or split-K kernel whose work list gave them
    nothing, a decode kernel whose metadata gave their workgroup no range); the rest are busy.

    `per_wave`: the records of accumulate.add_group (file, se, simd, slot, begin, end,
    instructions, *states). None without waves or when the busiest wave runs fewer than
    `limits.empty_wave_min_busy` instructions (a kernel too short to tell work from none)."""
    if not per_wave:
        return None
    counts = [record[6] for record in per_wave]
    durations = [record[5] - record[4] for record in per_wave]
    busiest = max(counts)
    if busiest < limits.empty_wave_min_busy:
        return None
    cut = busiest * limits.empty_wave_share
    empty = [i for i, count in enumerate(counts) if count <= cut]
    busy = [i for i, count in enumerate(counts) if count > cut]
    return {
        "waves": len(counts),
        "empty_waves": len(empty),
        "busy_waves": len(busy),
        "empty_share": round(len(empty) / len(counts), 4),
        "busiest_instructions": busiest,
        "empty_max_instructions": max((counts[i] for i in empty), default=None),
        "empty_mean_cycles": _mean([durations[i] for i in empty]),
        "busy_mean_cycles": _mean([durations[i] for i in busy]),
    }
