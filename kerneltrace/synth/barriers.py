"""Workgroup barriers in simulated waves: waves of one workgroup released together, a planted straggler.

`simulate` runs every wave alone, so its `s_barrier` rows cost a fixed stall. Here the waves of
one workgroup (same SE, slot and wave number, one per SIMD, as on a real CU) are re-timed in
lockstep: each keeps its own gaps, stalls and durations between barriers, and at each barrier
all of them leave together when the last one has arrived (its release, 8 cycles after that
arrival), so a wave that is late before a barrier makes the others wait there — the straggler
the wave analysis must find. `planted` adds stall to one row of the waves of one SIMD (the known
late wave and the known wait that makes it late).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from kerneltrace.synth.categories import CAT_IMMED
from kerneltrace.synth.simulate import STATE_EXEC, STATE_IDLE, STATE_STALL, STATE_WAIT, WaveRecord

BARRIER_COST = 8  # cycles of the last-arriving wave's s_barrier (issue + release)


def _timeline(instructions: list[list[int]], begin: int) -> list[list[int]]:
    segments: list[list[int]] = []

    def add(state: int, cycles: int) -> None:
        if cycles <= 0:
            return
        if segments and segments[-1][0] == state:
            segments[-1][1] += cycles
        else:
            segments.append([state, cycles])

    prev_end = begin
    for time, category, stall, duration, _ in instructions:
        add(STATE_IDLE, time - prev_end)
        add(STATE_WAIT if category == CAT_IMMED else STATE_STALL, stall)
        add(STATE_EXEC, duration - stall)
        prev_end = time + duration
    return segments


def synchronised(waves: Iterable[WaveRecord], barrier_lines: set[int],
                 planted: Mapping[int, tuple[int, int]] | None = None) -> list[WaveRecord]:
    """The waves re-timed so that each workgroup's waves leave every barrier together;
    `planted` {simd: (code row, extra stall cycles per hit)}."""
    planted = planted or {}
    waves = list(waves)
    groups: dict[tuple[int, int, int], list[int]] = {}
    for position, wave in enumerate(waves):
        groups.setdefault((wave.se, wave.slot, wave.wv), []).append(position)
    out: list[WaveRecord | None] = [None] * len(waves)
    for members in groups.values():
        for position, wave in zip(members, _lockstep([waves[p] for p in members], barrier_lines,
                                                     planted), strict=True):
            out[position] = wave
    return [wave for wave in out if wave is not None]


def _lockstep(waves: list[WaveRecord], barrier_lines: set[int],
              planted: Mapping[int, tuple[int, int]]) -> list[WaveRecord]:
    # per wave: (gap before, category, stall, issue cycles, line) of each instruction
    steps = []
    for wave in waves:
        extra_line, extra = planted.get(wave.simd, (None, 0))
        prev_end, rows = wave.begin, []
        for time, category, stall, duration, line in wave.instructions:
            add = extra if line == extra_line else 0
            rows.append((max(time - prev_end, 0), category, stall + add, duration - stall, line))
            prev_end = time + duration
        steps.append(rows)
    cursors = [0] * len(waves)
    clocks = [wave.begin for wave in waves]
    built: list[list[list[int]]] = [[] for _ in waves]
    while any(c < len(s) for c, s in zip(cursors, steps, strict=True)):
        arrivals: dict[int, int] = {}
        for w, rows in enumerate(steps):
            while cursors[w] < len(rows):
                gap, category, stall, issue, line = rows[cursors[w]]
                time = clocks[w] + gap
                if line in barrier_lines:
                    arrivals[w] = time
                    break
                built[w].append([time, category, stall, stall + issue, line])
                clocks[w] = time + stall + issue
                cursors[w] += 1
        if not arrivals:
            break
        release = max(arrivals.values()) + BARRIER_COST
        for w, arrival in arrivals.items():
            gap, category, _, _, line = steps[w][cursors[w]]
            built[w].append([arrival, category, release - arrival - 4, release - arrival, line])
            clocks[w] = release
            cursors[w] += 1
    return [replace(wave, instructions=rows, end=clock, timeline=_timeline(rows, wave.begin))
            for wave, rows, clock in zip(waves, built, clocks, strict=True)]
