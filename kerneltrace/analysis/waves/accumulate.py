"""Streaming accumulation of wave files: WaveTotals and the whole-group numpy pass over a group.

Per-row sums (hits, latency, stall, idle: the code.json = Σ wave files invariant), per-wave
state records, and the hand-off of each group to the waitcnt attribution and loop analyses.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerneltrace.analysis.waves.group import Group
from kerneltrace.analysis.waves.loops import LoopTotals, add_group_loops, merge_loops
from kerneltrace.analysis.waves.peers import PeerTotals, add_peer_group, merge_peers
from kerneltrace.analysis.waves.stragglers import (
    StragglerTotals,
    add_straggler_group,
    merge_stragglers,
)
from kerneltrace.analysis.waves.waitcnt import WaitTotals, attribute_waits, merge_waits

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.readers.wavefile.record import WaveFile


@dataclass
class WaveTotals:
    """Everything accumulated while streaming the wave files."""

    rows: int  # length of the per-row arrays below
    hits: Any
    latency: Any
    stall: Any
    idle: Any
    files: int = 0
    bytes: int = 0
    layouts: set[str] = field(default_factory=set)
    skipped: list[dict[str, str]] = field(default_factory=list)
    # (file, se, simd, slot, begin, end, instructions, idle, exec, wait, stall) per wave
    per_wave: list[tuple] = field(default_factory=list)
    waits: WaitTotals = field(default_factory=WaitTotals)
    loops: dict[int, LoopTotals] = field(default_factory=lambda: defaultdict(LoopTotals))
    traced_cu: dict[int, int] = field(default_factory=dict)
    peers: PeerTotals | None = None  # pipe busy, non-hidden cost, per-hit, barriers (peers.py)
    stragglers: StragglerTotals | None = None  # barrier events per wave (stragglers.py)

    @classmethod
    def empty(cls, rows: int) -> WaveTotals:
        import numpy as np

        return cls(rows, *(np.zeros(rows, np.int64) for _ in range(4)))


def grow(totals: WaveTotals, size: int) -> None:
    """Extend the per-row arrays to `size` rows (wave files may name rows beyond code.json)."""
    import numpy as np

    if size <= totals.rows:
        return
    for name in ("hits", "latency", "stall", "idle"):
        grown = np.zeros(size, np.int64)
        grown[:totals.rows] = getattr(totals, name)
        setattr(totals, name, grown)
    totals.rows = size


def merge_totals(into: WaveTotals, other: WaveTotals) -> None:
    """Add `other` (the wave files after those of `into`) to `into`.

    Both have their waits flushed and, when present, their peers reduced (stream.py).
    """
    grow(into, other.rows)
    grow(other, into.rows)
    for name in ("hits", "latency", "stall", "idle"):
        getattr(into, name)[:] += getattr(other, name)
    into.files += other.files
    into.bytes += other.bytes
    into.layouts |= other.layouts
    into.skipped.extend(other.skipped)
    into.per_wave.extend(other.per_wave)
    merge_waits(into.waits, other.waits)
    merge_loops(into.loops, other.loops)
    for se, cu in other.traced_cu.items():
        into.traced_cu.setdefault(se, cu)
    if into.peers is not None and other.peers is not None:
        merge_peers(into.peers, other.peers)
    if into.stragglers is not None and other.stragglers is not None:
        merge_stragglers(into.stragglers, other.stragglers)


def implausible_waves(waves: list[WaveFile], code_rows: int) -> dict[int, str]:
    """{position in `waves`: why} for waves whose values the decoder cannot write.

    Every `line` (instructions, waitcnt waits and producers) must name a code.json row
    (0 <= line < code_rows), 0 <= stall <= duration (docs/rocprof-outputs.md §8.9), begin <= end,
    timeline durations >= 0, and issue times must not decrease and lie within [begin, end]
    (true of every instruction of every shared capture). Such a wave would put negative cycles, rows past code.json (a huge
    one allocates per-row arrays that large), stall rates above 1 or negative loop/prologue
    shares into the analyses, so it is skipped and reported like an unreadable file.
    Vectorized over the whole group: the normal case costs a few numpy calls.
    """
    import numpy as np

    reasons: dict[int, str] = {}

    def outside(lines: np.ndarray) -> np.ndarray:
        return (lines < 0) | (lines >= code_rows)

    for arrays in ([wave.waitcnt_lines for wave in waves],
                   [wave.waitcnt_producers[:, 0] for wave in waves]):
        counts = [len(values) for values in arrays]
        if sum(counts):
            bad = outside(np.concatenate(arrays))
            for wave in np.unique(np.repeat(np.arange(len(waves)), counts)[bad]).tolist():
                reasons.setdefault(wave, f"a waitcnt entry names a code row outside code.json "
                                         f"(0..{code_rows - 1})")
    for position, wave in enumerate(waves):
        if wave.end < wave.begin:
            reasons.setdefault(position, f"wave end {wave.end} is before its begin {wave.begin}")
    timeline_counts = [len(wave.timeline) for wave in waves]
    if sum(timeline_counts):
        negative = np.concatenate([wave.timeline[:, 1] for wave in waves]) < 0
        for wave in np.unique(np.repeat(np.arange(len(waves)), timeline_counts)[negative]).tolist():
            reasons.setdefault(wave, "a timeline entry has a negative duration")
    lengths = [len(wave.instructions) for wave in waves]
    if not sum(lengths):
        return reasons
    ins = np.concatenate([wave.instructions for wave in waves])
    time, _, stall, duration, line = ins.T
    owner = np.repeat(np.arange(len(waves)), lengths)
    start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    begins = np.array([wave.begin for wave in waves], np.int64)[owner]
    ends = np.array([wave.end for wave in waves], np.int64)[owner]
    earlier = np.zeros(len(time), bool)
    earlier[1:] = (time[1:] < time[:-1]) & (owner[1:] == owner[:-1])
    checks = (
        (outside(line), f"names a code row outside code.json (0..{code_rows - 1})"),
        (stall < 0, "has a negative stall"),
        (duration < 0, "has a negative duration"),
        (stall > duration, "has a stall above its duration"),
        ((time < begins) | (time > ends), "is issued outside the wave's [begin, end]"),
        (earlier, "is issued before the instruction preceding it"),
    )
    for bad, why in checks:
        for position in np.flatnonzero(bad).tolist():
            wave = int(owner[position])
            if wave not in reasons:
                values = ins[position].tolist()
                reasons[wave] = f"instruction {position - int(start[wave])} {values} {why}"
    return reasons


def plausible(group: Group, code_rows: int) -> bool:
    """True when no wave of the group can be implausible (cheap whole-group bounds).

    The same rules as implausible_waves, checked with a few reductions; only a group that
    fails one of them takes implausible_waves' position-by-position look (its wording).
    """

    if (group.end < group.begin).any():
        return False
    for joined in (group.wait_rows, group.wait_producers):
        if len(joined) and (joined.min() < 0 or joined.max() >= code_rows):
            return False
    if len(group.timeline) and group.timeline[:, 1].min() < 0:
        return False
    if not len(group.line):
        return True
    if group.line.min() < 0 or group.line.max() >= code_rows or group.stall.min() < 0:
        return False
    if group.duration.min() < 0 or (group.stall > group.duration).any():
        return False
    down = group.time[1:] < group.time[:-1]  # compared, not subtracted: no overflow
    # a step down is fine only where the next wave starts
    boundaries = (group.start + group.lengths)[:-1] - 1
    down[boundaries[(boundaries >= 0) & (boundaries < len(down))]] = False
    if down.any():
        return False
    # issue times never decrease within a wave: its first and last bound all of them
    ran = group.lengths > 0
    last = group.start + group.lengths - 1
    return not ((group.time[group.start[ran]] < group.begin[ran]).any()
                or (group.time[last[ran]] > group.end[ran]).any())


def add_group(totals: WaveTotals, waves: list[WaveFile], mfma_by_line: np.ndarray) -> None:
    """Accumulate a group of waves with numpy calls over the whole group (not per wave).

    Thousands of tiny waves (moe_reduce: 4112 waves of ~170 instructions) would otherwise spend
    their time in per-call numpy overhead. Each instruction carries its wave's index `w`, and
    per-wave operations become operations on keys that start with `w`.
    """
    import numpy as np

    if not waves:
        return
    group = Group.of(waves)
    if not plausible(group, totals.rows):
        implausible = implausible_waves(waves, totals.rows)
        for position, why in sorted(implausible.items()):
            totals.files += 1
            totals.bytes += waves[position].nbytes
            totals.skipped.append({"file": waves[position].path.name, "error": f"implausible values: {why}"})
        waves = [wave for position, wave in enumerate(waves) if position not in implausible]
        if not waves:
            return
        group = Group.of(waves)
    for wave in waves:
        totals.files += 1
        totals.bytes += wave.nbytes
        totals.layouts.add(wave.layout)
        if wave.cu is not None and wave.se is not None and len(wave.instructions):
            totals.traced_cu.setdefault(wave.se, wave.cu)
    count = len(waves)
    # Time per state and wave: one bincount over (wave, state) keys.
    states = np.zeros((count, 5), np.int64)
    if len(group.timeline):
        state, cycles = group.timeline.T
        owner = np.repeat(np.arange(count), group.timeline_lengths)
        known = (state >= 0) & (state <= 4)
        if not known.all():  # masked only when needed: the copies cost more than the count
            state, cycles, owner = state[known], cycles[known], owner[known]
        owner *= 5
        owner += state
        states = np.bincount(owner, weights=cycles,
                             minlength=5 * count).astype(np.int64).reshape(count, 5)
    totals.per_wave.extend(
        (wave.path.name, wave.se, wave.simd, wave.slot, wave.begin, wave.end, n_instructions,
         *wave_states)
        for wave, wave_states, n_instructions in zip(waves, states[:, 1:5].tolist(),
                                                     group.lengths.tolist(), strict=True))
    if not len(group.line):
        return
    time, stall, duration, line = group.time, group.stall, group.duration, group.line
    grow(totals, int(line.max()) + 1)
    # The decoder's accumulation (docs/rocprof-outputs.md §8.10): idle = gap after the latest end so
    # far in the wave. A per-wave running max over the group: offset wave w by w * span so
    # that no value of an earlier wave can exceed a later wave's values.
    previous = np.empty_like(time)
    previous[1:] = time[:-1] + duration[:-1]
    ran = group.lengths > 0
    previous[group.start[ran]] = group.begin[ran]
    low = min(int(previous.min()), int(time.min()))
    span = int(max(previous.max(), (time + duration).max())) - low + 1
    offset = group.owner * span
    previous -= low
    previous += offset
    prev_end = np.maximum.accumulate(previous)
    prev_end -= offset
    prev_end += low
    idle = np.maximum(time - prev_end, 0)
    n_rows = totals.rows
    totals.hits += np.bincount(line, minlength=n_rows)
    for name, values in (("latency", duration), ("stall", stall), ("idle", idle)):
        # float64 sums of int64 values are exact below 2**53 cycles per group
        getattr(totals, name)[:] += np.bincount(line, weights=values, minlength=n_rows).astype(np.int64)
    attribute_waits(totals.waits, group)
    if totals.peers is not None:
        add_peer_group(totals.peers, group, idle, prev_end)
    if totals.stragglers is not None:
        add_straggler_group(totals.stragglers, group, idle)
    add_group_loops(totals.loops, group, mfma_by_line)
