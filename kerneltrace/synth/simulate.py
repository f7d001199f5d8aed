"""Deterministic per-wave simulation of a KernelSpec: instruction tuples, state timeline, waitcnt."""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kerneltrace.synth.categories import (
    CAT_FLAT,
    CAT_IMMED,
    CAT_LDS,
    CAT_SMEM,
    CAT_VMEM,
    decoder_category,
)
from kerneltrace.synth.spec import KernelSpec, SynthInstruction

# wave states of timeline[] and wstates<k>.json
STATE_IDLE, STATE_EXEC, STATE_WAIT, STATE_STALL = 1, 2, 3, 4

LABEL_ROWS = 1  # code.json row 0 is the kernel label; instruction i is row i + 1

_WAIT_RE = re.compile(r"(vmcnt|lgkmcnt|expcnt|vscnt)\((\d+)\)")


def memory_counter(asm: str) -> str | None:
    """Which wait counter an instruction increments: "vm", "lgkm" or None."""
    category = decoder_category(asm)
    if category in (CAT_VMEM, CAT_FLAT):
        return "vm"
    if category in (CAT_LDS, CAT_SMEM):
        return "lgkm"
    return None


def wait_thresholds(asm: str) -> dict[str, int]:
    """``s_waitcnt vmcnt(0) lgkmcnt(1)`` → {"vm": 0, "lgkm": 1}."""
    return {name[:-3]: int(value) for name, value in _WAIT_RE.findall(asm)}


@dataclass
class WaveRecord:
    """One simulated wave, ready to be written as ``se<S>_sm<SIMD>_sl<SLOT>_wv<N>.json``."""

    se: int
    simd: int
    slot: int
    wv: int
    cu: int
    wave_id: int
    begin: int
    end: int
    instructions: list[list[int]] = field(default_factory=list)  # [time, cat, stall, dur, line]
    timeline: list[list[int]] = field(default_factory=list)  # [state, duration]
    waitcnt: list[list] = field(default_factory=list)  # [wait_line, [[producer_line, 0], ...]]

    @property
    def filename(self) -> str:
        return f"se{self.se}_sm{self.simd}_sl{self.slot}_wv{self.wv}.json"


def dynamic_order(spec: KernelSpec, exits: bool = False) -> Iterator[tuple[int, bool]]:
    """Executed instruction indexes in program order, with "is the last loop iteration" flag;
    `exits`: the wave takes the spec's exit gate (ExitGate) from its branch to its target."""
    if not exits or spec.exit_gate is None:
        yield from _program_order(spec)
        return
    gate, skipping = spec.exit_gate, False
    for index, last_iteration in _program_order(spec):
        if skipping and index != gate.target:
            continue
        skipping = False
        yield index, last_iteration
        if index == gate.branch:
            skipping = True


def _program_order(spec: KernelSpec) -> Iterator[tuple[int, bool]]:
    count = len(spec.instructions)
    loop = spec.loop
    if loop is None:
        for index in range(count):
            yield index, True
        return
    for index in range(loop.first):
        yield index, True
    for iteration in range(loop.iterations):
        last_iteration = iteration == loop.iterations - 1
        for index in range(loop.first, loop.last + 1):
            yield index, last_iteration
    for index in range(loop.last + 1, count):
        yield index, True


def _branch_taken(spec: KernelSpec, index: int, last_iteration: bool, exits: bool = False) -> bool:
    if spec.exit_gate is not None and index == spec.exit_gate.branch:
        return exits
    loop = spec.loop
    if loop is not None and index == loop.last:
        return not last_iteration  # loop back-edge: taken until the last iteration
    following = spec.instructions[index + 1] if index + 1 < len(spec.instructions) else None
    return following is not None and not following.executed


def _jitter(rng: random.Random, base: int, fraction: int) -> int:
    """Up to base/fraction extra cycles, in multiples of 4 (the gfx9 issue quantum)."""
    if base <= 0:
        return 0
    return 4 * rng.randrange(0, base // (4 * fraction) + 1)


class _Timeline:
    def __init__(self) -> None:
        self.segments: list[list[int]] = []

    def add(self, state: int, cycles: int) -> None:
        if cycles <= 0:
            return
        if self.segments and self.segments[-1][0] == state:
            self.segments[-1][1] += cycles
        else:
            self.segments.append([state, cycles])


def simulate_wave(spec: KernelSpec, se: int, simd: int, slot: int, wv: int, begin: int,
                  rng: random.Random) -> WaveRecord:
    """Run one wave through the spec with an in-order memory completion model."""
    outstanding: dict[str, deque[tuple[int, int]]] = {"vm": deque(), "lgkm": deque()}
    last_completion = {"vm": 0, "lgkm": 0}
    drained: dict[int, list[int]] = {}
    records: list[list[int]] = []
    timeline = _Timeline()
    prev_end = begin
    first = True
    exits = spec.exit_gate is not None and spec.exit_gate.exits(slot, wv)
    for index, last_iteration in dynamic_order(spec, exits):
        ins: SynthInstruction = spec.instructions[index]
        if not ins.executed:
            continue
        line = index + LABEL_ROWS
        if first:
            gap = 32 + 4 * rng.randrange(0, 3)  # wave launch until first issue
            first = False
        else:
            gap = 4 * rng.randrange(1, 6) if rng.random() < 0.15 else 0  # arbiter losses
        time = prev_end + gap
        category = decoder_category(ins.asm, taken=_branch_taken(spec, index, last_iteration, exits))
        if ins.asm.startswith("s_waitcnt"):
            wait_until = time
            producers = drained.setdefault(line, [])
            for counter, threshold in wait_thresholds(ins.asm).items():
                queue = outstanding.get(counter)
                while queue is not None and len(queue) > threshold:
                    completion, producer_line = queue.popleft()
                    wait_until = max(wait_until, completion)
                    if producer_line not in producers:
                        producers.append(producer_line)
            # plus any planted extra stall (e.g. contention the in-order model cannot see)
            stall = wait_until - time + ins.stall_cycles
        else:
            stall = ins.stall_cycles + _jitter(rng, ins.stall_cycles, 4) if ins.stall_cycles else 0
        duration = stall + ins.issue_cycles
        counter = memory_counter(ins.asm)
        if counter is not None:
            completion = time + duration + ins.latency_cycles + _jitter(rng, ins.latency_cycles, 5)
            completion = max(completion, last_completion[counter])  # in-order completion
            last_completion[counter] = completion
            outstanding[counter].append((completion, line))
        records.append([time, category, stall, duration, line])
        timeline.add(STATE_IDLE, gap)
        timeline.add(STATE_WAIT if category == CAT_IMMED else STATE_STALL, stall)
        timeline.add(STATE_EXEC, ins.issue_cycles)
        prev_end = time + duration
    waitcnt = [[wait_line, [[p, 0] for p in producers]]
               for wait_line, producers in sorted(drained.items()) if producers]
    return WaveRecord(se=se, simd=simd, slot=slot, wv=wv, cu=spec.waves.target_cu,
                      wave_id=0, begin=begin, end=prev_end, instructions=records,
                      timeline=timeline.segments, waitcnt=waitcnt)


def simulate(spec: KernelSpec) -> list[WaveRecord]:
    """All traced waves of the spec, deterministic for a given ``spec.seed``."""
    return list(iter_waves(spec))


def iter_waves(spec: KernelSpec) -> Iterator[WaveRecord]:
    """The traced waves one at a time (large specs need not be held in memory).

    Waves on one (SE, SIMD, slot) run back to back (wv0, wv1, …); SIMDs and slots start a few
    cycles apart, like a real dispatch filling the target CU.
    """
    layout = spec.waves
    for se in range(layout.shader_engines):
        for simd in range(layout.simds):
            for slot in range(layout.slots):
                rng = random.Random((spec.seed * 1_000_003) ^ (se * 7919 + simd * 104729 + slot * 31))
                start = spec.start_cycle + 4 * (se * 3 + simd) + 132 * slot + 4 * rng.randrange(0, 8)
                for wv in range(layout.waves_per_slot):
                    wave = simulate_wave(spec, se, simd, slot, wv, start, rng)
                    wave.wave_id = slot + layout.slots * wv
                    next_start = wave.end + 40 + 4 * rng.randrange(0, 10)
                    yield wave
                    start = next_start


@dataclass
class RowTotals:
    """Per code.json row sums (the §8.10 aggregation)."""

    hit: list[int]
    latency: list[int]
    stall: list[int]
    idle: list[int]


    @classmethod
    def zeros(cls, rows: int) -> RowTotals:
        return cls([0] * rows, [0] * rows, [0] * rows, [0] * rows)

    def add_wave(self, wave: WaveRecord) -> None:
        """Accumulate one wave exactly as the decoder does (docs/rocprof-outputs.md §8.10)."""
        prev_end = wave.begin
        for time, _category, stall, duration, line in wave.instructions:
            self.hit[line] += 1
            self.latency[line] += duration
            self.stall[line] += stall
            self.idle[line] += max(time - prev_end, 0)
            prev_end = max(prev_end, time + duration)


def aggregate(waves: Iterable[WaveRecord], rows: int) -> RowTotals:
    """Hit/Latency/Stall/Idle per code.json row over all waves (docs/rocprof-outputs.md §8.10)."""
    totals = RowTotals.zeros(rows)
    for wave in waves:
        totals.add_wave(wave)
    return totals
