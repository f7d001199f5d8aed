"""The whole-group wave passes give what the per-wave definitions give, on random wave groups.

The references below are the straightforward per-wave formulations (the code the whole-group
passes replaced), kept here as test oracles: loops found wave by wave, waitcnt attribution by a
scan back from each wait, implausibility position by position. Random groups (fixed seeds) have
nested, rotated and fake loops (backward jumps into straight-line code), empty waves, empty and
duplicated producer lists and producers that are their own wait row.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from kerneltrace.analysis.waves.accumulate import implausible_waves, plausible
from kerneltrace.analysis.waves.arrays import sorted_unique
from kerneltrace.analysis.waves.group import Group
from kerneltrace.analysis.waves.loops import LoopTotals, add_group_loops
from kerneltrace.analysis.waves.waitcnt import WaitTotals, attribute_waits, flush_waits
from kerneltrace.readers.wavefile.reader import CATEGORY_JUMP
from kerneltrace.readers.wavefile.record import WaveFile

ROWS = 40


def random_wave(rng: np.random.Generator, index: int) -> WaveFile:
    """One wave whose control flow runs random loops over ROWS code rows."""
    loops = {}  # latch -> header
    for _ in range(rng.integers(0, 4)):
        header = int(rng.integers(0, ROWS - 2))
        loops[int(rng.integers(header, ROWS - 1))] = header
    counters: dict[int, int] = {}
    lines, categories = [], []
    line = int(rng.integers(0, 3))
    while line < ROWS and len(lines) < 400:
        lines.append(line)
        if line in loops:
            left = counters.setdefault(line, int(rng.integers(0, 5)))
            if left > 0:
                counters[line] = left - 1
                categories.append(CATEGORY_JUMP)
                line = loops[line]
                continue
            counters.pop(line)
        roll = rng.random()
        if roll < 0.04:  # a jump back into straight-line code, or a rotated loop's entry
            categories.append(CATEGORY_JUMP)
            line = int(rng.integers(0, line + 1))
        elif roll < 0.08:
            categories.append(CATEGORY_JUMP)
            line = int(rng.integers(line + 1, ROWS + 1))
        else:
            categories.append(int(rng.choice([0, 1, 2, 3, 5, 6, 8, 9])))
            line += 1
    if rng.random() < 0.1:
        lines, categories = [], []
    n = len(lines)
    begin = int(rng.integers(0, 1000))
    stall = rng.integers(0, 60, n)
    duration = stall + rng.integers(0, 80, n)
    time = begin + np.cumsum(rng.integers(0, 90, n))
    instructions = np.stack([time, np.array(categories, np.int64), stall, duration,
                             np.array(lines, np.int64)], axis=1).astype(np.int64).reshape(-1, 5)
    end = int(time.max(initial=begin)) + int(rng.integers(0, 500))
    entries = int(rng.integers(0, 6))
    wait_lines = rng.integers(0, ROWS, entries)
    counts = rng.integers(0, 4, entries)
    producers = rng.integers(0, ROWS, int(counts.sum()))
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return WaveFile(path=Path(f"se0_sm{index % 4}_sl0_wv{index}.json"), layout="v3", se=index % 2,
                    simd=index % 4, slot=0, wave_id=index, cu=1, begin=begin, end=end,
                    instructions=instructions, timeline=np.zeros((0, 2), np.int64),
                    waitcnt_lines=wait_lines.astype(np.int64), waitcnt_offsets=offsets,
                    waitcnt_producers=np.stack([producers, np.zeros_like(producers)], axis=1),
                    nbytes=100, parser="json")


def reference_wave_loops(loops: dict[int, LoopTotals], wave: WaveFile, mfma_by_line: np.ndarray) -> None:
    """Loops of one wave, wave by wave (the definitions of waves/loops.py)."""
    ins = wave.instructions
    time, category, line = ins[:, 0], ins[:, 1], ins[:, 4]
    jumps = np.flatnonzero((category[:-1] == CATEGORY_JUMP) & (line[1:] < line[:-1]))
    if not len(jumps):
        return
    cumulative_mfma = np.concatenate(([0], np.cumsum(mfma_by_line[line])))
    for header in np.unique(line[jumps + 1]).tolist():
        back = jumps[line[jumps + 1] == header]
        headers = np.flatnonzero(line == header)
        entries = np.union1d(np.setdiff1d(headers, back + 1, assume_unique=True), headers[:1])
        latches = np.setdiff1d(back, entries - 1, assume_unique=True)
        if not len(latches):
            continue
        segment = np.searchsorted(entries, headers, "right") - 1
        last_header = np.full(len(entries), -1)
        np.maximum.at(last_header, segment, headers)
        complete = last_header > entries
        if not complete.any():
            continue
        starts, stops = entries[complete], last_header[complete]
        loop = loops[header]
        loop.last_index = max(loop.last_index, int(line[latches].max()))
        loop.iterations += len(headers)
        loop.entries += len(entries)
        loop.measured_iterations += len(headers) - len(entries)
        measured = int((time[stops] - time[starts]).sum())
        loop.measured_cycles += measured
        mfma = int((cumulative_mfma[stops] - cumulative_mfma[starts]).sum())
        loop.mfma_cycles += mfma
        loop.waves += 1
        per_iteration = measured / max(len(headers) - len(entries), 1)
        loop.prologue += int(time[entries[0]]) - wave.begin
        loop.epilogue += max(int(wave.end - (int(time[last_header.max()]) + per_iteration)), 0)
        loop.wave_cycles += wave.end - wave.begin
        simd = (wave.se, wave.simd)
        loop.simd_intervals[simd].extend(zip(time[starts].tolist(), time[stops].tolist(), strict=True))
        loop.simd_mfma[simd] += mfma


def reference_waits(waves: list[WaveFile]) -> tuple[dict, dict, dict, dict]:
    """Each stalled execution of a listed wait row, scanned back for its youngest producer."""
    cycles: dict = defaultdict(int)
    count: dict = defaultdict(int)
    unattributed: dict = defaultdict(int)
    producers: dict = defaultdict(set)
    for wave in waves:
        listed: dict[int, list[int]] = {}
        for entry, wait_row in enumerate(wave.waitcnt_lines.tolist()):
            rows = wave.waitcnt_producers[wave.waitcnt_offsets[entry]:wave.waitcnt_offsets[entry + 1], 0]
            for producer in rows.tolist():
                producers[wait_row].add(producer)
                listed.setdefault(wait_row, [])
                if producer not in listed[wait_row]:
                    listed[wait_row].append(producer)
        lines = wave.instructions[:, 4].tolist()
        stalls = wave.instructions[:, 2].tolist()
        for position, (row, stall) in enumerate(zip(lines, stalls, strict=True)):
            if stall <= 0 or row not in listed:
                continue
            last_issue = {}
            for earlier in range(position):
                if lines[earlier] in listed[row]:
                    last_issue[lines[earlier]] = earlier
            if not last_issue:
                unattributed[row] += stall
                continue
            youngest = max(last_issue.values())
            winner = min(p for p, at in last_issue.items() if at == youngest)
            cycles[(row, winner)] += stall
            count[(row, winner)] += 1
    return cycles, count, unattributed, producers


@pytest.mark.parametrize("seed", range(40))
def test_group_loops_match_the_per_wave_definition(seed):
    rng = np.random.default_rng(seed)
    waves = [random_wave(rng, index) for index in range(int(rng.integers(1, 12)))]
    mfma_by_line = np.where(rng.random(ROWS) < 0.3, rng.integers(4, 64, ROWS), 0).astype(np.int64)
    expected: dict[int, LoopTotals] = defaultdict(LoopTotals)
    for wave in waves:
        reference_wave_loops(expected, wave, mfma_by_line)
    found: dict[int, LoopTotals] = defaultdict(LoopTotals)
    add_group_loops(found, Group.of(waves), mfma_by_line)
    assert sorted(found) == sorted(expected)
    for header, loop in expected.items():
        got = found[header]
        for name in ("last_index", "iterations", "entries", "measured_iterations",
                     "measured_cycles", "mfma_cycles", "waves", "prologue", "epilogue", "wave_cycles"):
            assert getattr(got, name) == getattr(loop, name), (header, name)
        assert dict(got.simd_mfma) == dict(loop.simd_mfma)
        assert {k: sorted(v) for k, v in got.simd_intervals.items()} == \
               {k: sorted(v) for k, v in loop.simd_intervals.items()}


def test_random_groups_do_have_loops():
    """The generator is not vacuous: most groups run loops, some with several entries."""
    with_loops = entered_twice = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        waves = [random_wave(rng, index) for index in range(int(rng.integers(1, 12)))]
        found: dict[int, LoopTotals] = defaultdict(LoopTotals)
        add_group_loops(found, Group.of(waves), np.zeros(ROWS, np.int64))
        with_loops += bool(found)
        entered_twice += any(loop.entries > loop.waves for loop in found.values())
    assert with_loops >= 30 and entered_twice >= 5


@pytest.mark.parametrize("seed", range(40))
def test_group_waitcnt_attribution_matches_a_scan_back(seed):
    rng = np.random.default_rng(1000 + seed)
    waves = [random_wave(rng, index) for index in range(int(rng.integers(1, 12)))]
    totals = WaitTotals()
    attribute_waits(totals, Group.of(waves))
    flush_waits(totals)
    cycles, count, unattributed, producers = reference_waits(waves)
    assert {k: v for k, v in totals.cycles.items()} == dict(cycles)
    assert {k: v for k, v in totals.count.items()} == dict(count)
    assert {k: v for k, v in totals.unattributed.items() if v} == {k: v for k, v in unattributed.items() if v}
    assert {k: v for k, v in totals.producers.items()} == dict(producers)


def corrupt(rng: np.random.Generator, wave: WaveFile) -> WaveFile:
    """The wave with one value the decoder cannot write (or, sometimes, unchanged)."""
    ins = wave.instructions.copy()
    fields = {"instructions": ins}
    kind = int(rng.integers(0, 10))
    n = len(ins)
    at = int(rng.integers(0, n)) if n else 0
    if kind == 0 and n:
        ins[at, 4] = ROWS + int(rng.integers(0, 3))
    elif kind == 1 and n:
        ins[at, 4] = -1
    elif kind == 2 and n:
        ins[at, 2] = -int(rng.integers(1, 5))
    elif kind == 3 and n:
        ins[at, 2] = ins[at, 3] + 1
    elif kind == 4 and n:
        ins[at, 3] = -1
        ins[at, 2] = min(ins[at, 2], -1)
    elif kind == 5 and n > 1:
        ins[at, 0] = ins[max(at - 1, 0), 0] - 1 if at else ins[1, 0] + 1
    elif kind == 6 and n:
        ins[at, 0] = wave.end + 1
    elif kind == 7:
        fields = {"begin": wave.end + 1}
    elif kind == 8:
        fields = {"timeline": np.array([[2, 5], [3, -1]], np.int64)}
    elif kind == 9 and len(wave.waitcnt_lines):
        lines = wave.waitcnt_lines.copy()
        lines[0] = ROWS
        fields = {"waitcnt_lines": lines}
    values = {name: getattr(wave, name) for name in type(wave).__record_fields__}
    return type(wave)(**{**values, **fields})


@pytest.mark.parametrize("seed", range(60))
def test_plausible_is_exactly_no_implausible_wave(seed):
    rng = np.random.default_rng(2000 + seed)
    waves = [random_wave(rng, index) for index in range(int(rng.integers(1, 8)))]
    victim = int(rng.integers(0, len(waves)))
    waves[victim] = corrupt(rng, waves[victim])
    assert plausible(Group.of(waves), ROWS) == (not implausible_waves(waves, ROWS))


def test_sorted_unique_is_np_unique():
    rng = np.random.default_rng(7)
    for size in (0, 1, 2, 50, 1000):
        values = rng.integers(-5, 20, size)
        assert np.array_equal(sorted_unique(values), np.unique(values))
