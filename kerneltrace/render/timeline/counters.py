"""Counter tracks of a wave timeline: waves resident per SE/CU and MFMA/VALU/VMEM busy shares.

* waves resident: the number of traced waves alive on the CU (wave lifetimes of the wave files),
  a step at every wave begin and end.
* `<pipe> busy`: per time bin, the cycles in which the pipe issued for at least one wave of a
  SIMD (union of issue intervals per SIMD, the definition of kerneltrace/analysis/waves/peers.py)
  summed over the CU's SIMDs, divided by the cycles those SIMDs had a wave resident. In [0, 1].
Intervals are merged per SIMD and folded into bins when no later wave file can hold that SIMD
(files come sorted by SE and SIMD), so memory holds the current SIMDs' intervals only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kerneltrace.analysis.waves.peers import PIPES, merge_intervals, scope_key
from kerneltrace.render.timeline.events import COUNTER, Events

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.analysis.waves.group import Group
    from kerneltrace.render.timeline.clock import Clock
    from kerneltrace.render.timeline.tracks import TrackRegistry

COUNTER_PIPES = ("MFMA", "VALU", "VMEM")
TARGET_BINS = 400  # pipe-share bins over the dispatch span


def _covered_until(starts, ends, t):
    """Cycles of the sorted disjoint intervals [starts, ends) lying before each time t."""
    import numpy as np

    prefix = np.concatenate(([0], np.cumsum(ends - starts)))
    k = np.searchsorted(starts, t, "right")  # intervals starting at or before t
    partial = np.where(k > 0, np.minimum(t - starts[np.maximum(k - 1, 0)],
                                         (ends - starts)[np.maximum(k - 1, 0)]), 0)
    return prefix[np.maximum(k - 1, 0)] * (k > 0) + np.maximum(partial, 0)


@dataclass
class CounterTotals:
    """What the counter tracks accumulate while the groups stream by."""

    bin_cycles: int
    pipe_ids: dict[str, int]  # counter pipe -> pipe id of peers.PIPES
    row_pipe: np.ndarray  # pipe id per code row (peers.row_pipes), -1: none
    lifetimes: list[tuple] = field(default_factory=list)  # (process key, begin, end) arrays
    pending: dict[tuple, list] = field(default_factory=lambda: defaultdict(list))  # (scope, cu) ->
    # [(kind, starts, ends)]: kind -1 = lifetimes, else pipe id
    bins: dict[tuple, dict[int, np.ndarray]] = field(default_factory=dict)  # cu key -> kind -> bins
    settled_below: int = -1

    def _add_bins(self, cu: tuple, kind: int, starts, ends) -> None:
        import numpy as np

        if not len(starts):
            return
        first, last = int(starts.min()) // self.bin_cycles, int(ends.max() - 1) // self.bin_cycles
        edges = np.arange(first, last + 2, dtype=np.int64) * self.bin_cycles
        per_bin = np.diff(_covered_until(starts, ends, edges))
        table = self.bins.setdefault(cu, {})
        current = table.get(kind)
        size = last + 1
        if current is None or len(current) < size:
            grown = np.zeros(max(size, 2 * len(current) if current is not None else size), np.int64)
            if current is not None:
                grown[:len(current)] = current
            table[kind] = current = grown
        current[first:last + 1] += per_bin

    def settle(self, below: int | None) -> None:
        """Fold the intervals of SIMD scopes below `below` (None: all) into the bins."""
        import numpy as np

        for key in sorted(self.pending):
            scope, cu = key
            if below is not None and scope >= below:
                continue
            by_kind: dict[int, list] = defaultdict(list)
            for kind, starts, ends in self.pending.pop(key):
                by_kind[kind].append((starts, ends))
            for kind, parts in by_kind.items():
                starts = np.concatenate([p[0] for p in parts])
                ends = np.concatenate([p[1] for p in parts])
                _, merged_starts, merged_ends = merge_intervals(np.zeros(len(starts), np.int64),
                                                                starts, ends)
                self._add_bins(cu, kind, merged_starts, merged_ends)


def new_totals(span_cycles: int | None, row_pipe) -> CounterTotals:
    bin_cycles = max(1, -(-int(span_cycles) // TARGET_BINS)) if span_cycles else 1024
    return CounterTotals(bin_cycles, {name: PIPES.index(name) for name in COUNTER_PIPES}, row_pipe)


def add_group(totals: CounterTotals, group: Group) -> None:
    """Accumulate the lifetimes and pipe issue intervals of one group."""
    import numpy as np

    waves = group.waves
    cu_keys = [(w.se, w.cu) for w in waves]
    scopes = np.array([scope_key(w.se, w.simd) for w in waves], np.int64)
    totals.lifetimes.append((cu_keys, group.begin, group.end))
    for index, cu in enumerate(cu_keys):
        key = (int(scopes[index]), cu)
        totals.pending[key].append((-1, group.begin[index:index + 1], group.end[index:index + 1]))
    if len(group.line):
        pipe = totals.row_pipe[group.line]
        issue_start = group.time + group.stall
        issue_end = group.time + np.maximum(group.stall, group.duration)
        wave_of = group.owner
        for pipe_id in totals.pipe_ids.values():
            chosen = np.flatnonzero(pipe == pipe_id)
            if not len(chosen):
                continue
            owners = wave_of[chosen]
            # one entry per wave (a wave belongs to one scope)
            bounds = np.searchsorted(owners, np.arange(len(waves) + 1))
            for index in np.flatnonzero(np.diff(bounds)).tolist():
                low, high = bounds[index], bounds[index + 1]
                key = (int(scopes[index]), cu_keys[index])
                totals.pending[key].append((pipe_id, issue_start[chosen[low:high]],
                                            issue_end[chosen[low:high]]))
    if len(waves):
        totals.settle(int(scopes[-1]))  # later files hold this SIMD or higher ones


def counter_events(totals: CounterTotals, clock: Clock, tracks: TrackRegistry) -> Events:
    """The counter events of every CU: waves resident steps and per-bin pipe busy shares."""
    import numpy as np

    totals.settle(None)
    ts, track, value = [], [], []
    by_cu: dict[tuple, list] = defaultdict(list)
    for cu_keys, begins, ends in totals.lifetimes:
        for cu, b, e in zip(cu_keys, begins.tolist(), ends.tolist(), strict=True):
            by_cu[cu].append((b, e))
    for cu, spans in sorted(by_cu.items(), key=lambda item: str(item[0])):
        spans_array = np.array(spans, np.int64)
        times = np.concatenate([spans_array[:, 0], spans_array[:, 1]])
        steps = np.concatenate([np.ones(len(spans), np.int64), -np.ones(len(spans), np.int64)])
        order = np.lexsort((steps, times))  # ends before starts at equal times
        times, level = times[order], np.cumsum(steps[order])
        last = np.append(times[1:] != times[:-1], True)  # one value per time: the last
        uuid = tracks.counter(cu[0], cu[1], "waves resident")
        ts.append(clock.ns(times[last]))
        track.append(np.full(int(last.sum()), uuid, np.int64))
        value.append(level[last].astype(np.float64))
        kinds = totals.bins.get(cu, {})
        resident = kinds.get(-1)
        if resident is None:
            continue
        used = np.flatnonzero(resident > 0)
        if not len(used):
            continue
        first, stop = int(used[0]), int(used[-1]) + 1
        edges = np.arange(first, stop + 1, dtype=np.int64) * totals.bin_cycles
        for name, pipe_id in totals.pipe_ids.items():
            busy = kinds.get(pipe_id)
            busy_bins = np.zeros(stop - first, np.int64)
            if busy is not None:
                part = busy[first:stop]
                busy_bins[:len(part)] = part
            denominator = resident[first:stop]
            share = np.where(denominator > 0, busy_bins / np.maximum(denominator, 1), 0.0)
            share = np.append(np.minimum(share, 1.0), 0.0)  # back to 0 after the last bin
            uuid = tracks.counter(cu[0], cu[1], f"{name} busy")
            ts.append(clock.ns(edges))
            track.append(np.full(len(edges), uuid, np.int64))
            value.append(share)
    if not ts:
        empty = np.zeros(0, np.int64)
        return Events(empty, empty, empty, empty, counter=np.zeros(0))
    ts_all = np.concatenate(ts)
    n = len(ts_all)
    return Events(ts=ts_all, track=np.concatenate(track), type=np.full(n, COUNTER, np.int64),
                  name=np.zeros(n, np.int64), counter=np.concatenate(value))
