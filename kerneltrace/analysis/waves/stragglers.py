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


@dataclass
class StragglerTotals:
    """Barrier events of the waves streamed so far (one tuple each)."""

    barrier: Any  # bool per code row
    # (scope, row, arrival, release, wave file, window, lost, rows, cycles, simd)
    events: list[tuple] = field(default_factory=list)
    truncated: bool = False

    @classmethod
    def empty(cls, barrier_rows: np.ndarray) -> StragglerTotals:
        return cls(barrier_rows)


def merge_stragglers(into: StragglerTotals, other: StragglerTotals) -> None:
    """Add `other`'s events (another part of the wave files) to `into`."""
    room = MAX_EVENTS - len(into.events)
    into.events.extend(other.events[:max(room, 0)])
    into.truncated = into.truncated or other.truncated or len(other.events) > room


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
    room = MAX_EVENTS - len(totals.events)
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
    window = np.searchsorted(positions, np.arange(len(line)), side="left")
    inside = window < len(positions)
    inside[inside] &= owner[positions[window[inside]]] == owner[inside]
    inside &= ~barrier
    lost = group.stall + idle
    lost_total = np.bincount(window[inside], weights=lost[inside],
                             minlength=len(positions)).astype(np.int64)
    keep = inside & (lost > 0)
    rows_count = int(line.max()) + 1
    keys, inverse = np.unique(window[keep] * rows_count + line[keep], return_inverse=True)
    sums = np.bincount(inverse, weights=lost[keep]).astype(np.int64) if len(keys) else keys
    events_of, rows_of = keys // rows_count, keys % rows_count
    order = np.lexsort((-sums, events_of))
    events_of, rows_of, sums = events_of[order], rows_of[order], sums[order]
    starts = np.searchsorted(events_of, np.arange(len(positions) + 1))
    rank = np.arange(len(events_of)) - starts[events_of]
    top = rank < TOP_ROWS
    events_of, rows_of, sums = events_of[top], rows_of[top], sums[top]
    bounds = np.searchsorted(events_of, np.arange(len(positions) + 1)).tolist()
    rows_list, sums_list = rows_of.tolist(), sums.tolist()
    arrival = group.time[positions].tolist()
    wave_of = owner[positions].tolist()
    scopes = [((w.se or 0), -1 if w.cu is None else w.cu) for w in group.waves]
    names = [w.path.name for w in group.waves]
    simds = [w.simd for w in group.waves]
    windows = (group.time[positions] - window_start).tolist()
    totals.events.extend(
        (scopes[w], row, a, r, names[w], span, lost_k, rows_list[low:high], sums_list[low:high],
         simds[w])
        for w, row, a, r, span, lost_k, low, high in zip(
            wave_of, line[positions].tolist(), arrival, release.tolist(), windows,
            lost_total.tolist(), bounds[:-1], bounds[1:], strict=True))


def _instances(events: list[tuple]) -> list[list[tuple]]:
    """Events grouped into barrier instances: one CU and row, releases within the tolerance,
    one event per wave."""
    by_key: dict[tuple, list[tuple]] = {}
    for event in events:
        by_key.setdefault((event[0], event[1]), []).append(event)
    out = []
    for key_events in by_key.values():
        key_events.sort(key=lambda e: e[3])
        current: list[tuple] = []
        for event in key_events:
            if current and (event[3] - current[-1][3] > RELEASE_TOLERANCE
                            or event[4] in {e[4] for e in current}):
                out.append(current)
                current = []
            current.append(event)
        if current:
            out.append(current)
    return out


def _excess(instance: list[tuple], straggler: tuple) -> dict[Any, float]:
    """The straggler's lost cycles per row (and `work`) above the other waves' mean."""
    others = [e for e in instance if e is not straggler]
    share = 1.0 / len(others)
    excess = dict(zip(straggler[7], straggler[8], strict=True))
    excess["work"] = straggler[5] - straggler[6]
    for event in others:
        excess["work"] -= (event[5] - event[6]) * share
        for row, cycles in zip(event[7], event[8], strict=True):
            if row in excess:
                excess[row] -= cycles * share
    return {row: value for row, value in excess.items() if value > 0}


def straggler_summary(totals: StragglerTotals,
                      untraced_factor: float = DEFAULT_STRUCTURE.untraced_factor) -> dict | None:
    """The `stragglers` object of `waves` (docs/waves-json.md), None when no barrier ran. An
    instance whose least wait exceeds `untraced_factor` × its row's usual least waited for a
    partner wave the capture did not trace (the `structure` thresholds concern)."""
    if not totals.events:
        return None
    instances = _instances(totals.events)
    least_of_row: dict[int, list[int]] = {}
    for instance in instances:
        if len(instance) > 1:
            least_of_row.setdefault(instance[0][1], []).append(min(e[3] - e[2] for e in instance))
    usual = {row: sorted(values)[len(values) // 2] for row, values in least_of_row.items()}
    rows: dict[int, dict] = {}
    for instance in instances:
        row = instance[0][1]
        entry = rows.setdefault(row, {"index": row, "instances": 0, "single_wave": 0,
                                      "untraced": 0, "stall_cycles": 0, "wait_cycles": 0,
                                      "untraced_wait_cycles": 0, "unexplained_cycles": 0,
                                      "charged": {}, "last_waves": {}, "last_simds": {}})
        durations = [e[3] - e[2] for e in instance]
        entry["stall_cycles"] += sum(durations)
        entry["instances"] += 1
        if len(instance) < 2:
            entry["single_wave"] += 1
            continue
        least = min(durations)
        wait = sum(d - least for d in durations)
        if least > untraced_factor * max(usual.get(row, 1), 1):
            entry["untraced"] += 1
            entry["untraced_wait_cycles"] += sum(durations)
            continue
        straggler = instance[durations.index(least)]
        entry["wait_cycles"] += wait
        entry["last_waves"][straggler[4]] = entry["last_waves"].get(straggler[4], 0) + 1
        entry["last_simds"][straggler[9]] = entry["last_simds"].get(straggler[9], 0) + 1
        excess = _excess(instance, straggler)
        total = sum(excess.values())
        if not total or not wait:
            entry["unexplained_cycles"] += wait
            continue
        for key, cycles in excess.items():
            entry["charged"][key] = entry["charged"].get(key, 0.0) + wait * cycles / total
    out = []
    for entry in sorted(rows.values(), key=lambda e: -e["wait_cycles"]):
        charged = sorted(entry.pop("charged").items(), key=lambda kv: -kv[1])
        last = sorted(entry.pop("last_waves").items(), key=lambda kv: -kv[1])
        simds = sorted(entry.pop("last_simds").items(), key=lambda kv: -kv[1])
        counted = max(sum(n for _, n in simds), 1)
        entry["last_simd"] = ({"simd": simds[0][0], "share": round(simds[0][1] / counted, 4)}
                              if simds else None)
        entry["work_cycles"] = int(round(dict(charged).get("work", 0.0)))
        rows_charged = [(key, cycles) for key, cycles in charged if key != "work"]
        entry["charged"] = [{"index": key, "cycles": int(round(cycles))}
                            for key, cycles in rows_charged[:TOP_CHARGED]]
        entry["rest_cycles"] = int(round(sum(c for _, c in rows_charged[TOP_CHARGED:])))
        entry["last_wave"] = ({"file": last[0][0], "times": last[0][1],
                               "share": round(last[0][1] / max(sum(n for _, n in last), 1), 4)}
                              if last else None)
        out.append(entry)
    return {
        "definitions": "kerneltrace/analysis/waves/stragglers.py; docs/waves-json.md#stragglers",
        "events": len(totals.events),
        "truncated": totals.truncated,
        "barriers": out,
        "wait_cycles": sum(e["wait_cycles"] for e in out),
        "stall_cycles": sum(e["stall_cycles"] for e in out),
    }
