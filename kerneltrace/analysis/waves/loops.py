"""Hot loops observed in the wave files: iterations, cycles, MFMA busy and prologue/loop/epilogue.

A taken branch (decoder category JUMP) to a lower code row is a back edge b → t; a wave enters
the loop when row t runs without coming from that back edge and leaves at the first following
execution of b that does not jump back. Iterations = back jumps + entries. Loops here come from
*observed* jumps in the instruction streams, so no branch immediate is decoded: the static
decoding (simm16 → target) lives only in kerneltrace/analysis/loops.py.

mfma_busy_fraction: per SIMD, Σ MFMA pass cycles issued inside the loop by all its waves divided
by the time at least one of its waves was inside the loop (the SIMD's MFMA pipe is shared);
summed over SIMDs before dividing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kerneltrace.analysis.waves.arrays import sorted_unique
from kerneltrace.analysis.waves.rows import row_ref
from kerneltrace.readers.wavefile.reader import CATEGORY_JUMP

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.analysis.waves.group import Group
    from kerneltrace.readers.codejson import CodeRow, CodeTable

HOT_LOOPS = 5


@dataclass
class LoopTotals:
    """One loop (keyed by its header row) accumulated over the waves that ran it."""

    last_index: int = 0  # highest row that jumps back to the header
    iterations: int = 0  # header executions
    entries: int = 0  # times a wave entered the loop (header reached without a back jump)
    measured_iterations: int = 0  # iterations that jumped back (their length is measured)
    measured_cycles: int = 0  # Σ time from loop entry to the last header execution
    mfma_cycles: int = 0
    waves: int = 0
    prologue: int = 0
    epilogue: int = 0
    wave_cycles: int = 0
    # per SIMD (se, simd): intervals inside the loop and MFMA pass cycles issued there
    simd_intervals: dict[tuple, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    simd_mfma: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))


def mfma_pass_cycles_by_row(table: CodeTable) -> tuple[dict[int, int], list[int]]:
    """({row index: MFMA pass cycles}, MFMA rows whose variant has no sourced latency)."""
    from kerneltrace.isa.classify import MFMA, classify
    from kerneltrace.isa.mfma import mfma_info

    cycles: dict[int, int] = {}
    unknown: list[int] = []
    for row in table.rows:
        if classify(row.asm) != MFMA:
            continue
        info = mfma_info(row.asm)
        if info is None:
            unknown.append(row.index)
        else:
            cycles[row.index] = info.cycles
    return cycles, unknown


def add_group_loops(loops: dict[int, LoopTotals], group: Group, mfma_by_line: np.ndarray) -> None:
    """Add the loops the waves of `group` ran (headers of their taken backward jumps) to `loops`.

    Whole-group passes: a loop instance is a (wave, header row) pair; the executions of its
    header are sorted by (pair, position) and cut into segments at its entries, so that every
    per-wave quantity below is a segment or pair reduction. Only the per-pair totals are
    added to the LoopTotals in Python (one step per loop a wave ran, not per instruction).
    """
    import numpy as np

    time, category, line, owner = group.time, group.category, group.line, group.owner
    n = len(line)
    if n < 2:
        return
    # taken backward jumps inside one wave; their targets are the loop headers
    jumps = np.flatnonzero((category[:-1] == CATEGORY_JUMP) & (line[1:] < line[:-1])
                           & (owner[1:] == owner[:-1]))
    if not len(jumps):
        return
    rows = int(line.max()) + 1
    pair_of_jump = owner[jumps + 1] * rows + line[jumps + 1]
    pairs = sorted_unique(pair_of_jump)
    is_header_row = np.zeros(rows, bool)
    is_header_row[pairs % rows] = True
    # every execution of a header row in a wave where that row is a loop header
    executions = np.flatnonzero(is_header_row[line])
    keys = owner[executions] * rows + line[executions]
    pair = np.searchsorted(pairs, keys)
    pair = np.minimum(pair, len(pairs) - 1)
    mine = pairs[pair] == keys
    executions, pair = executions[mine], pair[mine]  # already sorted by (wave, position)
    order = np.argsort(pair, kind="stable")  # by (pair, position)
    executions, pair = executions[order], pair[order]
    counted = np.bincount(pair, minlength=len(pairs))  # header executions per pair
    first_of_pair = np.ones(len(pair), bool)
    first_of_pair[1:] = pair[1:] != pair[:-1]
    is_target = np.zeros(n, bool)
    is_target[jumps + 1] = True
    # An entry reaches the header other than by a back jump; the wave's first header
    # execution is one too (rotated loops are entered by a jump from a pre-header placed
    # after the body, which looks like a back jump).
    entry = ~is_target[executions] | first_of_pair
    # latches: back jumps whose target is not an entry (not the pair's first execution)
    first_execution = np.full(len(pairs), -1)
    first_execution[pair[first_of_pair]] = executions[first_of_pair]
    jump_pair = np.searchsorted(pairs, pair_of_jump)
    latch = first_execution[jump_pair] != jumps + 1
    has_latch = np.bincount(jump_pair[latch], minlength=len(pairs)) > 0
    last_latch_row = np.full(len(pairs), -1)
    np.maximum.at(last_latch_row, jump_pair[latch], line[jumps[latch]])
    # segments: header executions from one entry up to the next
    segment_start = np.flatnonzero(entry)
    segment_stop = np.append(segment_start[1:], len(executions)) - 1
    segment_pair = pair[segment_start]
    starts, stops = executions[segment_start], executions[segment_stop]
    complete = stops > starts  # segments with at least one jump back
    entries = np.bincount(segment_pair, minlength=len(pairs))
    has_complete = np.bincount(segment_pair[complete], minlength=len(pairs)) > 0
    in_range = line < len(mfma_by_line)
    pass_cycles = np.where(in_range, mfma_by_line[np.where(in_range, line, 0)], 0)
    cumulative_mfma = np.zeros(n + 1, np.int64)
    np.cumsum(pass_cycles, out=cumulative_mfma[1:])
    span = np.where(complete, time[stops] - time[starts], 0)
    mfma = np.where(complete, cumulative_mfma[stops] - cumulative_mfma[starts], 0)
    measured = np.bincount(segment_pair, weights=span, minlength=len(pairs)).astype(np.int64)
    mfma_cycles = np.bincount(segment_pair, weights=mfma, minlength=len(pairs)).astype(np.int64)
    last_execution = np.full(len(pairs), -1)
    np.maximum.at(last_execution, pair, executions)
    wave_of = pairs // rows
    measured_iterations = counted - entries
    per_iteration = measured / np.maximum(measured_iterations, 1)
    loop_end = time[last_execution] + per_iteration
    # int() of the float difference truncates toward zero, as Python's int() does
    epilogue = np.maximum(np.trunc(group.end[wave_of] - loop_end), 0).astype(np.int64)
    prologue = time[first_execution] - group.begin[wave_of]
    valid = np.flatnonzero(has_latch & has_complete)
    waves = group.waves
    # the complete segments of pair p, in position order, are a contiguous run (by pair)
    complete_pair = segment_pair[complete]
    low = np.searchsorted(complete_pair, valid, "left").tolist()
    high = np.searchsorted(complete_pair, valid, "right").tolist()
    interval_starts = time[starts[complete]].tolist()
    interval_stops = time[stops[complete]].tolist()
    for first, last, header, wave, latch_row, iterations, entered, cycles, loop_mfma, before, after in zip(
            low, high, (pairs[valid] % rows).tolist(), wave_of[valid].tolist(),
            last_latch_row[valid].tolist(), counted[valid].tolist(), entries[valid].tolist(),
            measured[valid].tolist(), mfma_cycles[valid].tolist(), prologue[valid].tolist(),
            epilogue[valid].tolist(), strict=True):
        loop = loops[header]
        loop.last_index = max(loop.last_index, latch_row)
        loop.iterations += iterations
        loop.entries += entered
        loop.measured_iterations += iterations - entered
        loop.measured_cycles += cycles
        loop.mfma_cycles += loop_mfma
        loop.waves += 1
        loop.prologue += before
        loop.epilogue += after
        loop.wave_cycles += waves[wave].end - waves[wave].begin
        simd = (waves[wave].se, waves[wave].simd)
        loop.simd_mfma[simd] += loop_mfma
        loop.simd_intervals[simd].extend(zip(interval_starts[first:last],
                                             interval_stops[first:last], strict=True))


def merge_loops(into: dict[int, LoopTotals], other: dict[int, LoopTotals]) -> None:
    """Add the loop totals `other` (other waves) to `into`."""
    for header, loop in other.items():
        merged = into[header]
        merged.last_index = max(merged.last_index, loop.last_index)
        for name in ("iterations", "entries", "measured_iterations", "measured_cycles",
                     "mfma_cycles", "waves", "prologue", "epilogue", "wave_cycles"):
            setattr(merged, name, getattr(merged, name) + getattr(loop, name))
        for simd, intervals in loop.simd_intervals.items():
            merged.simd_intervals[simd].extend(intervals)
        for simd, cycles in loop.simd_mfma.items():
            merged.simd_mfma[simd] += cycles


def union_length(intervals: list[tuple[int, int]]) -> int:
    """Total length covered by the union of [start, end) intervals."""
    covered, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                covered += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        covered += current_end - current_start
    return covered


def loop_summary(loops: dict[int, LoopTotals], rows: dict[int, CodeRow],
                 mfma_unknown: list[int]) -> list[dict]:
    """The `loops` list: up to HOT_LOOPS loops by estimated cycles, with nesting (`contains`)."""
    def estimated_cycles(loop: LoopTotals) -> float:
        return loop.measured_cycles / max(loop.measured_iterations, 1) * loop.iterations

    ranked = sorted(loops.items(), key=lambda item: (-estimated_cycles(item[1]), item[0]))
    result = []
    for first, loop in ranked[:HOT_LOOPS]:
        # MFMAs of unknown pass latency inside the loop make the fraction a guess: report null.
        unknown_inside = [row for row in mfma_unknown if first <= row <= loop.last_index]
        busy_fraction = None
        if not unknown_inside:
            occupied = {simd: union_length(spans) for simd, spans in loop.simd_intervals.items()}
            busy = sum(min(loop.simd_mfma[simd], length) for simd, length in occupied.items())
            total = sum(occupied.values())
            busy_fraction = round(busy / total, 4) if total else None
        loop_cycles = int(round(estimated_cycles(loop)))
        wave_total = max(loop.wave_cycles, 1)
        first_ref, last_ref = row_ref(rows, first), row_ref(rows, loop.last_index)
        result.append({
            "first_index": first, "last_index": loop.last_index,
            "first_source": first_ref["source"], "last_asm": last_ref["asm"],
            "iterations": loop.iterations,
            "iterations_per_wave": round(loop.iterations / loop.waves, 2),
            "entries": loop.entries, "waves": loop.waves,
            "cycles_per_iteration": round(loop.measured_cycles / max(loop.measured_iterations, 1), 2),
            "cycles": loop_cycles,
            "mfma_pass_cycles": None if unknown_inside else loop.mfma_cycles,
            "mfma_unknown_rows": unknown_inside[:10],
            "mfma_busy_fraction": busy_fraction,
            "split": {"prologue_cycles": loop.prologue, "loop_cycles": loop_cycles,
                      "epilogue_cycles": loop.epilogue,
                      "prologue_share": round(loop.prologue / wave_total, 4),
                      "loop_share": round(min(loop_cycles / wave_total, 1.0), 4),
                      "epilogue_share": round(loop.epilogue / wave_total, 4)},
        })
    for outer in result:
        outer["contains"] = [inner["first_index"] for inner in result if inner is not outer
                             and outer["first_index"] <= inner["first_index"]
                             and inner["last_index"] <= outer["last_index"]]
    return result
