"""How the kernel's waves used the CUs of the traced shader engines, from occupancy.json alone.

occupancy.json lists every wave start and end on every CU of the traced SEs (not only the
target CU), with the kernel id of each wave, so it shows without wave files or a kernel trace
how many CUs of an SE got the kernel's work and how long each stayed busy. Two facts follow:

* `observed_usage` (the hotspot document's `cu_usage`): per traced SE, the CUs that ran a wave
  of the kernel, its waves, its span (first start to last end) and each busy CU's busy cycles
  (at least one of the kernel's waves resident);
* `judged_usage` (`structure.cu_usage`): against the agent's CUs per SE, the share of the SEs'
  CU time (CUs × span) that held a wave of the kernel. What is idle is idle whether no
  workgroup reached the CU or the CU's workgroups ended early (a staircase of workgroup
  lengths, a causal mask); when most of it is idle the dispatch is launch-bound.

Rows: ``[time, cu, simd, slot, is_start, kernel_id, ...]`` (docs/rocprof-outputs.md); a wave
resident before the trace began shows only its end, one still resident at the end only its start.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import accumulate, compress, repeat
from operator import add, and_, eq, gt, lshift, mul, or_, rshift, sub

from kerneltrace.thresholds import DEFAULT_LAUNCH_BOUND, LaunchBoundThresholds

# occupancy.json read for these facts alone (not for the wave analysis): real ones are 5 KB–1.2 MB;
# a multi-kernel trace of tens of MB would cost every run seconds of parsing for one launch fact
READ_LIMIT = 16 * 1024 * 1024


@dataclass(frozen=True)
class EngineUsage:
    """One traced shader engine's use by the kernel."""

    se: int
    busy_cus: int  # CUs that ran at least one of the kernel's waves
    waves: int  # wave starts of the kernel
    span_cycles: int  # the kernel's first event to its last on this SE
    busy_cycles: list[int]  # per busy CU, longest first: cycles with one of its waves resident


def _busy_cycles(keys: list[int], first: int, last: int) -> int:
    """Cycles with at least one wave resident, from one CU's events as sort keys (time × 2 +
    is_start: ends before starts at one time, so a wave replaced at once leaves no gap).

    Waves resident before the trace (more ends than starts so far) count from `first`, waves
    still resident at the end until `last`: the sum of the gaps between consecutive events
    with a wave resident (integers, so the sum is exact in any order)."""
    keys.sort()
    # +1 a start, -1 an end, and the waves resident after each event (C-level passes)
    resident = list(accumulate(map(sub, map(mul, map(and_, keys, repeat(1)), repeat(2)), repeat(1))))
    base = -min(0, min(resident))  # waves resident when the trace began
    times = list(map(rshift, keys, repeat(1)))
    busy = times[0] - first if base > 0 else 0
    # each gap to the next event, where a wave is resident after this one
    busy += sum(compress(map(sub, times[1:], times), map(gt, resident, repeat(-base))))
    return busy + (last - times[-1] if resident[-1] + base > 0 else 0)


_CU_SHIFT = 62  # a (cu, key) pair packed as cu << _CU_SHIFT | key, when both fit


def _group_by_cu(cus: dict[int, list[int]], cu_of: Sequence[int], keys: list[int]) -> None:
    """Append each event's key to its CU's list in `cus` (CUs in ascending order). Usually one
    sort of packed (cu, key) ints and a slice per CU; a pass per CU when they do not fit."""
    cu_ids = sorted(set(cu_of))
    if cu_ids[0] >= 0 and cu_ids[-1] < 1 << 30 and min(keys) >= 0 and max(keys) < 1 << _CU_SHIFT:
        packed = sorted(map(or_, map(lshift, cu_of, repeat(_CU_SHIFT)), keys))
        for cu in cu_ids:
            base = cu << _CU_SHIFT
            low, high = bisect_left(packed, base), bisect_left(packed, base + (1 << _CU_SHIFT))
            cus.setdefault(cu, []).extend(map(sub, packed[low:high], repeat(base)))
        return
    for cu in cu_ids:
        cus.setdefault(cu, []).extend(compress(keys, map(eq, cu_of, repeat(cu))))


class EventColumns:
    """One SE's events read and checked elsewhere (every row 6 or more plain ints; the --waves
    run's pysimdjson path, analysis.waves.occupancy): its time, cu, is_start and kernel_id
    columns, which observed_usage takes in place of the SE's list of events."""

    def __init__(self, times: list[int], cus: list[int], starts: list[int], kernels: list[int]) -> None:
        self.columns = (times, cus, starts, kernels)

    def __len__(self) -> int:
        return len(self.columns[0])


def _plain_columns(events: list) -> tuple[tuple[int, ...], ...] | None:
    """The time, cu, is_start and kernel_id columns of the events when every event is a list
    of 6 or more fields and those four are plain ints (what json.loads gives for a regular
    occupancy.json), by C-level passes (a check per event in Python was ~80 ms on a 65 536-event
    file); None otherwise (the caller checks each event)."""
    if set(map(type, events)) != {list} or min(map(len, events)) < 6:
        return None
    columns = list(zip(*events, strict=False))  # rows of 6 or more: the first 6 columns whole
    picked = (columns[0], columns[1], columns[4], columns[5])
    if any(set(map(type, column)) != {int} for column in picked):
        return None
    return picked


def observed_usage(document: object, kernel_names: Sequence[str]) -> dict | None:
    """The `cu_usage` facts of the kernel named one of `kernel_names` (None when occupancy.json
    has no decodable events of it: legacy packed events, no id named so, malformed rows).
    `document`: occupancy.json as json.loads gives it, or with SE lists as EventColumns."""
    if not isinstance(document, Mapping):
        return None
    names = {name for name in kernel_names if name}
    dispatches = document.get("dispatches")
    ids = {int(key) for key, name in dispatches.items()
           if isinstance(key, str) and key.isdigit() and name in names} \
        if isinstance(dispatches, Mapping) else set()
    if not ids:
        return None
    per_engine: dict[int, dict[int, list[int]]] = {}  # SE -> CU -> events as _busy_cycles keys
    seen: set[int] = set()
    for key, events in document.items():
        checked = isinstance(events, EventColumns)
        if not (isinstance(key, str) and key.isascii() and key.isdigit()
                and (checked or isinstance(events, list))):
            continue
        cus = per_engine.setdefault(int(key), {})
        if not events:
            continue
        columns = events.columns if checked else _plain_columns(events)
        if columns is None:  # something unusual: each event checked in turn
            for event in events:
                if not isinstance(event, list) or len(event) < 6:
                    return None  # legacy packed 64-bit events or a malformed row
                if not all(isinstance(v, int) and not isinstance(v, bool)
                           for v in (event[0], event[1], event[4], event[5])):
                    return None
            columns = tuple(zip(*((event[0], event[1], event[4], event[5]) for event in events), strict=True))
        times, cu_of, starts, kernels = columns
        kernel_ids = set(kernels) & ids
        if not kernel_ids:
            continue
        seen |= kernel_ids
        if len(kernel_ids) != len(set(kernels)):  # other kernels' events too: the kernel's only
            mine = [kernel in ids for kernel in kernels]
            times, cu_of, starts = (tuple(compress(c, mine)) for c in (times, cu_of, starts))
        # one CU's events in any order: _busy_cycles sorts them, and the CUs' figures are sorted
        keys = list(map(add, map(mul, times, repeat(2)), map(bool, starts)))
        _group_by_cu(cus, cu_of, keys)
    if len(seen) != 1:  # none, or several launches of the kernel traced (not told apart here)
        return None
    engines = []
    for se, cus in sorted(per_engine.items()):
        if not cus:
            continue
        first = min(min(keys) for keys in cus.values()) >> 1
        last = max(max(keys) for keys in cus.values()) >> 1
        busy = sorted((_busy_cycles(keys, first, last) for keys in cus.values()), reverse=True)
        wave_starts = sum(key & 1 for keys in cus.values() for key in keys)
        engines.append(EngineUsage(se, len(cus), wave_starts, last - first, busy))
    if not engines:
        return None
    return {"source": "occupancy.json", "kernel_id": seen.pop(),
            "shader_engines": [asdict(engine) for engine in engines]}


@dataclass(frozen=True)
class JudgedUsage:
    """The traced SEs' CU time against the agent's CUs per SE (`structure.cu_usage`)."""

    traced_shader_engines: int
    cus_per_se: float  # the agent's (its product's, else its arch's)
    busy_cus_per_se: float  # mean over the traced SEs
    cu_fill: float  # busy CUs / CUs per SE
    busy_share: float  # Σ busy cycles / (CUs per SE × span), mean over the traced SEs
    busy_cycles_longest: int  # the busiest CU's cycles, over the traced SEs
    busy_cycles_shortest: int  # the least busy CU with work
    span_cycles: int  # the longest per-SE span
    launch_bound: bool
    reason: str
    # 1 − mean / longest busy cycles over each SE's busy CUs (mean over the SEs): the CU time
    # lost waiting for the longest-busy CU, i.e. what evening out the work would take
    tail_share: float = 0.0
    longest_cus: int = 0  # busy CUs at their SE's longest level (the last round's)
    # every SE's busy CUs at two levels (each within `same_level` of its top): a last round of equal
    # workgroups that reached only some CUs, not a staircase of unequal ones
    two_levels: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def usage_bound(busy_share: float, limits: LaunchBoundThresholds = DEFAULT_LAUNCH_BOUND) -> bool:
    """Whether the traced SEs' idle CU time makes the dispatch launch-bound."""
    return 1 - busy_share >= limits.idle_cu_time_share


def judged_usage(observed: Mapping | None, cus_per_se: float | None,
                 limits: LaunchBoundThresholds = DEFAULT_LAUNCH_BOUND) -> JudgedUsage | None:
    """The observed usage judged (None without it or without the CUs per SE)."""
    engines = [e for e in (observed or {}).get("shader_engines") or [] if e.get("span_cycles")]
    if not engines or not cus_per_se:
        return None
    busy_cus = sum(e["busy_cus"] for e in engines) / len(engines)
    share = sum(min(1.0, sum(e["busy_cycles"]) / (max(cus_per_se, e["busy_cus"]) * e["span_cycles"]))
                for e in engines) / len(engines)
    cycles = [c for e in engines for c in e["busy_cycles"]]
    fill = min(1.0, busy_cus / cus_per_se)
    bound = usage_bound(share, limits)
    engines_text = "the traced shader engine" if len(engines) == 1 else \
        f"the {len(engines)} traced shader engines"
    reason = (f"on {engines_text} {busy_cus:g} of {cus_per_se:g} CUs per SE "
              f"ran the kernel's waves, and the CUs held one of its waves {share:.0%} of the time "
              f"(occupancy.json; busy CUs {min(cycles):,}–{max(cycles):,} cycles)")
    tail = sum(1 - sum(e["busy_cycles"]) / (len(e["busy_cycles"]) * max(e["busy_cycles"]))
               for e in engines if e["busy_cycles"] and max(e["busy_cycles"])) / len(engines)
    near = limits.same_level
    longest = sum(1 for e in engines for c in e["busy_cycles"] if c >= near * max(e["busy_cycles"]))
    return JudgedUsage(len(engines), cus_per_se, round(busy_cus, 3), round(fill, 4), round(share, 4),
                       max(cycles), min(cycles), max(e["span_cycles"] for e in engines), bound,
                       reason, round(tail, 4), longest,
                       all(_two_levels(e["busy_cycles"], near) for e in engines))


def _two_levels(busy: Sequence[int], near: float) -> bool:
    """Whether these busy cycles sit at two levels, each within `near` of its top."""
    top = max(busy, default=0)
    short = [c for c in busy if c < near * top]
    return bool(short) and min(short) >= near * max(short)
