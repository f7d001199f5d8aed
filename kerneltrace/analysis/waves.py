"""Wave-level analyses over per-wave ATT files: states, waitcnt attribution, loops, consistency, occupancy.

`analyze_waves(dispatch_dir, table)` streams the wave files (kerneltrace.readers.wavefile, one
batch at a time) into small per-line and per-loop accumulators and returns the `waves` object
of the `kerneltrace.hotspots/2` document (field reference: docs/waves-json.md).

Definitions (the "why" of each rule is in docs/waves-json.md):
* waitcnt attribution: each execution of an `s_waitcnt` charges its stall to the *youngest*
  drained producer (the producer line of the wave's `waitcnt` list issued most recently before
  the wait). Memory results on one counter return in issue order, so the wait is released when
  that youngest load returns; older ones had already returned.
* loops: a taken branch (decoder category JUMP) to a lower code row is a back edge b → t; a wave
  enters the loop when row t runs without coming from that back edge and leaves at the first
  following execution of b that does not jump back. Iterations = back jumps + entries.
* mfma_busy_fraction: per SIMD, Σ MFMA pass cycles issued inside the loop by all its waves divided
  by the time at least one of its waves was inside the loop (the SIMD's MFMA pipe is shared);
  summed over SIMDs before dividing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile import (
    CATEGORY_JUMP,
    WaveFile,
    iter_wave_files,
    wave_files,
)

if TYPE_CHECKING:
    import numpy as np

    from kerneltrace.readers.codejson import CodeRow, CodeTable

HOT_WAITS = 10  # waits reported, by stall
HOT_LOOPS = 5
EXTREME_WAVES = 3  # longest / shortest waves listed
SERIES_POINTS = 64  # occupancy series length (for charts)
PENDING_LIMIT = 1 << 18  # attribution entries buffered before folding (bounds memory)
GROUP_WAVES = 512  # waves accumulated per numpy pass
GROUP_INSTRUCTIONS = 1 << 16  # … or instructions (bounds memory: a few MB of temporaries)
STATE_KEYS = ("idle", "exec", "wait", "stall")  # timeline states 1..4


@dataclass
class _LoopTotals:
    last_index: int = 0  # highest row that jumps back to the header
    iterations: int = 0  # header executions
    entries: int = 0  # times a wave entered the loop (header reached without a back jump)
    measured_iterations: int = 0  # iterations that jumped back (their length is measured)
    measured_cycles: int = 0  # Σ time from loop entry to the last header execution
    mfma_cycles: int = 0
    waves: int = 0
    prologue: int = 0
    epilogue: int = 0
    wave_cycles: int = 0
    # per SIMD (se, simd): intervals inside the loop and MFMA pass cycles issued there
    simd_intervals: dict[tuple, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    simd_mfma: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))


@dataclass
class _Totals:
    """Everything accumulated while streaming the wave files."""

    rows: int
    hits: Any
    latency: Any
    stall: Any
    idle: Any
    files: int = 0
    bytes: int = 0
    layouts: set[str] = field(default_factory=set)
    skipped: list[dict[str, str]] = field(default_factory=list)
    per_wave: list[tuple] = field(default_factory=list)
    wait_cycles: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))
    wait_count: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))
    wait_unattributed: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    wait_producers: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    # per-wave arrays not yet folded into the dicts above (see _flush_waits)
    pending_pairs: list[Any] = field(default_factory=list)
    pending_attributions: list[tuple] = field(default_factory=list)
    pending_size: int = 0
    loops: dict[int, _LoopTotals] = field(default_factory=lambda: defaultdict(_LoopTotals))
    traced_cu: dict[int, int] = field(default_factory=dict)


def mfma_pass_cycles_by_row(table: CodeTable) -> tuple[dict[int, int], list[int]]:
    """({row index: MFMA pass cycles}, MFMA rows whose variant has no sourced latency)."""
    from kerneltrace.isa.classify import MFMA, classify
    from kerneltrace.isa.mfma import mfma_info

    cycles: dict[int, int] = {}
    unknown: list[int] = []
    for row in table.rows:
        if classify(row.asm) != MFMA:
            continue
        info = mfma_info(row.asm)
        if info is None:
            unknown.append(row.index)
        else:
            cycles[row.index] = info.cycles
    return cycles, unknown


def analyze_waves(dispatch_dir: Path, table: CodeTable) -> dict:
    """The `waves` object of the hotspot document (kerneltrace.hotspots/2) for one dispatch dir."""
    import numpy as np

    dispatch_dir = Path(dispatch_dir)
    paths = wave_files(dispatch_dir)
    rows = {row.index: row for row in table.rows}
    size = max([*rows, 0]) + 1
    totals = _Totals(size, *(np.zeros(size, np.int64) for _ in range(4)))
    mfma_rows, mfma_unknown = mfma_pass_cycles_by_row(table)
    mfma_by_line = np.zeros(size, np.int64)
    for index, cycles in mfma_rows.items():
        mfma_by_line[index] = cycles
    group: list[WaveFile] = []
    group_instructions = 0
    for item in iter_wave_files(paths):
        if isinstance(item, InputError):
            totals.skipped.append({"file": Path(item.where).name, "error": item.what})
            continue
        group.append(item)
        group_instructions += len(item.instructions)
        if len(group) >= GROUP_WAVES or group_instructions >= GROUP_INSTRUCTIONS:
            _add_group(totals, group, mfma_by_line)
            group, group_instructions = [], 0
    _add_group(totals, group, mfma_by_line)
    _flush_waits(totals)
    return {
        "files": totals.files,
        "bytes": totals.bytes,
        "waves": len(totals.per_wave),
        "layout": "/".join(sorted(totals.layouts)) or None,
        "skipped": totals.skipped,
        **_state_summary(totals),
        "waitcnt": _waitcnt_summary(totals, rows),
        "loops": _loop_summary(totals, rows, mfma_unknown),
        "consistency": _consistency(dispatch_dir, paths, totals, table),
        "occupancy": occupancy_summary(dispatch_dir, totals.traced_cu),
    }


def _grow(totals: _Totals, size: int) -> None:
    import numpy as np

    if size <= totals.rows:
        return
    for name in ("hits", "latency", "stall", "idle"):
        grown = np.zeros(size, np.int64)
        grown[:totals.rows] = getattr(totals, name)
        setattr(totals, name, grown)
    totals.rows = size


def _add_group(totals: _Totals, waves: list[WaveFile], mfma_by_line: np.ndarray) -> None:
    """Accumulate a group of waves with numpy calls over the whole group (not per wave).

    Thousands of tiny waves (moe_reduce: 4112 waves of ~170 instructions) would otherwise spend
    their time in per-call numpy overhead. Each instruction carries its wave's index `w`, and
    per-wave operations become operations on keys that start with `w`.
    """
    import numpy as np

    if not waves:
        return
    for wave in waves:
        totals.files += 1
        totals.bytes += wave.nbytes
        totals.layouts.add(wave.layout)
        if wave.cu is not None and wave.se is not None and len(wave.instructions):
            totals.traced_cu.setdefault(wave.se, wave.cu)
    count = len(waves)
    # Time per state and wave: one bincount over (wave, state) keys.
    timeline_lengths = np.array([len(wave.timeline) for wave in waves])
    states = np.zeros((count, 5), np.int64)
    if timeline_lengths.sum():
        timeline = np.concatenate([wave.timeline for wave in waves])
        owner = np.repeat(np.arange(count), timeline_lengths)
        known = (timeline[:, 0] >= 0) & (timeline[:, 0] <= 4)
        states = np.bincount(owner[known] * 5 + timeline[known, 0], weights=timeline[known, 1],
                             minlength=5 * count).astype(np.int64).reshape(count, 5)
    lengths = np.array([len(wave.instructions) for wave in waves])
    for wave, wave_states, n_instructions in zip(waves, states[:, 1:5].tolist(), lengths.tolist(),
                                                  strict=True):
        totals.per_wave.append((wave.path.name, wave.se, wave.simd, wave.slot, wave.begin,
                                wave.end, n_instructions, *wave_states))
    if not lengths.sum():
        return
    ins = np.concatenate([wave.instructions for wave in waves])
    owner = np.repeat(np.arange(count), lengths)
    wave_start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    time, category, stall, duration, line = ins.T
    _grow(totals, int(line.max()) + 1)
    # The decoder's accumulation (rocprof-formats.md §8.10): idle = gap after the latest end so
    # far in the wave. A per-wave running max over the group: offset wave w by w * span so
    # that no value of an earlier wave can exceed a later wave's values.
    begins = np.array([wave.begin for wave in waves])
    previous = np.empty_like(time)
    previous[1:] = time[:-1] + duration[:-1]
    has_instructions = lengths > 0
    previous[wave_start[has_instructions]] = begins[has_instructions]
    low = min(int(previous.min()), int(time.min()))
    span = int(max(previous.max(), (time + duration).max())) - low + 1
    offset = owner * span
    prev_end = np.maximum.accumulate(previous - low + offset) - offset + low
    idle = np.maximum(time - prev_end, 0)
    n_rows = totals.rows
    totals.hits += np.bincount(line, minlength=n_rows)
    for name, values in (("latency", duration), ("stall", stall), ("idle", idle)):
        # float64 sums of int64 values are exact below 2**53 cycles per group
        getattr(totals, name)[:] += np.bincount(line, weights=values, minlength=n_rows).astype(np.int64)
    _attribute_waits(totals, waves, owner, line, stall)
    # Loops are per wave, but only waves with a taken backward branch need a look.
    backward = (category[:-1] == CATEGORY_JUMP) & (line[1:] < line[:-1]) & (owner[1:] == owner[:-1])
    for index in np.unique(owner[:-1][backward]).tolist():
        _add_loops(totals, waves[index], mfma_by_line)


def _attribute_waits(totals: _Totals, waves: list[WaveFile], owner: np.ndarray,
                     line: np.ndarray, stall: np.ndarray) -> None:
    """Charge each wait execution's stall to its youngest drained producer (module docstring)."""
    import numpy as np

    entry_counts = [len(wave.waitcnt_lines) for wave in waves]
    if not sum(entry_counts):
        return
    rows = int(max(line.max(), max(int(w.waitcnt_producers[:, 0].max(initial=0)) for w in waves),
                   max(int(w.waitcnt_lines.max(initial=0)) for w in waves))) + 1
    n = len(line)
    if len(waves) * rows * (n + 1) >= 1 << 62:  # keys would overflow int64: split the group
        half = len(waves) // 2
        cut = int(np.searchsorted(owner, half))
        _attribute_waits(totals, waves[:half], owner[:cut], line[:cut], stall[:cut])
        _attribute_waits(totals, waves[half:], owner[cut:] - half, line[cut:], stall[cut:])
        return
    # (wave, wait row, producer row) of every waitcnt entry, as sorted unique keys.
    pair_counts = np.concatenate([np.diff(wave.waitcnt_offsets) for wave in waves])
    wait_rows = np.concatenate([wave.waitcnt_lines for wave in waves])
    entry_owner = np.repeat(np.arange(len(waves)), entry_counts)
    producers = np.concatenate([wave.waitcnt_producers[:, 0] for wave in waves])
    wave_wait = np.repeat(entry_owner * rows + wait_rows, pair_counts)
    pair_keys = np.unique(wave_wait * rows + producers)
    pair_wave_wait, pair_producer = pair_keys // rows, pair_keys % rows
    totals.pending_pairs.append((pair_wave_wait % rows) * (1 << 32) + pair_producer)
    # Executions of a listed wait row (in its own wave) that stalled.
    instance_key = owner * rows + line
    listed = np.unique(pair_wave_wait)
    where = np.minimum(np.searchsorted(listed, instance_key), len(listed) - 1)
    positions = np.flatnonzero((listed[where] == instance_key) & (stall > 0))
    if not len(positions):
        return
    keys = instance_key[positions]
    first = np.searchsorted(pair_wave_wait, keys, "left")
    per_instance = np.searchsorted(pair_wave_wait, keys, "right") - first
    instance = np.repeat(np.arange(len(positions)), per_instance)
    starts = np.cumsum(per_instance) - per_instance
    candidate = first[instance] + np.arange(len(instance)) - starts[instance]
    producer = pair_producer[candidate]
    # Last execution of each producer row before the wait, in the same wave: search the
    # sorted (wave, row, position) keys.
    occurrence = np.sort(instance_key * (n + 1) + np.arange(n))
    wanted = owner[positions][instance] * rows + producer
    found = np.searchsorted(occurrence, wanted * (n + 1) + positions[instance]) - 1
    found_key = occurrence[np.maximum(found, 0)]
    valid = (found >= 0) & (found_key // (n + 1) == wanted)
    issued_at = np.where(valid, found_key % (n + 1), -1)
    youngest = np.maximum.reduceat(issued_at, starts)
    is_youngest = valid & (issued_at == youngest[instance])
    # one winner per instance (the same producer row may be listed twice: take the first)
    winner = np.full(len(positions), -1, np.int64)
    chosen = np.flatnonzero(is_youngest)[::-1]
    winner[instance[chosen]] = producer[chosen]
    totals.pending_attributions.append((line[positions], winner, stall[positions]))
    totals.pending_size += len(positions) + len(pair_keys)
    if totals.pending_size > PENDING_LIMIT:
        _flush_waits(totals)


def _flush_waits(totals: _Totals) -> None:
    """Fold the per-wave attribution arrays into the totals (one numpy pass for many waves)."""
    import numpy as np

    if totals.pending_pairs:
        pairs = np.unique(np.concatenate(totals.pending_pairs))
        for wait_row, producer_row in zip((pairs >> 32).tolist(), (pairs & 0xFFFFFFFF).tolist(),
                                          strict=True):
            totals.wait_producers[wait_row].add(producer_row)
    if totals.pending_attributions:
        wait_rows, winners, stalls = (np.concatenate(parts)
                                      for parts in zip(*totals.pending_attributions, strict=True))
        # winner -1 (no producer issued before the wait) → unattributed; +1 keeps keys >= 0
        keys, inverse = np.unique(wait_rows * (1 << 32) + (winners + 1), return_inverse=True)
        cycles = np.bincount(inverse, weights=stalls).astype(np.int64)
        counts = np.bincount(inverse)
        for key, total, count in zip(keys.tolist(), cycles.tolist(), counts.tolist(), strict=True):
            wait_row, producer_row = key >> 32, (key & 0xFFFFFFFF) - 1
            if producer_row < 0:
                totals.wait_unattributed[wait_row] += total
            else:
                totals.wait_cycles[(wait_row, producer_row)] += total
                totals.wait_count[(wait_row, producer_row)] += count
    totals.pending_pairs.clear()
    totals.pending_attributions.clear()
    totals.pending_size = 0


def _add_loops(totals: _Totals, wave: WaveFile, mfma_by_line: np.ndarray) -> None:
    import numpy as np

    ins = wave.instructions
    time, category, line = ins[:, 0], ins[:, 1], ins[:, 4]
    jumps = np.flatnonzero((category[:-1] == CATEGORY_JUMP) & (line[1:] < line[:-1]))
    if not len(jumps):
        return
    in_range = line < len(mfma_by_line)
    pass_cycles = np.where(in_range, mfma_by_line[np.where(in_range, line, 0)], 0)
    cumulative_mfma = np.concatenate(([0], np.cumsum(pass_cycles)))
    for header in np.unique(line[jumps + 1]).tolist():
        back = jumps[line[jumps + 1] == header]
        headers = np.flatnonzero(line == header)
        # An entry reaches the header other than by a back jump; the wave's first header
        # execution is one too (rotated loops are entered by a jump from a pre-header placed
        # after the body, which looks like a back jump).
        entries = np.union1d(np.setdiff1d(headers, back + 1, assume_unique=True), headers[:1])
        latches = np.setdiff1d(back, entries - 1, assume_unique=True)
        if not len(latches):
            continue  # a jump back to straight-line code (e.g. an outlined block), not a loop
        # Header executions grouped by the entry (segment) they follow.
        segment = np.searchsorted(entries, headers, "right") - 1
        headers, segment = headers[segment >= 0], segment[segment >= 0]
        last_header = np.full(len(entries), -1)
        np.maximum.at(last_header, segment, headers)
        complete = last_header > entries  # segments with at least one jump back
        if not complete.any():
            continue
        starts, stops = entries[complete], last_header[complete]
        loop = totals.loops[header]
        loop.last_index = max(loop.last_index, int(line[latches].max()))
        loop.iterations += len(headers)
        loop.entries += len(entries)
        loop.measured_iterations += len(headers) - len(entries)
        spans = time[stops] - time[starts]
        measured = int(spans.sum())
        loop.measured_cycles += measured
        mfma = int((cumulative_mfma[stops] - cumulative_mfma[starts]).sum())
        loop.mfma_cycles += mfma
        loop.waves += 1
        per_iteration = measured / max(len(headers) - len(entries), 1)
        loop.prologue += int(time[entries[0]]) - wave.begin
        loop_end = int(time[last_header.max()]) + per_iteration
        loop.epilogue += max(int(wave.end - loop_end), 0)
        loop.wave_cycles += wave.end - wave.begin
        simd = (wave.se, wave.simd)
        loop.simd_intervals[simd].extend(zip(time[starts].tolist(), time[stops].tolist(),
                                             strict=True))
        loop.simd_mfma[simd] += mfma


def _distribution(values: np.ndarray) -> dict[str, float | int | None]:
    import numpy as np

    if not len(values):
        return {"min": None, "p50": None, "p90": None, "max": None, "mean": None}
    return {"min": round(float(values.min()), 4), "p50": round(float(np.percentile(values, 50)), 4),
            "p90": round(float(np.percentile(values, 90)), 4),
            "max": round(float(values.max()), 4), "mean": round(float(values.mean()), 4)}


def _state_summary(totals: _Totals) -> dict[str, Any]:
    import numpy as np

    if not totals.per_wave:
        return {"states": {key: None for key in STATE_KEYS}, "state_shares": None,
                "per_wave": None, "timing": None, "longest_waves": [], "shortest_waves": []}
    table = np.array([record[4:] for record in totals.per_wave], dtype=np.int64)
    begin, end, _, *state_columns = table.T
    state_sums = {key: int(column.sum()) for key, column in zip(STATE_KEYS, state_columns, strict=True)}
    all_states = sum(state_sums.values())
    per_wave_total = np.maximum(sum(state_columns), 1)
    durations = end - begin
    order = np.argsort(durations, kind="stable")

    def describe(i: int) -> dict[str, Any]:
        name, se, simd, slot, wave_begin, wave_end, insts, *states = totals.per_wave[i]
        return {"file": name, "se": se, "simd": simd, "slot": slot, "begin": wave_begin,
                "end": wave_end, "duration": wave_end - wave_begin, "instructions": insts,
                "states": dict(zip(STATE_KEYS, states, strict=True))}

    return {
        "states": state_sums,
        "state_shares": ({key: round(value / all_states, 4) for key, value in state_sums.items()}
                         if all_states else None),
        "per_wave": {
            "duration": _distribution(durations),
            **{f"{key}_share": _distribution(column / per_wave_total)
               for key, column in zip(STATE_KEYS, state_columns, strict=True)},
        },
        "timing": {
            "first_begin": int(begin.min()), "last_end": int(end.max()),
            "span_cycles": int(end.max() - begin.min()),
            "begin_spread": int(begin.max() - begin.min()),
            "end_spread": int(end.max() - end.min()),
            # how long the slowest wave keeps the CU busy after the median wave finished
            "tail_cycles": int(end.max() - np.percentile(end, 50)),
        },
        "longest_waves": [describe(int(i)) for i in order[::-1][:EXTREME_WAVES]],
        "shortest_waves": [describe(int(i)) for i in order[:EXTREME_WAVES]],
    }


def _row_ref(rows: dict[int, CodeRow], index: int) -> dict[str, Any]:
    row = rows.get(index)
    return {"index": index, "asm": row.asm if row else None, "source": row.source if row else None}


def _waitcnt_summary(totals: _Totals, rows: dict[int, CodeRow]) -> list[dict[str, Any]]:
    # every producer a wait drains is listed, with the cycles it was charged (possibly 0)
    by_wait: dict[int, list[tuple[int, int]]] = {
        wait_row: [(producer_row, totals.wait_cycles.get((wait_row, producer_row), 0))
                   for producer_row in producers]
        for wait_row, producers in totals.wait_producers.items()
    }
    hot = sorted(by_wait, key=lambda w: (-int(totals.stall[w]) if w < totals.rows else 0, w))
    result = []
    for wait_row in hot[:HOT_WAITS]:
        stall_cycles = int(totals.stall[wait_row]) if wait_row < totals.rows else 0
        if stall_cycles <= 0:
            continue
        producers = [
            {**_row_ref(rows, producer_row), "cycles": cycles,
             "share": round(cycles / stall_cycles, 4),
             "waits": totals.wait_count.get((wait_row, producer_row), 0)}
            for producer_row, cycles in sorted(by_wait[wait_row], key=lambda p: (-p[1], p[0]))
        ]
        entry = {**_row_ref(rows, wait_row), "stall_cycles": stall_cycles,
                 "hits": int(totals.hits[wait_row]),
                 "unattributed_cycles": totals.wait_unattributed.get(wait_row, 0),
                 "producers": producers,
                 "dominant_producer": producers[0] if producers and producers[0]["cycles"] else None}
        result.append(entry)
    return result


def _union_length(intervals: list[tuple[int, int]]) -> int:
    covered, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                covered += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        covered += current_end - current_start
    return covered


def _loop_summary(totals: _Totals, rows: dict[int, CodeRow], mfma_unknown: list[int]) -> list[dict]:
    def estimated_cycles(loop: _LoopTotals) -> float:
        return loop.measured_cycles / max(loop.measured_iterations, 1) * loop.iterations

    ranked = sorted(totals.loops.items(), key=lambda item: (-estimated_cycles(item[1]), item[0]))
    result = []
    for first, loop in ranked[:HOT_LOOPS]:
        # MFMAs of unknown pass latency inside the loop make the fraction a guess: report null.
        unknown_inside = [row for row in mfma_unknown if first <= row <= loop.last_index]
        busy_fraction = None
        if not unknown_inside:
            occupied = {simd: _union_length(spans) for simd, spans in loop.simd_intervals.items()}
            busy = sum(min(loop.simd_mfma[simd], length) for simd, length in occupied.items())
            total = sum(occupied.values())
            busy_fraction = round(busy / total, 4) if total else None
        loop_cycles = int(round(estimated_cycles(loop)))
        wave_total = max(loop.wave_cycles, 1)
        first_ref, last_ref = _row_ref(rows, first), _row_ref(rows, loop.last_index)
        result.append({
            "first_index": first, "last_index": loop.last_index,
            "first_source": first_ref["source"], "last_asm": last_ref["asm"],
            "iterations": loop.iterations,
            "iterations_per_wave": round(loop.iterations / loop.waves, 2),
            "entries": loop.entries, "waves": loop.waves,
            "cycles_per_iteration": round(loop.measured_cycles / max(loop.measured_iterations, 1), 2),
            "cycles": loop_cycles,
            "mfma_pass_cycles": None if unknown_inside else loop.mfma_cycles,
            "mfma_unknown_rows": unknown_inside[:10],
            "mfma_busy_fraction": busy_fraction,
            "split": {"prologue_cycles": loop.prologue, "loop_cycles": loop_cycles,
                      "epilogue_cycles": loop.epilogue,
                      "prologue_share": round(loop.prologue / wave_total, 4),
                      "loop_share": round(min(loop_cycles / wave_total, 1.0), 4),
                      "epilogue_share": round(loop.epilogue / wave_total, 4)},
        })
    for outer in result:
        outer["contains"] = [inner["first_index"] for inner in result if inner is not outer
                             and outer["first_index"] <= inner["first_index"]
                             and inner["last_index"] <= outer["last_index"]]
    return result


def listed_wave_files(dispatch_dir: Path) -> set[str] | None:
    """Wave file names listed in filenames.json (None when absent or unreadable)."""
    path = Path(dispatch_dir) / "filenames.json"
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list) and node and isinstance(node[0], str):
            names.add(node[0])

    walk(document.get("wave_filenames") if isinstance(document, dict) else None)
    return names


def _consistency(dispatch_dir: Path, paths: list[Path], totals: _Totals,
                 table: CodeTable) -> dict[str, Any]:
    details: list[str] = []
    if not paths:
        details.append("no wave files (se*_sm*_sl*_wv*.json) in the dispatch dir: "
                       "wave-level analyses unavailable, code.json totals unchecked")
    listed = listed_wave_files(dispatch_dir)
    present = {path.name for path in paths}
    missing = sorted(listed - present) if listed else []
    if missing:
        details.append(f"{len(missing)} wave file(s) listed in filenames.json are missing "
                       f"(e.g. {', '.join(missing[:3])})")
    if totals.skipped:
        details.append(f"{len(totals.skipped)} wave file(s) skipped as unreadable "
                       f"(e.g. {totals.skipped[0]['file']}: {totals.skipped[0]['error']})")
    mismatched_rows: dict[str, int] = {}
    if paths:
        for name, attribute in (("Hit", "hits"), ("Latency", "latency"), ("Stall", "stall"),
                                ("Idle", "idle")):
            expected = [(row.index, getattr(row, attribute)) for row in table.rows]
            checked = [(index, value) for index, value in expected if value is not None]
            if not checked:
                continue
            wave_sums = getattr(totals, attribute)
            bad = [index for index, value in checked
                   if (int(wave_sums[index]) if index < totals.rows else 0) != value]
            extra = int(wave_sums.sum()) - sum(value for _, value in checked)
            if bad:
                mismatched_rows[name] = len(bad)
                details.append(f"code.json {name} differs from the wave-file sums on {len(bad)} of "
                               f"{len(checked)} rows (total difference {-extra:+d}: code.json − waves)")
    if mismatched_rows and "legacy" in totals.layouts:
        details.append("legacy (rocprofv2) layout: the exact code.json = Σ wave files invariant is "
                       "documented for V3 only, so these differences may be normal")
    return {"ok": not details, "details": details, "missing_files": missing,
            "mismatched_rows": mismatched_rows}


def occupancy_summary(dispatch_dir: Path, traced_cu: dict[int, int]) -> dict[str, Any]:
    """Waves resident over time on the traced CU of each SE, from occupancy.json."""
    import numpy as np

    path = Path(dispatch_dir) / "occupancy.json"
    try:
        document = json.loads(path.read_bytes())
    except OSError:
        return {"available": False, "note": "occupancy.json not present"}
    except ValueError:
        return {"available": False, "note": "occupancy.json is not valid JSON"}
    per_se = []
    for key, events in sorted(document.items()) if isinstance(document, dict) else []:
        if not key.isdigit() or not isinstance(events, list) or not events:
            continue
        if not isinstance(events[0], list):
            return {"available": False,
                    "note": "legacy occupancy.json (packed 64-bit events) is not decoded"}
        se = int(key)
        rows = np.asarray([event[:6] for event in events if len(event) >= 6], dtype=np.int64)
        cu = traced_cu.get(se)
        if cu is None or not len(rows):
            continue
        rows = rows[rows[:, 1] == cu]
        if not len(rows):
            continue
        rows = rows[np.lexsort((rows[:, 4], rows[:, 0]))]  # ends before starts at equal times
        steps = np.cumsum(np.where(rows[:, 4] == 1, 1, -1))
        # waves resident before the trace started end without a start: lift the baseline
        steps -= min(int(steps.min()), 0)
        times = rows[:, 0]
        spans = np.diff(times)
        duration = int(times[-1] - times[0])
        mean = float((steps[:-1] * spans).sum() / duration) if duration else float(steps.max())
        samples = np.linspace(times[0], times[-1], min(SERIES_POINTS, len(times)))
        sampled = steps[np.maximum(np.searchsorted(times, samples, "right") - 1, 0)]
        per_se.append({"se": se, "cu": cu, "max_waves": int(steps.max()),
                       "mean_waves": round(mean, 3),
                       "series": [[int(t), int(v)] for t, v in zip(samples, sampled, strict=True)]})
    if not per_se:
        return {"available": False, "note": "no occupancy events for the traced CU"}
    return {"available": True, "source": "occupancy.json",
            "max_waves": max(entry["max_waves"] for entry in per_se),
            "mean_waves": round(sum(entry["mean_waves"] for entry in per_se) / len(per_se), 3),
            "per_se": per_se}
