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

from kerneltrace.analysis.waves.rows import row_ref
from kerneltrace.readers.wavefile.reader import CATEGORY_JUMP

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.readers.codejson import CodeRow, CodeTable
    from kerneltrace.readers.wavefile.reader import WaveFile

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


def add_wave_loops(loops: dict[int, LoopTotals], wave: WaveFile, mfma_by_line: np.ndarray) -> None:
    """Add the loops one wave ran (headers of its taken backward jumps) to `loops`."""
    import numpy as np

    ins = wave.instructions
    time, category, line = ins[:, 0], ins[:, 1], ins[:, 4]
    jumps = np.flatnonzero((category[:-1] == CATEGORY_JUMP) & (line[1:] < line[:-1]))
    if not len(jumps):
        return
    in_range = line < len(mfma_by_line)
    pass_cycles = np.where(in_range, mfma_by_line[np.where(in_range, line, 0)], 0)
    cumulative_mfma = np.concatenate(([0], np.cumsum(pass_cycles)))
    for header in np.unique(line[jumps + 1]).tolist():
        back = jumps[line[jumps + 1] == header]
        headers = np.flatnonzero(line == header)
        # An entry reaches the header other than by a back jump; the wave's first header
        # execution is one too (rotated loops are entered by a jump from a pre-header placed
        # after the body, which looks like a back jump).
        entries = np.union1d(np.setdiff1d(headers, back + 1, assume_unique=True), headers[:1])
        latches = np.setdiff1d(back, entries - 1, assume_unique=True)
        if not len(latches):
            continue  # a jump back to straight-line code (e.g. an outlined block), not a loop
        # Header executions grouped by the entry (segment) they follow.
        segment = np.searchsorted(entries, headers, "right") - 1
        headers, segment = headers[segment >= 0], segment[segment >= 0]
        last_header = np.full(len(entries), -1)
        np.maximum.at(last_header, segment, headers)
        complete = last_header > entries  # segments with at least one jump back
        if not complete.any():
            continue
        starts, stops = entries[complete], last_header[complete]
        loop = loops[header]
        loop.last_index = max(loop.last_index, int(line[latches].max()))
        loop.iterations += len(headers)
        loop.entries += len(entries)
        loop.measured_iterations += len(headers) - len(entries)
        spans = time[stops] - time[starts]
        measured = int(spans.sum())
        loop.measured_cycles += measured
        mfma = int((cumulative_mfma[stops] - cumulative_mfma[starts]).sum())
        loop.mfma_cycles += mfma
        loop.waves += 1
        per_iteration = measured / max(len(headers) - len(entries), 1)
        loop.prologue += int(time[entries[0]]) - wave.begin
        loop_end = int(time[last_header.max()]) + per_iteration
        loop.epilogue += max(int(wave.end - loop_end), 0)
        loop.wave_cycles += wave.end - wave.begin
        simd = (wave.se, wave.simd)
        loop.simd_intervals[simd].extend(zip(time[starts].tolist(), time[stops].tolist(),
                                             strict=True))
        loop.simd_mfma[simd] += mfma


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
