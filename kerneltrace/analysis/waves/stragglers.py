"""Straggler analysis: at each `s_barrier`, the wave that arrived last and what made it late.

All waves of a workgroup leave a barrier together (one release, within a few cycles: they are
on different SIMDs of one CU) and the next barrier waits for the last of them to arrive, so a
barrier's wait is the difference between the waves' windows since the previous release. For
every barrier execution of every traced wave the stream keeps one event: the barrier row, its
arrival (issue time) and release (issue + duration), and the window before it (from the wave's
previous barrier release, or its begin): its length and its lost cycles (stall + idle before
issue) per code row, the TOP_ROWS largest. At the end the events of one CU and barrier row whose
releases lie within RELEASE_TOLERANCE cycles (one per wave) form one barrier instance:

* its **wait** is Σ over its waves of (barrier duration − the instance's least duration): the
  cycles the others waited for the last one (the least duration is the barrier's own cost);
* its **straggler** is the wave with the least duration (it arrived last);
* the straggler's **excess** per row is its window's lost cycles there minus the mean of the
  other waves' (rows outside a wave's top rows count 0), and its excess `work` is its window's
  non-lost cycles minus theirs: the wait is charged to the positive excesses in proportion.
  With no positive excess (the straggler only started later) the wait is `unexplained`.

An instance whose waves all wait far longer than the barrier's own cost waits for an untraced
wave (a SIMD that was not traced): it is counted in `untraced_waits`, not charged.
The rows charged are turned into causes (what a wait drains, MFMA, LDS, ...) by
`analysis.barrier_stragglers`, which has the instruction table's waits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerneltrace.thresholds import DEFAULT_STRUCTURE

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.analysis.waves.group import Group

TOP_ROWS = 24  # lost-cycle rows kept per window
RELEASE_TOLERANCE = 16  # cycles between the releases of one barrier instance's waves
MAX_EVENTS = 200_000  # barrier events kept (beyond: `truncated`)
TOP_CHARGED = 64  # rows listed per barrier row (the rest: `rest_cycles`)
# cells of the (instance, row) table of _slots_of_pairs: 2 MB, below the 4 MB from which numpy
# asks the kernel for huge pages (a fresh 16 MB table took 5-140 ms to fault in, with the
# kernel compacting memory; reused block after block, 2 MB costs ~1 ms)
SLOT_TABLE_CELLS = 1 << 18


@dataclass
class StragglerTotals:
    """Barrier events of the waves streamed so far, as columns (one array each, per group).

    Event columns (one value per barrier execution of a traced wave): `se`, `cu` (the scope:
    se or 0, cu or -1), `row`, `arrival`, `release`, `wave` (index into `names`), `window`,
    `lost`, `simd`, `top_count`; and per event its `top_count` (row, cycles) pairs end to end in
    `top_rows`, `top_sums`. Columns, not a tuple per event: a TK GEMM capture has ~115 000
    events, and the tuples (and their pickling between the two processes) cost more than the
    rest of the analysis.
    """

    barrier: Any  # bool per code row
    names: list[str] = field(default_factory=list)  # wave file name of each wave index
    parts: list[dict[str, Any]] = field(default_factory=list)  # event columns, one dict per group
    count: int = 0  # events in `parts`
    truncated: bool = False

    @classmethod
    def empty(cls, barrier_rows: np.ndarray) -> StragglerTotals:
        return cls(barrier_rows)


EVENT_COLUMNS = ("se", "cu", "row", "arrival", "release", "wave", "window", "lost", "simd",
                 "top_count")


def add_events(totals: StragglerTotals, part: dict[str, Any]) -> None:
    """Append one part's event columns (EVENT_COLUMNS + top_rows, top_sums) to `totals`."""
    count = len(part["row"])
    if count:
        totals.parts.append(part)
        totals.count += count


def events(totals: StragglerTotals) -> dict[str, Any]:
    """All event columns end to end (empty int64 arrays when there is none)."""
    import numpy as np

    names = (*EVENT_COLUMNS, "top_rows", "top_sums")
    if len(totals.parts) == 1:
        return totals.parts[0]
    return {name: np.concatenate([part[name] for part in totals.parts]) if totals.parts
            else np.zeros(0, np.int64) for name in names}


def _head(columns: dict[str, Any], count: int) -> dict[str, Any]:
    """The first `count` events of `columns`."""
    tops = int(columns["top_count"][:count].sum())
    head = {name: columns[name][:count] for name in EVENT_COLUMNS}
    head["top_rows"], head["top_sums"] = columns["top_rows"][:tops], columns["top_sums"][:tops]
    return head


def merge_stragglers(into: StragglerTotals, other: StragglerTotals) -> None:
    """Add `other`'s events (another part of the wave files) to `into`."""
    room = MAX_EVENTS - into.count
    taken = min(max(room, 0), other.count)
    if taken:
        part = _head(events(other), taken)
        part["wave"] = part["wave"] + len(into.names)
        add_events(into, part)
    into.names.extend(other.names)
    into.truncated = into.truncated or other.truncated or other.count > room


def add_straggler_group(totals: StragglerTotals, group: Group, idle: np.ndarray) -> None:
    """Record the barrier events of one group (`idle` per instruction, as accumulate computes).

    Vectorised over the group: each instruction belongs to the window of the next barrier of
    its wave; (window, row) lost cycles are summed with one sort, and the TOP_ROWS of each
    window kept by rank."""
    import numpy as np

    line = group.line
    if not len(line) or totals.truncated:
        return
    known = line < len(totals.barrier)
    barrier = np.zeros(len(line), bool)
    barrier[known] = totals.barrier[line[known]]
    positions = np.flatnonzero(barrier)
    if not len(positions):
        return
    room = MAX_EVENTS - totals.count
    if len(positions) > room:
        positions, totals.truncated = positions[:max(room, 0)], True
        if not len(positions):
            return
    owner = group.owner
    release = group.time[positions] + group.duration[positions]
    first = np.ones(len(positions), bool)
    first[1:] = owner[positions[1:]] != owner[positions[:-1]]
    window_start = np.where(first, group.begin[owner[positions]], np.roll(release, 1))
    # window of every instruction: the next barrier position of the same wave
    at = np.zeros(len(line), bool)
    at[positions] = True
    window = np.cumsum(at)  # barrier positions up to here ...
    # the next barrier is the wave's own while fewer barriers precede it than end the wave
    ran = group.lengths > 0
    limit = np.zeros(len(group.lengths), np.int64)
    limit[ran] = window[(group.start + group.lengths - 1)[ran]]
    window -= at  # ... before here (a barrier belongs to its own window)
    inside = window < limit[owner]
    inside &= ~barrier
    lost = group.stall + idle
    lost_total = np.bincount(window[inside], weights=lost[inside],
                             minlength=len(positions)).astype(np.int64)
    keep = inside & (lost > 0)
    rows_count = int(line.max()) + 1
    # (window, row) sums: one sort of the keys (ordered by window already), runs summed
    keys = window[keep] * rows_count + line[keep]
    by_key = np.argsort(keys, kind="stable")
    keys = keys[by_key]
    runs = np.flatnonzero(np.append(True, keys[1:] != keys[:-1])) if len(keys) else keys
    sums = np.add.reduceat(lost[keep][by_key], runs) if len(keys) else keys
    keys = keys[runs]
    events_of, rows_of = keys // rows_count, keys % rows_count
    order = _largest_first(events_of, sums)
    events_of, rows_of, sums = events_of[order], rows_of[order], sums[order]
    per_event = np.bincount(events_of, minlength=len(positions))
    starts = np.zeros(len(positions), np.int64)
    np.cumsum(per_event[:-1], out=starts[1:])
    top = np.arange(len(events_of)) - starts[events_of] < TOP_ROWS  # rank inside the event
    events_of, rows_of, sums = events_of[top], rows_of[top], sums[top]
    top_count = np.minimum(per_event, TOP_ROWS)
    waves = group.waves
    base = len(totals.names)
    totals.names.extend(wave.path.name for wave in waves)
    se = np.fromiter(((wave.se or 0) for wave in waves), np.int64, len(waves))
    cu = np.fromiter((-1 if wave.cu is None else wave.cu for wave in waves), np.int64, len(waves))
    simd = np.fromiter((wave.simd for wave in waves), np.int64, len(waves))
    wave_of = owner[positions]
    add_events(totals, {
        "se": se[wave_of], "cu": cu[wave_of], "row": line[positions],
        "arrival": group.time[positions], "release": release, "wave": wave_of + base,
        "window": group.time[positions] - window_start, "lost": lost_total,
        "simd": simd[wave_of], "top_count": top_count, "top_rows": rows_of,
        "top_sums": sums})


def _largest_first(events_of: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """The order of `np.lexsort((-sums, events_of))` (each event's sums largest first, ties in
    place) for `events_of` non-decreasing: one stable argsort of a packed key when it fits in
    an int64 (several times faster than the two-key lexsort)."""
    import numpy as np

    if not len(sums):
        return np.zeros(0, np.int64)
    high, low = int(sums.max()), int(sums.min())
    width = high - low + 1
    if (int(events_of[-1]) + 1) * width >= 1 << 62:
        return np.lexsort((-sums, events_of))
    return np.argsort(events_of * width + (high - sums), kind="stable")


def _instances(columns: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Events grouped into barrier instances: one CU and row, releases within the tolerance,
    one event per wave. Returns (the events in instance order, where each instance starts).

    Instance order: the (scope, row) keys in order of their first event, each key's events by
    release (ties in event order), an instance ending where the next release is more than
    RELEASE_TOLERANCE later or the next wave is already in it.
    """
    import numpy as np

    se, cu, row = columns["se"], columns["cu"], columns["row"]
    count = len(row)
    by_key = np.lexsort((row, cu, se))  # stable: each key's events in event order
    new = np.ones(count, bool)
    new[1:] = ((se[by_key][1:] != se[by_key][:-1]) | (cu[by_key][1:] != cu[by_key][:-1])
               | (row[by_key][1:] != row[by_key][:-1]))
    key = np.empty(count, np.int64)
    key[by_key] = np.cumsum(new) - 1
    rank = np.empty(int(new.sum()), np.int64)
    rank[np.argsort(by_key[new], kind="stable")] = np.arange(len(rank))  # by first event
    key = rank[key]
    order = np.lexsort((columns["release"], key))
    key, release, wave = key[order], columns["release"][order], columns["wave"][order]
    cut = np.ones(count, bool)
    cut[1:] = (key[1:] != key[:-1]) | (release[1:] - release[:-1] > RELEASE_TOLERANCE)
    # a wave twice within one run of close releases: that run is split where it repeats
    segment = np.cumsum(cut) - 1
    by_wave = np.lexsort((wave, segment))
    twice = ((segment[by_wave][1:] == segment[by_wave][:-1])
             & (wave[by_wave][1:] == wave[by_wave][:-1]))
    if twice.any():
        bounds = np.append(np.flatnonzero(cut), count)
        waves = wave.tolist()
        for run in np.unique(segment[by_wave][1:][twice]).tolist():
            seen: set[int] = set()
            for index in range(int(bounds[run]), int(bounds[run + 1])):
                if waves[index] in seen:
                    cut[index] = True
                    seen = set()
                seen.add(waves[index])
    return order, np.flatnonzero(cut)


def _most_frequent(groups: np.ndarray, values: np.ndarray) -> dict[int, tuple[int, int, int]]:
    """Per group: (the value seen most often, its count, the group's count); on ties the value
    seen first (a dict counted in order, then sorted by count)."""
    import numpy as np

    if not len(groups):
        return {}
    by = np.lexsort((values, groups))  # stable: each pair's occurrences in order
    g, v = groups[by], values[by]
    new = np.ones(len(g), bool)
    new[1:] = (g[1:] != g[:-1]) | (v[1:] != v[:-1])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(g)))
    first_seen = by[starts]
    pick = np.lexsort((first_seen, -counts, g[starts]))
    pair_group = g[starts][pick]
    lead = np.ones(len(pick), bool)
    lead[1:] = pair_group[1:] != pair_group[:-1]
    totals = np.bincount(groups)
    return {group: (value, count, int(totals[group])) for group, value, count in zip(
        pair_group[lead].tolist(), v[starts][pick][lead].tolist(), counts[pick][lead].tolist(),
        strict=True)}


def _slots_of_pairs(slot_instance: np.ndarray, slot_rows: np.ndarray, pair_instance: np.ndarray,
                    pair_rows: np.ndarray, span: int, instances: int) -> np.ndarray:
    """For each (instance, row) pair, the slot of the same (instance, row), -1 for none.

    Both are ordered by instance; rows are below `span`. A dense (instance, row) table per block
    of instances (SLOT_TABLE_CELLS cells, reset cell by cell): no sort of the slots.
    """
    import numpy as np

    found = np.full(len(pair_instance), -1, np.int64)
    if not len(slot_instance) or not len(pair_instance):
        return found
    block = max(1, SLOT_TABLE_CELLS // span)
    table = np.full(min(block, instances) * span, -1, np.int64)
    edges = np.arange(0, instances + block, block)
    slot_bounds = np.searchsorted(slot_instance, edges).tolist()
    pair_bounds = np.searchsorted(pair_instance, edges).tolist()
    for index, low in enumerate(range(0, instances, block)):
        s0, s1 = slot_bounds[index], slot_bounds[index + 1]
        p0, p1 = pair_bounds[index], pair_bounds[index + 1]
        if s1 == s0 or p1 == p0:
            continue
        cells = (slot_instance[s0:s1] - low) * span + slot_rows[s0:s1]
        table[cells] = np.arange(s0, s1)
        found[p0:p1] = table[(pair_instance[p0:p1] - low) * span + pair_rows[p0:p1]]
        table[cells] = -1
    return found


def straggler_summary(totals: StragglerTotals,
                      untraced_factor: float = DEFAULT_STRUCTURE.untraced_factor) -> dict | None:
    """The `stragglers` object of `waves` (docs/waves-json.md), None when no barrier ran. An
    instance whose least wait exceeds `untraced_factor` × its row's usual least waited for a
    partner wave the capture did not trace (the `structure` thresholds concern).

    Vectorised over all instances; every float is computed by the operations, in the order, of
    the per-instance definition in the module docstring (each wave's excess subtracted in the
    instance's order, sums taken in row order), so the figures are those of a plain loop.
    """
    if not totals.count:
        return None
    import numpy as np

    columns = events(totals)
    order, starts = _instances(columns)
    count = len(order)
    sizes = np.diff(np.append(starts, count))
    instance = np.repeat(np.arange(len(starts)), sizes)
    row_of_event = columns["row"][order]
    durations = columns["release"][order] - columns["arrival"][order]
    spent = columns["window"][order] - columns["lost"][order]  # non-lost cycles of each window
    top_offsets = np.zeros(len(columns["top_count"]) + 1, np.int64)
    np.cumsum(columns["top_count"], out=top_offsets[1:])
    top_start, top_count = top_offsets[:-1][order], columns["top_count"][order]

    stall = np.add.reduceat(durations, starts)
    least = np.minimum.reduceat(durations, starts)
    wait = stall - sizes * least
    rows, first_instance, row_of = np.unique(row_of_event[starts], return_index=True,
                                             return_inverse=True)
    n_rows = len(rows)

    def per_row(mask: np.ndarray, values: np.ndarray | None = None) -> list[int]:
        summed = np.zeros(n_rows, np.int64)
        np.add.at(summed, row_of[mask], 1 if values is None else values[mask])
        return summed.tolist()

    multi = sizes > 1
    # each row's usual least wait: the middle (upper) of its multi-wave instances' least waits
    by = np.lexsort((least[multi], row_of[multi]))
    middle_rows, middle_values = row_of[multi][by], least[multi][by]
    per_row_multi = np.bincount(middle_rows, minlength=n_rows)
    usual = np.ones(n_rows, np.int64)
    has = per_row_multi > 0
    usual[has] = middle_values[np.searchsorted(middle_rows, np.flatnonzero(has))
                               + per_row_multi[has] // 2]
    untraced = multi & (least > untraced_factor * np.maximum(usual, 1)[row_of])
    charged = multi & ~untraced
    # the straggler: the first wave of its instance with the least duration (it arrived last)
    lowest = np.flatnonzero(durations == least[instance])
    straggler = lowest[np.append(True, instance[lowest][1:] != instance[lowest][:-1])]

    which = np.flatnonzero(charged)
    slot_of_instance = np.full(len(starts), -1, np.int64)
    slot_of_instance[which] = np.arange(len(which))
    share = 1.0 / (sizes[which] - 1)
    leader = straggler[which]
    # excess per row: the straggler's top rows minus each other wave's share of the same rows
    excess_instance = np.repeat(np.arange(len(which)), top_count[leader])
    excess_at = np.repeat(top_start[leader] - np.cumsum(top_count[leader]) + top_count[leader],
                          top_count[leader]) + np.arange(len(excess_instance))
    excess_rows = columns["top_rows"][excess_at]
    excess = columns["top_sums"][excess_at].astype(np.float64)
    work = spent[leader].astype(np.float64)
    others = np.flatnonzero(charged[instance])
    others = others[others != straggler[instance[others]]]  # in instance order
    other_slot = slot_of_instance[instance[others]]
    np.subtract.at(work, other_slot, spent[others].astype(np.float64) * share[other_slot])
    pair_slot = np.repeat(other_slot, top_count[others])
    pair_at = np.repeat(top_start[others] - np.cumsum(top_count[others]) + top_count[others],
                        top_count[others]) + np.arange(len(pair_slot))
    pair_rows = columns["top_rows"][pair_at]
    span = int(max(excess_rows.max(initial=0), pair_rows.max(initial=0))) + 1
    found = _slots_of_pairs(excess_instance, excess_rows, pair_slot, pair_rows, span, len(which))
    hit = found >= 0
    # ufunc.at applies the subtractions in order: each row's in the instance's wave order
    np.subtract.at(excess, found[hit],
                   columns["top_sums"][pair_at][hit].astype(np.float64) * share[pair_slot[hit]])
    # each instance's positive excesses in row order, `work` (key -1) last
    flat_slot = np.concatenate((excess_instance, np.arange(len(which))))
    flat_key = np.concatenate((excess_rows, np.full(len(which), -1, np.int64)))
    flat_value = np.concatenate((excess, work))
    flat = np.argsort(flat_slot, kind="stable")
    flat = flat[flat_value[flat] > 0]
    flat_slot, flat_key, flat_value = flat_slot[flat], flat_key[flat], flat_value[flat]
    total = np.zeros(len(which))
    np.add.at(total, flat_slot, flat_value)  # in order: the sum of the positive excesses
    charged_wait = wait[which]
    explained = (total != 0) & (charged_wait != 0)
    use = explained[flat_slot]
    cycles = charged_wait[flat_slot[use]].astype(np.float64) * flat_value[use] / total[flat_slot[use]]
    charge_row = row_of[which][flat_slot[use]]
    charge_keys, first_charge, charge_of = np.unique(charge_row * (span + 1) + flat_key[use] + 1,
                                                    return_index=True, return_inverse=True)
    charge_sums = np.bincount(charge_of, weights=cycles, minlength=len(charge_keys))
    charges: list[dict] = [{} for _ in range(n_rows)]
    for at in np.argsort(first_charge, kind="stable").tolist():  # first charged first
        key = int(charge_keys[at])
        row_index, row_key = divmod(key, span + 1)
        charges[row_index]["work" if row_key == 0 else row_key - 1] = float(charge_sums[at])

    last_waves = _most_frequent(row_of[which], columns["wave"][order][leader])
    last_simds = _most_frequent(row_of[which], columns["simd"][order][leader])
    instances, single = per_row(np.ones(len(starts), bool)), per_row(~multi)
    untraced_count, untraced_wait = per_row(untraced), per_row(untraced, stall)
    stall_cycles, wait_cycles = per_row(np.ones(len(starts), bool), stall), per_row(charged, wait)
    unexplained = np.zeros(n_rows, np.int64)
    np.add.at(unexplained, row_of[which][~explained], charged_wait[~explained])
    unexplained_cycles = unexplained.tolist()
    entries = []
    for at in np.argsort(first_instance, kind="stable").tolist():  # rows by first instance
        entries.append({"index": int(rows[at]), "instances": instances[at],
                        "single_wave": single[at], "untraced": untraced_count[at],
                        "stall_cycles": stall_cycles[at], "wait_cycles": wait_cycles[at],
                        "untraced_wait_cycles": untraced_wait[at],
                        "unexplained_cycles": unexplained_cycles[at], "row": at})
    out = []
    for entry in sorted(entries, key=lambda e: -e["wait_cycles"]):
        at = entry.pop("row")
        charged_rows = sorted(charges[at].items(), key=lambda kv: -kv[1])
        simd = last_simds.get(at)
        entry["last_simd"] = ({"simd": simd[0], "share": round(simd[1] / max(simd[2], 1), 4)}
                              if simd else None)
        entry["work_cycles"] = int(round(dict(charged_rows).get("work", 0.0)))
        rows_charged = [(key, cycles) for key, cycles in charged_rows if key != "work"]
        entry["charged"] = [{"index": key, "cycles": int(round(cycles))}
                            for key, cycles in rows_charged[:TOP_CHARGED]]
        entry["rest_cycles"] = int(round(sum(c for _, c in rows_charged[TOP_CHARGED:])))
        last = last_waves.get(at)
        entry["last_wave"] = ({"file": totals.names[last[0]], "times": last[1],
                               "share": round(last[1] / max(last[2], 1), 4)} if last else None)
        out.append(entry)
    return {
        "definitions": "kerneltrace/analysis/waves/stragglers.py; docs/waves-json.md#stragglers",
        "events": totals.count,
        "truncated": totals.truncated,
        "barriers": out,
        "wait_cycles": sum(e["wait_cycles"] for e in out),
        "stall_cycles": sum(e["stall_cycles"] for e in out),
    }
