"""Peers' wave metrics: pipe busy shares, non-hidden cost, per-hit p50/p90, barrier imbalance.

Definitions (ours, after the public ones in rocm-systems' thread-trace skill `att_mine.py` and the
decoder's `analysis/hidden_latency.py`; no code taken from them):

* An instruction's **issue interval** is `[time + stall, time + max(stall, duration))`: the cycles
  after its stall during which its pipe works for it. Its **wait window** is
  `[previous end, time + stall)`: the idle gap after the wave's latest end so far plus its stall.
* **Pipe busy share** per pipe (MFMA, VALU, VMEM, LDS, SALU, SMEM): the union of the issue
  intervals of every wave on one SIMD, divided by the time at least one wave was resident there
  (union of wave lifetimes), summed over SIMDs before dividing.
* **Non-hidden cost** of an instruction: its issue cycles plus the cycles of its wait window during
  which no wave of the same SIMD issued on any pipe (the SIMD had nothing else to do). Latency +
  idle minus non-hidden = cycles another wave's work overlapped.
* **Per-hit cost** = duration + idle of one execution; p50/p90 per instruction from a log-spaced
  histogram (8 buckets per octave: values are within ±5 %).
* **Barrier wait with the matrix pipe idle**: the wait-window cycles of `s_barrier` executions
  during which no wave of the same SIMD issued on the MFMA pipe — the part of the barrier waits an
  overlapped schedule (a second wave group's MFMAs, ping-pong) could fill with matrix work.
* **Barrier imbalance** per `s_barrier` row: each wave's mean wait per hit; the least-waiting wave
  arrived last (the others waited for it), so `1 - least / mean` is the share of the barrier's
  cycles spent waiting for a slower wave rather than for the memory drain all waves share.

Intervals are merged per (shader engine, SIMD) over all waves: per group of wave files first
(small), then once more at the end, so the result does not depend on the grouping. Wait windows
(only instructions that waited) are kept until then: 32 bytes each.
Everything is vectorised over a group: sorts, cumulative maxima and `searchsorted`, no per-
instruction Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerneltrace.analysis.costs import PIPE_TYPES
from kerneltrace.isa import classify as isa

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.analysis.waves.group import Group
    from kerneltrace.readers.codejson import CodeTable

PIPES: tuple[str, ...] = tuple(PIPE_TYPES)  # pipe id = position in costs.PIPE_TYPES
_PIPE_OF_TYPE = {kind: pipe for pipe, kinds in PIPE_TYPES.items() for kind in kinds}
BUCKETS_PER_OCTAVE = 8
BUCKETS = 8 * 40  # up to 2**40 cycles per hit
TOP_ROWS = 64  # instructions listed with per-hit percentiles and non-hidden cost
HISTOGRAM_BATCH = 1 << 20  # (row, bucket) keys counted per histogram bincount (8 MB)
DENSE_BARRIER_KEYS = 1 << 22  # (wave, row) barrier keys of a group counted densely up to this
SCOPES = 1 << 20  # (se, simd) scope keys are se * 64 + simd: below this for any real se


def row_pipes(table: CodeTable, rows: int) -> tuple[Any, Any]:
    """(pipe id per code row, -1 for no pipe; True for `s_barrier` rows) from the opcode types."""
    import numpy as np

    pipe = np.full(rows, -1, np.int64)
    barrier = np.zeros(rows, bool)
    for row in table.rows:
        if row.index < rows:
            kind = isa.classify(row.asm)
            if kind in _PIPE_OF_TYPE:
                pipe[row.index] = PIPES.index(_PIPE_OF_TYPE[kind])
            barrier[row.index] = kind == isa.BARRIER
    return pipe, barrier


@dataclass
class PeerTotals:
    """What is accumulated over the groups of waves; intervals are merged again at the end, so
    the result does not depend on how the wave files were grouped."""

    rows: int
    pipe: Any  # pipe id per row
    barrier: Any  # bool per row
    issue: Any = None  # per row: issue cycles
    cost: Any = None  # per row: duration + idle
    histogram: Any = None  # rows x BUCKETS
    pipe_intervals: list[list[tuple]] = field(default_factory=list)  # per pipe: (key, start, end)
    lifetimes: list[tuple] = field(default_factory=list)  # (key, begin, end) arrays per group
    windows: list[tuple] = field(default_factory=list)  # (key, from, to, row) wait windows
    barrier_waits: dict[int, list] = field(default_factory=dict)  # row -> [(sum, hits) per wave]
    # what reduce_peers folded the intervals and windows into (additive over disjoint SIMDs)
    resident: int = 0  # Σ union of wave lifetimes per SIMD
    busy: list[int] = field(default_factory=lambda: [0] * len(PIPES))  # Σ union per pipe and SIMD
    uncovered: Any = None  # per row: wait-window cycles during which no wave of the SIMD issued
    mfma_idle: int = 0  # Σ barrier wait-window cycles while the SIMD's MFMA pipe was idle
    barrier_window: int = 0  # Σ barrier wait-window cycles
    settled_below: int = -(1 << 62)  # SIMD keys below this were reduced already (settle_peers)
    # (row, bucket) keys not yet counted into `histogram`: one rows x BUCKETS bincount per
    # HISTOGRAM_BATCH keys instead of one per group (thousands of rows make it 5 MB a time)
    pending_buckets: list = field(default_factory=list)
    pending_bucket_count: int = 0
    broken: bool = False  # a wave of a settled SIMD came later: the totals are incomplete

    @classmethod
    def empty(cls, table: CodeTable, rows: int) -> PeerTotals:
        import numpy as np

        pipe, barrier = row_pipes(table, rows)
        return cls(rows, pipe, barrier, np.zeros(rows, np.int64), np.zeros(rows, np.int64),
                   np.zeros((rows, BUCKETS), np.int64), [[] for _ in PIPES],
                   uncovered=np.zeros(rows, np.int64))


def scope_key(se: int | None, simd: int | None) -> int:
    """The key of a wave's SIMD in the per-SIMD unions."""
    return (se or 0) * 64 + (simd or 0)


def merge_intervals(keys: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, ...]:
    """Union of intervals per key: (key, start, end) of the merged intervals, sorted."""
    import numpy as np

    keep = ends > starts
    if not keep.all():
        keys, starts, ends = keys[keep], starts[keep], ends[keep]
    if not len(keys):
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    low = int(starts.min())
    span = int(ends.max()) - low + 1
    shift = keys * span  # keys >= 0: every key gets its own range [key * span, (key + 1) * span)
    packed = shift + (starts - low)
    shift += ends - low  # now each shifted end
    # one stable sort of (key, start) packed in an int64 (the order lexsort gives); the
    # streams arrive nearly sorted (issue times grow within a wave), which a stable sort uses
    order = np.argsort(packed, kind="stable")
    packed = packed[order]
    # running max of the shifted ends: it never carries over into the next key's range, so a
    # start above the running max before it begins a merged interval, and so does a new key
    reach = np.maximum.accumulate(shift[order])
    new = np.ones(len(packed), bool)
    np.greater(packed[1:], reach[:-1], out=new[1:])
    first = np.flatnonzero(new)
    # the running max is non-decreasing inside a key: a merged interval ends at its last member
    last = np.append(first[1:] - 1, len(packed) - 1)
    keys = keys[order[first]]
    return keys, starts[order[first]], reach[last] - keys * span + low


def _covered(keys, starts, ends, q_keys, q_from, q_to):
    """Cycles of [q_from, q_to) covered by the merged intervals of the same key (vectorised)."""
    import numpy as np

    if not len(keys) or not len(q_keys):
        return np.zeros(len(q_keys), np.int64)
    low = int(min(starts.min(), q_from.min()))
    span = int(max(ends.max(), q_to.max())) - low + 2
    s = starts - low + keys * span
    e = ends - low + keys * span
    prefix = np.concatenate(([0], np.cumsum(e - s)))

    a = q_from - low + q_keys * span
    b = np.maximum(q_to, q_from) - low + q_keys * span
    # a start past every query: the interval after the last one covers nothing of any query
    s = np.append(s, max(int(s.max()), int(b.max())) + 1)

    def until(t):
        # covered cycles of the key's intervals before time t (t already shifted)
        done = np.searchsorted(e, t, side="right")
        return prefix[done] + np.maximum(t - s[done], 0)

    return until(b) - until(a)


def add_peer_group(peers: PeerTotals, group: Group, idle, prev_end) -> None:
    """Accumulate one group; `idle` and `prev_end` are per instruction of the group's columns."""
    import numpy as np

    owner, time, stall, duration, line = group.owner, group.time, group.stall, group.duration, group.line
    if not len(line):
        return
    scope_of_wave = np.array([scope_key(wave.se, wave.simd) for wave in group.waves], np.int64)
    if scope_of_wave.min() < peers.settled_below:
        peers.broken = True
    scope = scope_of_wave[owner]
    pipe = peers.pipe[line]
    issue_start = time + stall
    issue_end = time + np.maximum(stall, duration)
    peers.lifetimes.append((scope_of_wave, group.begin, group.end))
    # merged per group already (the end-of-run merge stays small): all pipes in one merge whose
    # key is (pipe, scope); each pipe's merged intervals are then one contiguous run
    if scope_of_wave.min() >= 0 and scope_of_wave.max() < SCOPES:
        piped = np.flatnonzero(pipe >= 0)
        # grouped by pipe first (a radix sort of a small int, order kept inside a pipe): the
        # merge's sort then meets long sorted runs (issue times grow within a wave)
        piped = piped[np.argsort(pipe[piped].astype(np.int8), kind="stable")]
        keys, starts, ends = merge_intervals(pipe[piped] * SCOPES + scope[piped], issue_start[piped],
                                    issue_end[piped])
        bounds = np.searchsorted(keys, np.arange(len(PIPES) + 1) * SCOPES).tolist()
        for index in range(len(PIPES)):
            low, high = bounds[index], bounds[index + 1]
            if high > low:
                peers.pipe_intervals[index].append(
                    (keys[low:high] - index * SCOPES, starts[low:high], ends[low:high]))
    else:  # scope keys outside [0, SCOPES) (odd file names): one merge per pipe
        for index in range(len(PIPES)):
            mask = pipe == index
            if mask.any():
                peers.pipe_intervals[index].append(merge_intervals(scope[mask], issue_start[mask],
                                                          issue_end[mask]))
    peers.issue += np.bincount(line, weights=issue_end - issue_start,
                               minlength=peers.rows).astype(np.int64)[: peers.rows]
    window_from = np.minimum(prev_end, issue_start)
    waiting = issue_start > window_from
    peers.windows.append((scope[waiting], window_from[waiting], issue_start[waiting], line[waiting]))
    cost = duration + idle
    peers.cost += np.bincount(line, weights=cost, minlength=peers.rows).astype(np.int64)[: peers.rows]
    bucket = np.minimum((np.log2(cost.astype(np.float64) + 1) * BUCKETS_PER_OCTAVE).astype(np.int64),
                        BUCKETS - 1)
    peers.pending_buckets.append(line * BUCKETS + bucket)
    peers.pending_bucket_count += len(line)
    if peers.pending_bucket_count >= HISTOGRAM_BATCH:
        flush_histogram(peers)
    # barrier waits per (wave, row)
    at_barrier = peers.barrier[line]
    if at_barrier.any():
        bar_rows = line[at_barrier]
        bar_owner = owner[at_barrier]
        wait_cycles = np.maximum(stall, duration)[at_barrier] + idle[at_barrier]
        key = bar_owner * peers.rows + bar_rows
        if len(group.waves) * peers.rows <= DENSE_BARRIER_KEYS:
            # one count per possible key: no sort (bincount adds in the same order either way)
            hits = np.bincount(key, minlength=len(group.waves) * peers.rows)
            uniq = np.flatnonzero(hits)
            sums = np.bincount(key, weights=wait_cycles, minlength=len(hits))[uniq]
            hits = hits[uniq]
        else:
            uniq, inverse = np.unique(key, return_inverse=True)
            sums = np.bincount(inverse, weights=wait_cycles)
            hits = np.bincount(inverse)
        for k, total, n in zip(uniq.tolist(), sums.tolist(), hits.tolist(), strict=True):
            peers.barrier_waits.setdefault(k % peers.rows, []).append((total, n))


def flush_histogram(peers: PeerTotals) -> None:
    """Count the pending (row, bucket) keys into `histogram`."""
    import numpy as np

    if not peers.pending_buckets:
        return
    flat = np.bincount(np.concatenate(peers.pending_buckets), minlength=peers.rows * BUCKETS)
    peers.histogram += flat[: peers.rows * BUCKETS].reshape(peers.rows, BUCKETS)
    peers.pending_buckets, peers.pending_bucket_count = [], 0


def _percentile(histogram_row, q: float) -> int | None:
    import numpy as np

    total = int(histogram_row.sum())
    if not total:
        return None
    bucket = int(np.searchsorted(np.cumsum(histogram_row), q * total, side="left"))
    # geometric middle of the bucket, back in cycles
    return int(round(2 ** ((bucket + 0.5) / BUCKETS_PER_OCTAVE) - 1))


_MIDDLES: list[int] = []


def _percentiles(histogram, rows: list[int], q: float) -> list[int | None]:
    """_percentile of each of `rows` of `histogram`: a cumulative sum per block of rows, the
    bucket found by counting (the same comparisons as searchsorted's), one table per bucket."""
    import numpy as np

    if not _MIDDLES:
        _MIDDLES.extend(int(round(2 ** ((bucket + 0.5) / BUCKETS_PER_OCTAVE) - 1))
                        for bucket in range(BUCKETS + 1))
    found: list[int | None] = []
    for low in range(0, len(rows), 4096):  # bounded temporaries (rows x BUCKETS each)
        cumulative = np.cumsum(histogram[rows[low:low + 4096]], axis=1)
        totals = cumulative[:, -1]
        buckets = (cumulative < (q * totals)[:, None]).sum(axis=1)
        found += [_MIDDLES[bucket] if total else None
                  for bucket, total in zip(buckets.tolist(), totals.tolist(), strict=True)]
    return found


def _reduce(peers: PeerTotals, lifetimes: list[tuple], pipe_intervals: list[list[tuple]],
            windows: list[tuple]) -> None:
    """Fold intervals and wait windows (of complete SIMDs) into resident, busy and uncovered."""
    import numpy as np

    def merged(parts: list[tuple]) -> tuple:
        if not parts:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        return merge_intervals(*(np.concatenate([part[i] for part in parts]) for i in range(3)))

    _, begins, ends = merged(lifetimes)
    peers.resident += int((ends - begins).sum())
    per_pipe = [merged(parts) for parts in pipe_intervals]
    for index, (_, starts, ends) in enumerate(per_pipe):
        peers.busy[index] += int((ends - starts).sum())
    # wait-window cycles while no wave of the SIMD issued anything
    if windows:
        keys, starts, ends = merged([part for part in per_pipe if len(part[0])])
        w_key, w_from, w_to, w_row = (np.concatenate([w[i] for w in windows]) for i in range(4))
        uncovered = (w_to - w_from) - _covered(keys, starts, ends, w_key, w_from, w_to)
        peers.uncovered += np.bincount(w_row, weights=uncovered,
                                       minlength=peers.rows).astype(np.int64)[: peers.rows]
        at_barrier = peers.barrier[w_row]
        if at_barrier.any():
            b_key, b_from, b_to = w_key[at_barrier], w_from[at_barrier], w_to[at_barrier]
            m_keys, m_starts, m_ends = per_pipe[PIPES.index("MFMA")]
            window = int((b_to - b_from).sum())
            peers.barrier_window += window
            peers.mfma_idle += window - int(_covered(m_keys, m_starts, m_ends, b_key, b_from,
                                                     b_to).sum())


def reduce_peers(peers: PeerTotals) -> None:
    """Fold all kept intervals and wait windows into `resident`, `busy` and `uncovered`.

    Unions are taken per SIMD (key), so totals of waves on disjoint sets of SIMDs can be reduced
    separately and added (settle_peers, merge_peers); the kept lists are emptied.
    """
    _reduce(peers, peers.lifetimes, peers.pipe_intervals, peers.windows)
    flush_histogram(peers)
    peers.lifetimes, peers.windows = [], []
    peers.pipe_intervals = [[] for _ in PIPES]


def settle_peers(peers: PeerTotals, below: int) -> None:
    """Reduce the kept data of the SIMDs whose key is below `below`; keep the others.

    Called while streaming when no later wave file can belong to those SIMDs (files come sorted
    by SE and SIMD), so memory holds the intervals and windows of the current SIMDs only. A
    later wave of a settled SIMD sets `broken` (the caller then streams again without settling).
    """
    def split(parts: list[tuple]) -> tuple[list[tuple], list[tuple]]:
        done, kept = [], []
        for part in parts:
            keys = part[0]
            if not len(keys):
                continue
            if keys.max() < below:
                done.append(part)
            elif keys.min() >= below:
                kept.append(part)
            else:
                mask = keys < below
                done.append(tuple(values[mask] for values in part))
                kept.append(tuple(values[~mask] for values in part))
        return done, kept

    lifetimes, peers.lifetimes = split(peers.lifetimes)
    pipes = [split(parts) for parts in peers.pipe_intervals]
    peers.pipe_intervals = [kept for _, kept in pipes]
    windows, peers.windows = split(peers.windows)
    _reduce(peers, lifetimes, [done for done, _ in pipes], windows)
    peers.settled_below = max(peers.settled_below, below)


def merge_peers(into: PeerTotals, other: PeerTotals) -> None:
    """Add reduced `other` (waves on other SIMDs, later in file order) to reduced `into`."""
    into.issue += other.issue
    into.cost += other.cost
    into.histogram += other.histogram
    into.resident += other.resident
    into.busy = [a + b for a, b in zip(into.busy, other.busy, strict=True)]
    into.uncovered += other.uncovered
    into.mfma_idle += other.mfma_idle
    into.barrier_window += other.barrier_window
    into.broken = into.broken or other.broken
    for row, per_wave in other.barrier_waits.items():
        into.barrier_waits.setdefault(row, []).extend(per_wave)


TOP_LINES = 32


def _line_costs(cost, non_hidden, rows: dict) -> list[dict]:
    """Cost and non-hidden cost per innermost source line (`<unmapped>` for rows without one)."""
    import numpy as np

    from kerneltrace.sourceloc import UNMAPPED, innermost_location

    names: dict[str, int] = {}
    owner = np.full(len(cost), -1, np.int64)
    for index, row in rows.items():
        if index < len(cost):
            location = innermost_location(row.source or "") or UNMAPPED
            owner[index] = names.setdefault(location, len(names))
    known = owner >= 0
    if not known.any():
        return []
    by_cost = np.bincount(owner[known], weights=cost[known], minlength=len(names))
    by_hidden = np.bincount(owner[known], weights=non_hidden[known], minlength=len(names))
    order = np.argsort(-by_cost, kind="stable")[:TOP_LINES]
    locations = list(names)
    return [{"location": locations[i], "cost_cycles": int(by_cost[i]),
             "non_hidden_cycles": int(by_hidden[i])} for i in order.tolist() if by_cost[i] > 0]


def peer_summary(peers: PeerTotals, rows: dict) -> dict:
    """The `peers` object of `waves` (docs/waves-json.md)."""
    import numpy as np

    reduce_peers(peers)
    resident = peers.resident
    busy = {name: (round(peers.busy[i] / resident, 4) if resident else None)
            for i, name in enumerate(PIPES)}
    # non-hidden = issue cycles + wait-window cycles while no wave of the SIMD issued anything
    non_hidden = peers.issue + peers.uncovered
    total_cost = int(peers.cost.sum())
    order = np.argsort(-peers.cost, kind="stable")[:TOP_ROWS]
    instructions = []
    for index in order.tolist():
        if not peers.cost[index]:
            break
        row = rows.get(index)
        instructions.append({
            "index": index,
            "asm": row.asm if row else "",
            "cost_cycles": int(peers.cost[index]),
            "non_hidden_cycles": int(non_hidden[index]),
            "per_hit_p50": _percentile(peers.histogram[index], 0.5),
            "per_hit_p90": _percentile(peers.histogram[index], 0.9),
        })
    lines = _line_costs(peers.cost, non_hidden, rows)
    executed = np.flatnonzero(peers.histogram.sum(axis=1)).tolist()
    per_hit = {"index": executed,
               "p50": _percentiles(peers.histogram, executed, 0.5),
               "p90": _percentiles(peers.histogram, executed, 0.9)}
    barriers = []
    for index, per_wave in sorted(peers.barrier_waits.items()):
        means = np.array([total / n for total, n in per_wave if n])
        if not len(means):
            continue
        mean = float(means.mean())
        least = float(means.min())
        row = rows.get(index)
        barriers.append({
            "index": index,
            "asm": row.asm if row else "",
            "source": row.source if row else "",
            "waves": len(means),
            "wait_per_hit_least": round(least, 1),
            "wait_per_hit_mean": round(mean, 1),
            "wait_per_hit_max": round(float(means.max()), 1),
            "imbalance": round(1 - least / mean, 4) if mean > 0 else None,
        })
    barrier_cycles = sum(total for per_wave in peers.barrier_waits.values() for total, _ in per_wave)
    weighted = sum(
        (b["imbalance"] or 0) * sum(t for t, _ in peers.barrier_waits[b["index"]]) for b in barriers
    )
    return {
        "definitions": "kerneltrace/analysis/waves/peers.py; docs/waves-json.md#peers",
        "resident_cycles": resident,
        "pipe_busy": busy,
        "cost_cycles": total_cost,
        "non_hidden_cycles": int(non_hidden.sum()),
        "non_hidden_share": round(int(non_hidden.sum()) / total_cost, 4) if total_cost else None,
        "instructions": instructions,
        "lines": lines,
        "per_hit": per_hit,
        "barriers": barriers,
        "barrier_imbalance": round(weighted / barrier_cycles, 4) if barrier_cycles else None,
        "barrier_wait": barrier_wait_summary(peers, non_hidden),
    }


def barrier_wait_summary(peers: PeerTotals, non_hidden) -> dict | None:
    """`peers.barrier_wait`: the barrier waits' cycles, of which the SIMD's matrix pipe was idle
    and no wave of the SIMD issued anything (None without barrier waits)."""
    if not peers.barrier_window:
        return None
    barrier_rows = peers.barrier[: len(non_hidden)]
    return {"window_cycles": peers.barrier_window,
            "mfma_idle_cycles": peers.mfma_idle,
            "non_hidden_cycles": int(non_hidden[barrier_rows].sum())}
