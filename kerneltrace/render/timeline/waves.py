"""Track events of one group of waves: wave and state slices, instructions, flows, barriers, loops.

States are the decoder's wave timeline (`timeline` = [state, cycles] from `begin`, the states of
kerneltrace/analysis/waves/states.py: idle, exec, wait, stall; `empty` kept as written), clipped
to the wave's lifetime; time the timeline does not reach is one "untraced" slice, so the state
slices of a wave tile its lifetime. Each state slice names the last instruction issued at or
before its start (index, asm, source, stall). Flows join the youngest drained producer of each
stalled wait to that wait (kerneltrace/analysis/waves/waitcnt.py), when both are shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kerneltrace.analysis.waves.waitcnt import wait_matches
from kerneltrace.readers.wavefile.reader import STATE_NAMES
from kerneltrace.render.timeline.events import INSTANT, Arg, Events, Names, Unmerged, slices

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.analysis.waves.group import Group
    from kerneltrace.render.timeline.clock import Clock
    from kerneltrace.render.timeline.tracks import TrackRegistry

WAVE_KEY_BITS = 22  # keys of one wave's events: wave index << 22 + local order
UNTRACED = "untraced"


@dataclass
class Rows:
    """Per code row: interned strings, and what is drawn for it."""

    asm: np.ndarray  # Names.values id of the asm text
    source: np.ndarray  # Names.values id of the source location
    opcode: np.ndarray  # Names.events id of the opcode (instruction slice names)
    shown: np.ndarray  # bool: its executions become instruction slices
    barrier: np.ndarray  # bool: s_barrier rows (arrivals marked)
    loop: tuple[int, int] | None  # hot loop [first, last] rows, None: none


@dataclass
class Counts:
    """What was written and what was left out, for the metadata."""

    waves: int = 0
    state_slices: int = 0
    instruction_slices: int = 0
    flows: int = 0
    flows_not_shown: int = 0  # attributed waits whose load or wait row is not shown
    flows_shared_load: int = 0  # a load drained by several waits: one arrow kept
    barrier_arrivals: int = 0
    loop_iterations: int = 0
    untraced_slices: int = 0
    skipped_waves: list[dict] = field(default_factory=list)


@dataclass
class Context:
    clock: Clock
    names: Names
    tracks: TrackRegistry
    rows: Rows
    counts: Counts = field(default_factory=Counts)
    next_wave: int = 0
    next_flow: int = 1


def _instruction_args(rows: Rows, line, stall, present=None) -> list[Arg]:
    return [Arg("index", "int", line, present), Arg("asm", "str", rows.asm[line], present),
            Arg("source", "str", rows.source[line], present), Arg("stall", "int", stall, present)]


def group_events(group: Group, ctx: Context) -> Unmerged:
    """Every event of the group's waves (the group passed accumulate.plausible), as parts with
    their keys (events.merge orders them)."""
    import numpy as np

    names, rows, clock = ctx.names, ctx.rows, ctx.clock
    waves = group.waves
    count = len(waves)
    wave_index = ctx.next_wave + np.arange(count, dtype=np.int64)
    ctx.next_wave += count
    ctx.counts.waves += count
    wave_key = wave_index << WAVE_KEY_BITS
    last_key = (1 << WAVE_KEY_BITS) - 2
    track = np.array([ctx.tracks.thread(w.se, w.cu, w.simd, w.slot, 0) for w in waves], np.int64)
    begin_ns, end_ns = clock.ns(group.begin), clock.ns(group.end)
    parts = []

    # states per wave (raw sums, as states.py counts them) for the wave slice's args
    tl_owner = np.repeat(np.arange(count), group.timeline_lengths)
    state, cycles = (group.timeline[:, 0], group.timeline[:, 1]) if len(group.timeline) else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))
    known = (state >= 1) & (state <= 4)
    per_state = np.bincount(tl_owner[known] * 5 + state[known], weights=cycles[known],
                            minlength=5 * count).astype(np.int64).reshape(count, 5)
    file_ids = np.array([names.values.id(w.path.name) for w in waves], np.int64)
    wave_args = [Arg("wave", "int", np.array([w.wave_id for w in waves], np.int64)),
                 Arg("file", "str", file_ids),
                 Arg("simd", "int", np.array([w.simd for w in waves], np.int64)),
                 Arg("slot", "int", np.array([w.slot for w in waves], np.int64)),
                 Arg("instructions", "int", group.lengths),
                 Arg("cycles", "int", group.end - group.begin),
                 *(Arg(f"{STATE_NAMES[k]}_cycles", "int", per_state[:, k]) for k in range(1, 5))]
    (wave_begins, wave_begin_keys), (wave_ends, _) = slices(
        begin_ns, end_ns, track, np.full(count, names.events.id("wave")), wave_key, wave_args)
    parts += [(wave_begins, wave_begin_keys),
              (wave_ends, wave_key + last_key + 1)]  # END after every child

    # state slices tiling each wave's lifetime
    tl_start = np.zeros(count, np.int64)
    np.cumsum(group.timeline_lengths[:-1], out=tl_start[1:])
    running = np.cumsum(cycles)
    before = np.concatenate(([0], running))[tl_start[tl_owner]]
    start_c = group.begin[tl_owner] + running - cycles - before
    stop_c = start_c + cycles
    start_c = np.minimum(start_c, group.end[tl_owner])
    stop_c = np.minimum(stop_c, group.end[tl_owner])
    local = np.arange(len(state)) - tl_start[tl_owner]
    covered = np.full(count, -1, np.int64)  # end cycle the timeline reaches per wave
    if len(stop_c):
        np.maximum.at(covered, tl_owner, stop_c)
    covered = np.where(covered < 0, group.begin, covered)
    gap = np.flatnonzero(covered < group.end)
    ctx.counts.untraced_slices += len(gap)
    state_names = np.array([names.events.id(STATE_NAMES.get(k, f"state {k}")) for k in range(5)]
                           + [names.events.id(UNTRACED)], np.int64)
    s_owner = np.concatenate([tl_owner, gap])
    s_start = np.concatenate([start_c, covered[gap]])
    s_stop = np.concatenate([stop_c, group.end[gap]])
    s_name = np.concatenate([state_names[np.where((state >= 0) & (state <= 4), state, 5)],
                             np.full(len(gap), state_names[5])]).astype(np.int64)
    s_local = np.concatenate([local, group.timeline_lengths[gap]])
    s_begin_ns, s_end_ns = clock.ns(s_start), clock.ns(s_stop)
    keep = s_end_ns > s_begin_ns  # zero-length states cover no time once in ns
    s_owner, s_start, s_stop, s_name, s_local = (a[keep] for a in
                                                 (s_owner, s_start, s_stop, s_name, s_local))
    s_begin_ns, s_end_ns = s_begin_ns[keep], s_end_ns[keep]
    ctx.counts.state_slices += len(s_owner)
    # the last instruction issued at or before each state slice's start, in the same wave
    time, line, stall = group.time, group.line, group.stall
    n = len(line)
    state_args = [Arg("cycles", "int", s_stop - s_start)]
    if n:
        low = int(min(time.min(), s_start.min(initial=time.min())))
        span = int(max(time.max(), s_start.max(initial=time.max()))) - low + 1
        position = np.searchsorted(group.owner * span + (time - low),
                                   s_owner * span + (s_start - low), "right") - 1
        valid = (position >= 0) & (group.owner[np.maximum(position, 0)] == s_owner)
        position = np.maximum(position, 0)
        state_args += _instruction_args(rows, line[position], stall[position], valid)
    parts += slices(s_begin_ns, s_end_ns, track[s_owner], s_name,
                    wave_key[s_owner] + 1 + 2 * s_local, state_args)

    if n:
        parts += _instruction_parts(group, ctx, wave_key)
    return Unmerged([(events, keys) for events, keys in parts if len(events)])


def _instruction_parts(group: Group, ctx: Context, wave_key) -> list:
    import numpy as np

    rows, clock, names = ctx.rows, ctx.clock, ctx.names
    waves = group.waves
    time, line, stall, duration, owner = group.time, group.line, group.stall, group.duration, group.owner
    n = len(line)
    position = np.arange(n) - group.start[owner]
    last = np.zeros(n, bool)
    ran = group.lengths > 0
    last[(group.start + group.lengths - 1)[ran]] = True
    next_time = np.append(time[1:], 0)
    next_time = np.where(last, group.end[owner], np.maximum(next_time, time))
    stop = np.minimum(np.minimum(time + duration, next_time), group.end[owner])
    parts = []

    # instruction slices of the shown rows, with load -> wait flows
    shown = np.flatnonzero(rows.shown[line])
    flow_out = np.zeros(n, np.int64)
    flow_in = np.zeros(n, np.int64)
    match = wait_matches(group)
    if match is not None:
        attributed = match.producer_positions >= 0
        both = attributed & rows.shown[match.wait_rows] & rows.shown[np.maximum(match.producer_rows, 0)]
        ctx.counts.flows_not_shown += int((attributed & ~both).sum())
        waits, loads = match.positions[both], match.producer_positions[both]
        # one arrow per load slice: keep the first wait that drains it
        loads_unique, first = np.unique(loads, return_index=True)
        ctx.counts.flows_shared_load += len(loads) - len(loads_unique)
        ids = ctx.next_flow + np.arange(len(first), dtype=np.int64)
        ctx.next_flow += len(first)
        flow_out[loads_unique] = ids
        flow_in[waits[first]] = ids
        ctx.counts.flows += len(first)
    if len(shown):
        inst_track = np.array([ctx.tracks.thread(w.se, w.cu, w.simd, w.slot, 1) for w in waves],
                              np.int64)[owner[shown]]
        parts += slices(
            clock.ns(time[shown]), clock.ns(stop[shown]), inst_track, rows.opcode[line[shown]],
            wave_key[owner[shown]] + 2 * position[shown],
            [*_instruction_args(rows, line[shown], stall[shown]),
             Arg("cycles", "int", duration[shown])],
            flow_out=flow_out[shown], flow_in=flow_in[shown])
        ctx.counts.instruction_slices += len(shown)

    # barrier arrivals: instants on the CU's barrier track
    at_barrier = np.flatnonzero(rows.barrier[line])
    if len(at_barrier):
        bar_track = np.array([ctx.tracks.barrier(w.se, w.cu) for w in waves], np.int64)
        arrival_owner = owner[at_barrier]
        args = [*_instruction_args(rows, line[at_barrier], stall[at_barrier]),
                Arg("wave", "int", np.array([w.wave_id for w in waves], np.int64)[arrival_owner]),
                Arg("simd", "int", np.array([w.simd for w in waves], np.int64)[arrival_owner]),
                Arg("slot", "int", np.array([w.slot for w in waves], np.int64)[arrival_owner]),
                # waves released by one barrier instance leave it at the same cycle
                Arg("release_cycle", "int", time[at_barrier] + duration[at_barrier])]
        events = Events(ts=clock.ns(time[at_barrier]), track=bar_track[arrival_owner],
                        type=np.full(len(at_barrier), INSTANT, np.int64),
                        name=np.full(len(at_barrier), names.events.id("barrier arrival"), np.int64),
                        args=args)
        ctx.counts.barrier_arrivals += len(at_barrier)
        parts.append((events, wave_key[arrival_owner] + 2 * position[at_barrier]))

    # hot-loop iterations: from each header execution to the next one or the loop's exit
    if rows.loop is not None:
        first_row, last_row = rows.loop
        headers = np.flatnonzero(line == first_row)
        if len(headers):
            outside = (line < first_row) | (line > last_row)
            next_out = np.minimum.accumulate(np.where(outside, np.arange(n), n)[::-1])[::-1]
            exit_at = next_out[headers]
            exit_time = np.where((exit_at < n) & (owner[np.minimum(exit_at, n - 1)] == owner[headers]),
                                 time[np.minimum(exit_at, n - 1)], group.end[owner[headers]])
            following = np.append(headers[1:], n - 1)
            same = np.append(owner[headers[1:]] == owner[headers[:-1]], False)
            stop_loop = np.where(same, np.minimum(time[following], exit_time), exit_time)
            loop_track = np.array([ctx.tracks.thread(w.se, w.cu, w.simd, w.slot, 2) for w in waves],
                                  np.int64)[owner[headers]]
            wave_first = np.searchsorted(headers, group.start[owner[headers]])
            iteration = np.arange(len(headers)) - wave_first
            parts += slices(
                clock.ns(time[headers]), clock.ns(stop_loop), loop_track,
                np.full(len(headers), names.events.id("loop iteration"), np.int64),
                wave_key[owner[headers]] + 2 * np.arange(len(headers)),
                [Arg("iteration", "int", iteration), Arg("index", "int", line[headers]),
                 Arg("asm", "str", rows.asm[line[headers]]),
                 Arg("source", "str", rows.source[line[headers]]),
                 Arg("stall", "int", stall[headers]),
                 Arg("cycles", "int", stop_loop - time[headers])])
            ctx.counts.loop_iterations += len(headers)
    return parts
