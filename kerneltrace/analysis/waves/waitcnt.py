"""Waitcnt attribution: each wait execution's stall charged to its youngest drained producer.

Each execution of an `s_waitcnt` charges its stall to the *youngest* drained producer (the
producer line of the wave's `waitcnt` list issued most recently before the wait). Memory results
on one counter return in issue order, so the wait is released when that youngest load returns;
older ones had already returned (docs/waves-json.md, `waitcnt`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerneltrace.analysis.waves.arrays import sorted_unique, unique_of_sorted
from kerneltrace.analysis.waves.rows import row_ref

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.analysis.waves.group import Group
    from kerneltrace.readers.codejson import CodeRow

HOT_WAITS = 10  # waits reported, by stall
PENDING_LIMIT = 1 << 18  # attribution entries buffered before folding (bounds memory)


@dataclass
class WaitTotals:
    """Wait attribution accumulated over the waves (per wait row and producer row)."""

    cycles: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))
    count: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))
    unattributed: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    producers: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    # per-group arrays not yet folded into the dicts above (see flush_waits)
    pending_pairs: list[Any] = field(default_factory=list)
    pending_attributions: list[tuple] = field(default_factory=list)
    pending_size: int = 0


@dataclass
class WaitMatches:
    """The stalled executions of listed wait rows in one group, each with its youngest producer."""

    positions: Any  # group position of each stalled wait execution
    wait_rows: Any  # its code row
    producer_rows: Any  # the row of its youngest drained producer, -1: none issued before it
    producer_positions: Any  # group position of that producer execution, -1: none
    stall: Any  # the wait execution's stall cycles


def _too_large(group: Group) -> bool:
    """True when the (wave, row, position) keys of the group would overflow int64."""
    rows = int(max(group.line.max(initial=0), group.wait_producers.max(initial=0),
                   group.wait_rows.max(initial=0))) + 1
    return len(group.waves) * rows * (len(group.line) + 1) >= 1 << 62


def _drained_pairs(group: Group) -> tuple[int, Any, Any]:
    """(rows, wave*rows + wait row, producer row) of every distinct waitcnt entry pair, sorted."""
    import numpy as np

    entry_counts = group.wait_entries
    line, producers, wait_rows = group.line, group.wait_producers, group.wait_rows
    rows = int(max(line.max(initial=0), producers.max(initial=0), wait_rows.max(initial=0))) + 1
    # producers per entry: the offsets of all waves end to end, minus each wave's boundary step
    pair_counts = np.diff(group.wait_offsets)
    inside = np.ones(len(pair_counts), bool)
    inside[np.cumsum(entry_counts + 1)[:-1] - 1] = False
    pair_counts = pair_counts[inside]
    # (wave, wait row, producer row) of every waitcnt entry, as sorted unique keys.
    entry_owner = np.repeat(np.arange(len(group.waves)), entry_counts)
    wave_wait = np.repeat(entry_owner * rows + wait_rows, pair_counts)
    pair_keys = wave_wait * rows + producers
    if len(group.waves) * rows <= 1 << 16:
        # two stable radix passes of 16-bit keys (producer, then wave and wait row) sort the
        # pairs in about half the time of np.sort of the int64 keys (a TK GEMM group)
        order = np.argsort(producers.astype(np.uint16), kind="stable")
        order = order[np.argsort(wave_wait[order].astype(np.uint16), kind="stable")]
        pair_keys = unique_of_sorted(pair_keys[order])
    else:
        pair_keys = sorted_unique(pair_keys)
    return rows, pair_keys // rows, pair_keys % rows


def _youngest(group: Group, rows: int, pair_wave_wait, pair_producer) -> WaitMatches | None:
    """Each stalled execution of a listed wait row and its youngest drained producer execution."""
    import numpy as np

    line, stall, owner = group.line, group.stall, group.owner
    n = len(line)
    # Executions of a listed wait row (in its own wave) that stalled.
    listed = sorted_unique(pair_wave_wait)
    if not len(listed):  # every entry has an empty producer list: nothing to attribute
        return None
    is_wait_row = np.zeros(rows, bool)
    is_wait_row[listed % rows] = True
    positions = np.flatnonzero(is_wait_row[line] & (stall > 0))
    keys = owner[positions] * rows + line[positions]
    where = np.minimum(np.searchsorted(listed, keys), len(listed) - 1)
    mine = listed[where] == keys
    positions, keys = positions[mine], keys[mine]
    if not len(positions):
        return None
    first = np.searchsorted(pair_wave_wait, keys, "left")
    per_instance = np.searchsorted(pair_wave_wait, keys, "right") - first
    instance = np.repeat(np.arange(len(positions)), per_instance)
    starts = np.cumsum(per_instance) - per_instance
    candidate = first[instance] + np.arange(len(instance)) - starts[instance]
    producer = pair_producer[candidate]
    # Last execution of each producer row before the wait, in the same wave: search the
    # sorted (wave, row, position) keys of the executions of producer rows.
    is_producer_row = np.zeros(rows, bool)
    is_producer_row[pair_producer] = True
    issued = np.flatnonzero(is_producer_row[line])
    wave_row = owner[issued] * rows + line[issued]
    occurrence = wave_row * (n + 1) + issued
    if len(group.waves) * rows <= 1 << 16:
        # issued is increasing: a stable sort by (wave, row) alone sorts the keys, and numpy
        # sorts 16-bit keys by radix (5x np.sort of the int64 keys on a TK GEMM group)
        occurrence = occurrence[np.argsort(wave_row.astype(np.uint16), kind="stable")]
    else:
        occurrence.sort()
    wanted = owner[positions][instance] * rows + producer
    found = np.searchsorted(occurrence, wanted * (n + 1) + positions[instance]) - 1
    found_key = occurrence[np.maximum(found, 0)] if len(occurrence) else np.full(len(found), -1)
    valid = (found >= 0) & (found_key // (n + 1) == wanted)
    issued_at = np.where(valid, found_key % (n + 1), -1)
    youngest = np.maximum.reduceat(issued_at, starts)
    is_youngest = valid & (issued_at == youngest[instance])
    # one winner per instance (the same producer row may be listed twice: take the first)
    winner = np.full(len(positions), -1, np.int64)
    winner_at = np.full(len(positions), -1, np.int64)
    chosen = np.flatnonzero(is_youngest)[::-1]
    winner[instance[chosen]] = producer[chosen]
    winner_at[instance[chosen]] = issued_at[chosen]
    return WaitMatches(positions, line[positions], winner, winner_at, stall[positions])


def wait_matches(group: Group) -> WaitMatches | None:
    """The stalled wait executions of `group` with their youngest producers (module docstring);
    None when there is none. Positions index the group's instruction columns."""
    import numpy as np

    from kerneltrace.analysis.waves.group import Group

    if not len(group.wait_rows):
        return None
    if _too_large(group):  # keys would overflow int64: split the group
        half = len(group.waves) // 2
        parts = [(wait_matches(Group.of(group.waves[:half])), 0),
                 (wait_matches(Group.of(group.waves[half:])), int(group.lengths[:half].sum()))]
        found = [(match, offset) for match, offset in parts if match is not None]
        if not found:
            return None

        def joined(name: str, shift: bool):
            return np.concatenate([getattr(match, name) + (offset if shift else 0)
                                   * (getattr(match, name) >= 0) for match, offset in found])

        return WaitMatches(joined("positions", True), joined("wait_rows", False),
                           joined("producer_rows", False), joined("producer_positions", True),
                           joined("stall", False))
    rows, pair_wave_wait, pair_producer = _drained_pairs(group)
    return _youngest(group, rows, pair_wave_wait, pair_producer)


def attribute_waits(waits: WaitTotals, group: Group) -> None:
    """Charge each wait execution's stall to its youngest drained producer (module docstring).

    Whole-group numpy passes over the concatenated instructions of `group`; only the
    instructions on a listed wait row (that stalled) or on a producer row take part in the
    searches, so the cost is one gather per instruction plus work on those few.
    """
    from kerneltrace.analysis.waves.group import Group

    if not len(group.wait_rows):
        return
    if _too_large(group):  # keys would overflow int64: split the group
        half = len(group.waves) // 2
        attribute_waits(waits, Group.of(group.waves[:half]))
        attribute_waits(waits, Group.of(group.waves[half:]))
        return
    rows, pair_wave_wait, pair_producer = _drained_pairs(group)
    waits.pending_pairs.append((pair_wave_wait % rows) * (1 << 32) + pair_producer)
    match = _youngest(group, rows, pair_wave_wait, pair_producer)
    waits.pending_size += len(pair_producer)
    if match is not None:
        waits.pending_attributions.append((match.wait_rows, match.producer_rows, match.stall))
        waits.pending_size += len(match.positions)
    if waits.pending_size > PENDING_LIMIT:
        flush_waits(waits)


def flush_waits(waits: WaitTotals) -> None:
    """Fold the pending attribution arrays into the totals (one numpy pass for many waves)."""
    import numpy as np

    if waits.pending_pairs:
        pairs = sorted_unique(np.concatenate(waits.pending_pairs))
        for wait_row, producer_row in zip((pairs >> 32).tolist(), (pairs & 0xFFFFFFFF).tolist(),
                                          strict=True):
            waits.producers[wait_row].add(producer_row)
    if waits.pending_attributions:
        wait_rows, winners, stalls = (np.concatenate(parts)
                                      for parts in zip(*waits.pending_attributions, strict=True))
        # winner -1 (no producer issued before the wait) → unattributed; +1 keeps keys >= 0
        keys, inverse = np.unique(wait_rows * (1 << 32) + (winners + 1), return_inverse=True)
        cycles = np.bincount(inverse, weights=stalls).astype(np.int64)
        counts = np.bincount(inverse)
        for key, total, count in zip(keys.tolist(), cycles.tolist(), counts.tolist(), strict=True):
            wait_row, producer_row = key >> 32, (key & 0xFFFFFFFF) - 1
            if producer_row < 0:
                waits.unattributed[wait_row] += total
            else:
                waits.cycles[(wait_row, producer_row)] += total
                waits.count[(wait_row, producer_row)] += count
    waits.pending_pairs.clear()
    waits.pending_attributions.clear()
    waits.pending_size = 0


def merge_waits(into: WaitTotals, other: WaitTotals) -> None:
    """Add the flushed wait totals `other` (other waves) to the flushed `into`."""
    for key, cycles in other.cycles.items():
        into.cycles[key] += cycles
    for key, count in other.count.items():
        into.count[key] += count
    for row, cycles in other.unattributed.items():
        into.unattributed[row] += cycles
    for row, producers in other.producers.items():
        into.producers[row] |= producers


def waitcnt_summary(waits: WaitTotals, stall: np.ndarray, hits: np.ndarray,
                    rows: dict[int, CodeRow]) -> list[dict[str, Any]]:
    """The `waitcnt` list: hot waits (by the wave-file stall per row) and their producers."""
    # every producer a wait drains is listed, with the cycles it was charged (possibly 0)
    by_wait: dict[int, list[tuple[int, int]]] = {
        wait_row: [(producer_row, waits.cycles.get((wait_row, producer_row), 0))
                   for producer_row in producers]
        for wait_row, producers in waits.producers.items()
    }
    known_rows = len(stall)
    hot = sorted(by_wait, key=lambda w: (-int(stall[w]) if w < known_rows else 0, w))
    result = []
    for wait_row in hot[:HOT_WAITS]:
        stall_cycles = int(stall[wait_row]) if wait_row < known_rows else 0
        if stall_cycles <= 0:
            continue
        producers = [
            {**row_ref(rows, producer_row), "cycles": cycles,
             "share": round(cycles / stall_cycles, 4),
             "waits": waits.count.get((wait_row, producer_row), 0)}
            for producer_row, cycles in sorted(by_wait[wait_row], key=lambda p: (-p[1], p[0]))
        ]
        entry = {**row_ref(rows, wait_row), "stall_cycles": stall_cycles,
                 "hits": int(hits[wait_row]),
                 "unattributed_cycles": waits.unattributed.get(wait_row, 0),
                 "producers": producers,
                 "dominant_producer": producers[0] if producers and producers[0]["cycles"] else None}
        result.append(entry)
    return result


def wait_links(waits: WaitTotals, stall: np.ndarray) -> list[dict[str, Any]]:
    """Every wait row the wave files list, in row order, with each producer it drains as
    [row, cycles charged, waits charged] (the `waitcnt` list keeps the hot ones in full)."""
    known_rows = len(stall)
    return [
        {"index": wait_row,
         "stall_cycles": int(stall[wait_row]) if wait_row < known_rows else 0,
         "unattributed_cycles": waits.unattributed.get(wait_row, 0),
         "producers": [[row, waits.cycles.get((wait_row, row), 0), waits.count.get((wait_row, row), 0)]
                       for row in sorted(producers)]}
        for wait_row, producers in sorted(waits.producers.items())
    ]
