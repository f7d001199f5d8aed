"""The bottleneck verdict: what bounds one dispatch (kind, evidence, confidence), decided first.

A senior kernel engineer reads a thread trace top-down: is the hot loop's matrix or vector pipe
saturated (compute), are waves waiting on memory with nothing else to do (memory latency, or a
streaming kernel with too few bytes in flight), on each other (barriers, and how unbalanced),
on instruction hazards (`s_nop`, dependent chains), on once-per-wave setup (prologue), or on the
end of the dispatch (tail, `s_endpgm` drain)? `CHECKS` is that reading written down, in order,
one function per verdict kind; the thresholds are `kerneltrace.thresholds.VerdictThresholds`.
Each verdict carries the figures that decided it. `ceiling` is what the verdict leaves for any
finding that does not attack the bound: the non-bound share of the hot loop (1 − pipe busy) for
compute-bound kernels, the hideable part of the memory stall for streaming kernels, 1 otherwise
(kerneltrace/plan/gains.py applies it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property

from kerneltrace.analysis.issue_mix import (
    ISSUE_CYCLES,
    estimated_stall,
    latency_mix,
    loop_rows,
)
from kerneltrace.analysis.waves.work_split import BUSY_BASIS
from kerneltrace.isa import classify as isa
from kerneltrace.plan.divisible import divisible_share
from kerneltrace.readers.codejson import CodeFormat
from kerneltrace.thresholds import DEFAULT_VERDICT, VerdictThresholds

MEMORY_TYPES = (isa.VMEM_WAIT, isa.VMEM_LOAD, isa.VMEM_STORE)
SETUP_TYPES = (isa.SMEM, isa.LDS_SMEM_WAIT)
WAIT_TYPES = (isa.VMEM_WAIT, isa.LDS_SMEM_WAIT, isa.EXP_WAIT)


@dataclass(frozen=True)
class Bottleneck:
    """What bounds the dispatch, in one sentence, with its evidence and confidence."""

    kind: str
    sentence: str
    evidence: list[str] = field(default_factory=list)
    confidence: str = "medium"  # "high" | "medium" | "low"
    ceiling: float = 1.0  # max gain (fraction of stall) of a finding that does not attack the bound
    helps: list[str] = field(default_factory=list)
    does_not_help: list[str] = field(default_factory=list)
    time_ceiling: float = 1.0  # max kernel-time gain of a finding whose lever the verdict rules out

    def to_dict(self) -> dict:
        return asdict(self)


def estimated_shares(doc: dict) -> dict[str, float]:
    """Stall share per type from `estimated_stall` (legacy captures)."""
    by_type: dict[str, int] = {}
    for ins in doc.get("instructions") or []:
        by_type[ins.get("type")] = by_type.get(ins.get("type"), 0) + estimated_stall(ins)
    total = sum(by_type.values())
    return {kind: value / total for kind, value in by_type.items()} if total else {}


def is_no_stall(doc: dict) -> bool:
    """No stall column (legacy rocprofv2) or no stall recorded (not PC sampling)."""
    totals = doc.get("totals") or {}
    return doc.get("format") == CodeFormat.LEGACY or (not totals.get("stall_cycles")
                                                      and doc.get("format") != CodeFormat.PCSAMPLING)


def type_share(doc: dict, *types: str) -> float:
    """Share of the document's stall held by instructions of these types (its `stall_by_type`)."""
    return sum(e.get("share") or 0.0 for e in doc.get("stall_by_type") or [] if e.get("type") in types)


def total_stall(instructions: list[dict]) -> int:
    """Stall cycles of these instructions (missing or null stall counts 0)."""
    return sum(ins.get("stall_cycles") or 0 for ins in instructions)


def cost_cycles(ins: dict) -> int:
    """An instruction's cost, latency + idle (missing or null counts 0; values as recorded,
    unlike analysis.costs, which truncates them to int when it builds the `costs` object)."""
    return (ins.get("latency_cycles") or 0) + (ins.get("idle_cycles") or 0)


def wave_count(doc: dict) -> int | None:
    """Waves traced: from the wave files, else the hits of `s_endpgm` (each wave ends once)."""
    waves = (doc.get("waves") or {}).get("waves")
    if waves:
        return int(waves)
    ends = [ins.get("hits") or 0 for ins in doc.get("instructions") or []
            if isa.opcode(ins.get("asm") or "") == "s_endpgm"]
    return int(sum(ends)) or None


def once_per_wave(waves: int | None, ins: dict) -> bool:
    """True when an instruction runs at most once per wave (kernel arguments, setup, epilogue);
    `waves`: the dispatch's `wave_count` (computed once by the caller, PlanContext.wave_count)."""
    return bool(waves) and 0 < (ins.get("hits") or 0) <= waves


def prologue_share(doc: dict, waves: int | None) -> float:
    """Cost share (latency + idle) of once-per-wave scalar loads and the waits that drain them;
    `waves`: the document's `wave_count`."""
    costs = doc.get("costs") or {}
    total = costs.get("total_cycles") or 0
    if not total:
        return 0.0
    part = sum(
        cost_cycles(ins)
        for ins in doc.get("instructions") or []
        if ins.get("type") in SETUP_TYPES and once_per_wave(waves, ins)
    )
    return part / total


def doc_structure(doc: dict) -> dict:
    """The document's `structure` (analysis.structure), recomputed when it predates it."""
    if isinstance(doc.get("structure"), dict):
        return doc["structure"]
    from kerneltrace.analysis.structure import structure_of

    return structure_of(doc)


def hot_loop(doc: dict, min_loop_share: float = DEFAULT_VERDICT.min_loop_share) -> dict | None:
    """The hottest loop holding at least `min_loop_share` of the waves' lifetime (most of it,
    issue 21.5): the one the wave files observed, else the code.json hot loop
    (`structure.control_flow`: loops exist without wave files)."""
    for loop in (doc.get("waves") or {}).get("loops") or []:
        if ((loop.get("split") or {}).get("loop_share") or 0) >= min_loop_share:
            return loop
    static = (doc_structure(doc).get("control_flow") or {}).get("hot_loop")
    if static and (static.get("time_share") or 0) >= min_loop_share:
        return {**static, "split": {"loop_share": static["time_share"]}, "source": "code.json"}
    return None


def work_region(doc: dict, min_loop_share: float = DEFAULT_VERDICT.min_loop_share) -> dict | None:
    """Where the waves' work is: the hot loop, else for straight-line code (no loop in the
    code, so each executed row runs once per wave: an unrolled elementwise or conv kernel) the
    whole wave as one region, shaped like a loop (`first_index`, `last_index`, `split.loop_share`,
    `straight_line`)."""
    loop = hot_loop(doc, min_loop_share)
    if loop is not None:
        return loop
    loops = (doc_structure(doc).get("control_flow") or {}).get("loops")
    if loops is None or loops:  # unknown, or a loop the hot-loop choice did not take
        return None
    executed = [ins["index"] for ins in doc.get("instructions") or [] if ins.get("hits")]
    if not executed:
        return None
    return {"first_index": min(executed), "last_index": max(executed),
            "split": {"loop_share": 1.0}, "source": "code.json", "straight_line": True}


def mfma_busy_floor(doc: dict, loop: dict | None) -> float | None:
    """Without wave files, the least MFMA busy a code.json hot loop can have: one wave's MFMA
    pass cycles (hits × pass cycles, `isa.mfma`) over that wave's loop time (latency + idle of
    the loop's rows), both summed over the traced waves. Other waves on the same SIMD only add to
    the pipe's busy time, so the pipe is at least this busy. None for a loop the wave files saw
    (they measure it) or with no MFMA of known pass latency."""
    if not loop or loop.get("source") != "code.json":
        return None
    from kerneltrace.isa.mfma import mfma_info

    first, last = loop["first_index"], loop["last_index"]
    time = passes = 0
    for ins in doc.get("instructions") or []:
        index = ins.get("index")
        if not isinstance(index, int) or not first <= index <= last:
            continue
        time += cost_cycles(ins)
        if ins.get("type") == isa.MFMA:
            info = mfma_info(ins.get("asm") or "")
            passes += (ins.get("hits") or 0) * (info.cycles if info else 0)
    return round(min(1.0, passes / time), 4) if time and passes else None


def divisible_life(doc: dict, structure: dict, chain_max_loads: int) -> tuple[float, str]:
    """(share of a wave's life that a re-partition of the work divides, the one-chain note): the
    kernel-argument round trips are paid by every wave however the work is split, and a
    straight-line wave that is one latency chain divides only its issue cycles
    (plan/divisible.py)."""
    total = (structure.get("waits") or {}).get("total_cycles") or 0
    lifetime = sum(cost_cycles(ins) for ins in doc.get("instructions") or []) or total
    fixed = ((structure.get("setup") or {}).get("stall_cycles") or 0) / lifetime if lifetime else 0.0
    divisible, chain = divisible_share(doc, structure, wave_count(doc), chain_max_loads,
                                       ISSUE_CYCLES)
    return min(max(0.0, 1 - fixed), divisible), chain


def launch_gain(doc: dict) -> tuple[float, float, str] | None:
    """Kernel-time share the idle or tail capacity could take (low, high, why) when the launch
    under-fills the GPU: the idle share times the part of a wave's life that is divisible work
    (setup round trips are paid by every wave however the work is split; a straight-line wave
    that is one latency chain divides only its issue cycles: plan/divisible.py)."""
    structure = doc_structure(doc)
    launch = structure.get("launch") or {}
    if launch.get("launch_bound"):
        fill, tail = launch.get("cu_fill"), launch.get("tail_loss") or 0.0
        idle = max(1 - fill if fill is not None else 0.0, tail)
    elif not launch and (structure.get("cu_usage") or {}).get("launch_bound"):
        # no kernel trace: the traced SEs' idle CU time, as occupancy.json shows it
        launch = structure["cu_usage"]
        idle = 1 - launch["busy_share"]
    else:
        return None
    share, chain = divisible_life(doc, structure, DEFAULT_VERDICT.chain_max_loads)
    high = round(idle * share, 4)
    reason = launch.get("reason") or ""
    return round(high / 2, 4), high, f"{reason}; {chain}" if chain else reason


@dataclass(frozen=True)
class WorkSplitGain:
    """What a better work distribution could take (`work_split_gain`)."""

    low: float  # kernel-time share
    high: float
    reason: str  # the verdict's reason: how many waves exit, what sets the time
    basis: str  # how the gain follows
    spread: float  # how long the busy waves' divisible work runs once spread over every wave


def work_split_gain(doc: dict, limits: VerdictThresholds = DEFAULT_VERDICT) -> WorkSplitGain | None:
    """Kernel-time share a better work distribution could take, or None when
    the work split is not the bound (docs/calibration.md §Work distribution).

    Only on a busy view (document/busy_view.py: the rows are the busy waves'), with at least
    `work_split_empty` of the traced waves empty and the longest busy wave covering at least
    `work_split_critical` of the traced span (the busy waves' critical path sets the time; when
    a few waves merely have less work, the rest end inside it anyway and nothing is won).
    Model: the empty waves' own cost (their slots, the launch) is small; what the split costs is
    that the work runs on few of the slots. Spread over every traced wave, the busy waves' work
    runs `s` = busy waves resident at once / waves resident at once (per CU, from the wave
    lifetimes) as long; the once-per-wave part (kernel-argument round trips) stays, and a wave
    that is one latency chain divides only its issue cycles (plan/divisible.py). high = (1 − s)
    × the divisible share × the longest busy wave / the kernel's cycles; low = high / 2 (a
    re-partition adds metadata or reduction work), the launch finding's prior."""
    waves = doc.get("waves") or {}
    split = waves.get("work_split") or {}
    if split.get("cost_basis") != BUSY_BASIS or split.get("empty_share", 0) < limits.work_split_empty:
        return None
    span = (waves.get("timing") or {}).get("span_cycles") or 0
    longest = split.get("busy_max_cycles") or 0
    if not span or longest < limits.work_split_critical * span:
        return None
    residency = waves.get("residency") or {}
    cus, slots = residency.get("cus"), residency.get("max_waves_per_cu")
    busy, traced = split["busy_waves"], split["waves"]
    if cus and slots:
        spread = min(busy / cus, slots) / min(traced / cus, slots)
        spread_why = (f"{busy / cus:g} busy of {min(traced / cus, slots):g} waves resident per CU "
                      "at once")
    else:
        spread, spread_why = busy / traced, f"{busy} busy of {traced} waves"
    structure = doc_structure(doc)
    share, chain = divisible_life(doc, structure, limits.chain_max_loads)
    coverage = structure.get("trace_coverage") or {}
    clock, duration = coverage.get("clock_mhz"), coverage.get("duration_ns")
    kernel = duration * clock / 1000 if clock and duration else span
    time_share = min(1.0, longest / kernel)
    high = round((1 - spread) * share * time_share, 4)
    reason = (f"work distribution: {split['empty_share']:.0%} of the traced waves "
              f"({split['empty_waves']} of {traced}) exit without work; the {busy} busy waves' "
              f"critical path ({longest:,} cycles, {longest / span:.0%} of the traced span) sets "
              "the time")
    why = (f"spread over every wave, the work would run {spread:.2f} as long ({spread_why}); "
           f"{share:.0%} of a busy wave's life divides (the kernel-argument round trips do not)"
           f"{'; ' + chain if chain else ''}; the longest busy wave is {time_share:.0%} of the "
           "kernel's time; low end halved (a re-partition adds metadata or reduction work)")
    return WorkSplitGain(round(high / 2, 4), high, reason, why, round(spread, 4))


def work_distribution_bound(doc: dict, limits: VerdictThresholds = DEFAULT_VERDICT
                            ) -> WorkSplitGain | None:
    """The work split's gain when it makes the dispatch launch-bound (≥ `launch_gain`)."""
    gain = work_split_gain(doc, limits)
    return gain if gain is not None and gain.high >= limits.launch_gain else None


ISSUE_TYPES = (isa.VALU, isa.NOP, isa.MFMA, isa.SALU)
# issue stalls of the memory pipes (a full vector-memory, LDS or scalar queue): memory, not work
MEMORY_ISSUE_TYPES = (isa.VMEM_LOAD, isa.VMEM_STORE, isa.LDS, isa.SMEM)


def loop_stall_mix(doc: dict, loop: dict) -> dict[str, float]:
    """Shares of the hot loop's stall: waits, barriers and issue (VALU, s_nop, MFMA, SALU)."""
    inside = [ins for ins in doc.get("instructions") or []
              if loop["first_index"] <= ins["index"] <= loop["last_index"]]
    total = total_stall(inside)
    if not total:
        return {}
    def part(types):
        return total_stall([ins for ins in inside if ins.get("type") in types]) / total
    mix = {kind: part((kind,)) for kind in ISSUE_TYPES}
    mix["waits"] = part(WAIT_TYPES)
    mix["issue"] = part(ISSUE_TYPES)
    return mix


def streaming_shape(doc: dict, waves: int | None,
                    limits: VerdictThresholds = DEFAULT_VERDICT) -> tuple[bool, int]:
    """(is a streaming kernel, vector loads per wave): few loads, no MFMA, no LDS reuse;
    `waves`: the document's `wave_count`."""
    executed = [ins for ins in doc.get("instructions") or [] if (ins.get("hits") or 0) > 0]
    kinds = {ins.get("type") for ins in executed}
    loads = [ins for ins in executed if ins.get("type") == isa.VMEM_LOAD]
    per_wave = round(sum(ins.get("hits") or 0 for ins in loads) / (waves or 1))
    small = len(executed) <= limits.streaming_max_executed
    shape = bool(loads) and isa.MFMA not in kinds and isa.LDS not in kinds and small
    return shape and per_wave <= limits.streaming_max_loads, per_wave


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


class Facts:
    """The figures every verdict check reads from one document (computed once, lazily)."""

    def __init__(self, doc: dict, l2: dict | None, limits: VerdictThresholds) -> None:
        self.doc, self.l2, self.limits = doc, l2, limits
        self.fmt = doc.get("format")
        self.totals = doc.get("totals") or {}
        waves = doc.get("waves") or {}
        self.peers = waves.get("peers") or {}
        self.busy = self.peers.get("pipe_busy") or {}
        self.costs = doc.get("costs") or {}
        self.drain = (self.costs.get("endpgm_drain") or {}).get("share") or 0.0
        timing = waves.get("timing") or {}
        span = timing.get("span_cycles") or 0
        self.tail = (timing.get("tail_cycles") or 0) / span if span else 0.0
        # no stall column (legacy): the tree reads stall estimated as latency − issue cycles
        self.no_stall = is_no_stall(doc)
        estimated = estimated_shares(doc) if self.no_stall else {}
        self.estimated = bool(estimated)

        def share(*types: str) -> float:
            return sum(estimated.get(t, 0.0) for t in types) if self.no_stall else type_share(doc, *types)

        self.memory = share(*MEMORY_TYPES)
        self.memory_issue = share(isa.VMEM_LOAD, isa.VMEM_STORE)  # requests that cannot issue
        self.lds_smem = share(isa.LDS_SMEM_WAIT)
        self.barrier = share(isa.BARRIER)
        self.nop = share(isa.NOP)
        self.structure = doc_structure(doc)
        # on-chip LDS round trips: LDS instructions held at issue plus the waits for LDS results
        # only (a wait that also drains vector memory counts as memory); 0 without a stall column
        self.lds_only_waits = min((self.structure.get("waits") or {}).get("lds_only_share") or 0.0,
                                  self.lds_smem)
        self.lds_round_trips = 0.0 if self.no_stall else share(isa.LDS) + self.lds_only_waits
        self.non_hidden = self.peers.get("non_hidden_share")
        self.lines = [f"vector-memory stall {_pct(self.memory)}", f"LDS/SMEM waits {_pct(self.lds_smem)}",
                      f"barrier {_pct(self.barrier)}", f"s_nop {_pct(self.nop)}",
                      f"s_endpgm drain {_pct(self.drain)} of cost"]
        if self.estimated:
            self.lines.insert(0, "no stall column: stall estimated per row as latency − issue cycles")
        if self.non_hidden is not None:
            self.lines.append(f"non-hidden cost {_pct(self.non_hidden)} (no other wave issued meanwhile)")

    @cached_property
    def loop(self) -> dict | None:
        return hot_loop(self.doc, self.limits.min_loop_share)

    @property
    def mfma_busy(self) -> float | None:
        busy = (self.loop or {}).get("mfma_busy_fraction")
        return busy if isinstance(busy, int | float) else None

    @cached_property
    def mfma_busy_floor(self) -> float | None:
        """Without wave files: the least MFMA busy the code.json hot loop has."""
        return mfma_busy_floor(self.doc, self.loop)

    @cached_property
    def waves_traced(self) -> int | None:
        return wave_count(self.doc)

    @cached_property
    def streaming(self) -> tuple[bool, int]:
        return streaming_shape(self.doc, self.waves_traced, self.limits)

    @cached_property
    def share_of_peak(self) -> float | None:
        l2 = self.l2 or {}
        peaks = [v for v in (l2.get("fraction_of_peak"), l2.get("total_fraction_of_peak"))
                 if isinstance(v, int | float)]
        return max(peaks) if peaks else None

    @cached_property
    def bandwidth(self):
        from kerneltrace.analysis.bandwidth import bandwidth_estimate

        return bandwidth_estimate(self.doc, self.structure)

    @cached_property
    def mix(self) -> dict[str, float]:
        return loop_stall_mix(self.doc, self.loop) if self.loop else {}

    @cached_property
    def region(self) -> dict | None:
        """The hot loop, else the whole wave of straight-line code (`work_region`)."""
        return self.loop or work_region(self.doc, self.limits.min_loop_share)

    @cached_property
    def latency_mix(self) -> dict:
        """Where the work region's latency goes (issue + stall per type: analysis/issue_mix.py)."""
        region = self.region
        return latency_mix(loop_rows(self.doc.get("instructions") or [], region)) if region else {}

    @property
    def barriers(self) -> dict:
        return self.structure.get("barriers") or {}

    @property
    def ping_pong(self) -> bool:
        return bool(self.barriers.get("ping_pong"))

    @property
    def ping_pong_memory(self) -> bool:
        """A ping-pong schedule whose partner phase is long because of memory (vector-memory
        waits and issue back-pressure, LDS/scalar waits): the barrier waits are memory time.
        Otherwise the phase is long because of the instructions it issues (LDS reads, address
        work, a burst of loads): a schedule imbalance, the synchronisation bound."""
        return (self.ping_pong
                and self.memory + self.lds_smem >= self.limits.ping_pong_memory_share)

    @property
    def barrier_caused(self) -> bool:
        """The barrier stall is explained by the waits before the barriers (or is the partner
        phase of a ping-pong schedule): the verdict follows the cause (issue 21.4)."""
        return self.barrier_explained >= self.limits.barrier_explained or self.ping_pong_memory

    @property
    def stragglers(self) -> dict | None:
        """The straggler causes (wave files), when most of the barrier wait was traced."""
        from kerneltrace.analysis.barrier_stragglers import usable

        found = self.barriers.get("stragglers")
        return found if usable(found, self.limits.straggler_traced) else None

    @property
    def barrier_explained(self) -> float:
        """Share of the barrier stall memory/LDS/scratch waits explain: what the last-arriving
        wave waited on (wave files), else the waits between the barriers (code.json)."""
        from kerneltrace.analysis.barrier_stragglers import memory_share

        if self.stragglers is not None:
            return memory_share(self.stragglers)
        return self.barriers.get("explained_share") or 0.0

    def barrier_cause(self) -> str:
        """What the barrier waits are caused by, in words."""
        from kerneltrace.analysis.barrier_stragglers import cause_sentence

        if self.stragglers is not None:
            return (f"caused by what the last-arriving wave spends its time on: "
                    f"{cause_sentence(self.stragglers)}")
        return (f"caused by the waits before them ({self.barrier_explained:.0%} explained): the "
                "last wave arrives late because it waits on memory")


def latency_only(f: Facts) -> Bottleneck | None:
    """No stall column (legacy) or no stall recorded: the plan can only rank by latency."""
    if not f.no_stall or f.estimated:
        return None  # a stall column, or stall estimated from latency − issue: the tree decides
    top = max(f.costs.get("by_type") or [{}], key=lambda e: e.get("cost_cycles") or 0)
    why = ("No stall column in this capture (rocprofv2 legacy format)" if f.fmt == CodeFormat.LEGACY
           or f.totals.get("stall_cycles") is None else "No stall recorded in this capture")
    return Bottleneck(
        "latency-only",
        f"{why}: the plan ranks by latency; {top.get('type') or 'n/a'} instructions hold the "
        f"most cost ({_pct(top.get('share'))} of {f.costs.get('basis') or 'latency'}). A latency "
        "ranking cannot tell waiting from working.",
        [f"format {f.fmt}", f"top cost class {top.get('type')} {_pct(top.get('share'))}"],
        "low",
        helps=["re-capture with rocprofv3 ATT (stall and idle columns, wave files)"],
    )


def launch_bound(f: Facts) -> Bottleneck | None:
    """The grid leaves CUs idle (or a tail round), and the idle capacity could take more kernel
    time than any in-kernel fix: checked before every other bound (issue 21.6)."""
    gain = launch_gain(f.doc)
    if gain is None or gain[1] < f.limits.launch_gain:
        return None
    low, high, reason = gain
    return Bottleneck(
        "launch-bound",
        f"Launch-bound: {reason}; spreading the work over the idle capacity could take "
        f"{low:.0%}–{high:.0%} of the kernel time, more than any in-kernel fix of the traced "
        "waves, which run with the GPU mostly empty.",
        [reason, f"launch gain {low:.0%}–{high:.0%} of kernel time", *f.lines], "high",
        helps=["more, smaller workgroups: a smaller tile, split-K / stream-K, or several problems "
               "per launch", "for a tail: a grid that is a multiple of CUs × resident "
               "workgroups, or one more resident workgroup per CU", "then the in-wave fixes: "
               "each traced wave has its CU to itself, so its waits are exposed, not hidden"],
    )


def launch_overhead(f: Facts) -> Bottleneck | None:
    """A kernel of a few µs without a decisive in-kernel bound (compute, bandwidth, barriers,
    hazards, loop issue: checked before it): the dispatch's fixed costs (command processing,
    launching waves across the GPU, the drain) are the order of its work, so the first knob is
    above the kernel: fewer launches. The kernel time is the kernel trace's, else the traced waves' span (at the
    measured clock, else the maximum one: a lower bound)."""
    launch = f.structure.get("launch") or {}
    duration = launch.get("duration_ns")
    basis = "kernel trace"
    if not isinstance(duration, int | float) or duration <= 0:
        from kerneltrace.analysis.coverage import clock_mhz

        span = ((f.doc.get("waves") or {}).get("timing") or {}).get("span_cycles")
        mhz, basis = clock_mhz(f.doc), "the traced waves' span; no kernel trace"
        if mhz is None:  # an uncertain arch: the slowest candidate's clock, the longest time
            from kerneltrace.arch.table import slowest_clock_mhz

            mhz = slowest_clock_mhz((f.doc.get("arch") or {}).get("candidates") or [])
            basis += ", at the slowest candidate arch's clock"
        if not (isinstance(span, int) and span > 0 and mhz):
            return None
        duration = span * 1000 / mhz
    if duration > f.limits.launch_overhead_us * 1000:
        return None
    return Bottleneck(
        "launch-bound",
        f"Launch-bound (overhead): the kernel runs {duration / 1000:.1f} µs ({basis}), the order "
        "of a dispatch's fixed costs (command processing, launching the waves across the GPU, "
        "the drain): fewer launches take more time than any in-kernel fix, which can shorten "
        "only the waves' own part.",
        [f"kernel time {duration / 1000:.1f} µs ({basis}) ≤ {f.limits.launch_overhead_us:g} µs",
         *f.lines], "medium" if basis == "kernel trace" else "low",
        helps=["fuse the kernel with its producer or consumer", "more work per launch (several "
               "rows, heads or problems per dispatch)", "a HIP graph or a persistent kernel for a "
               "sequence of small launches", "then the in-wave fixes below (each wave's setup "
               "round trips are a large part of so short a kernel)"],
    )


def work_distribution(f: Facts) -> Bottleneck | None:
    """Most traced waves exit at the work-range check while the busy waves' critical path sets
    the time (`work_split_gain`): the partition, not the waves' code, is the first knob. Checked
    with the launch checks, before every in-kernel bound."""
    gain = work_distribution_bound(f.doc, f.limits)
    if gain is None:
        return None
    low, high, reason = gain.low, gain.high, gain.reason
    return Bottleneck(
        "launch-bound",
        f"Launch-bound: {reason}; re-partitioning the work over the waves that now leave "
        f"empty could take {low:.0%}–{high:.0%} of the kernel time. Findings below are costed "
        "on the busy waves.",
        [reason, f"work-distribution gain {low:.0%}–{high:.0%} of kernel time", *f.lines], "high",
        helps=["re-partition the work so every workgroup gets a share (split the work items "
               "or sequence blocks over more workgroups, or a grid sized by the work rather than "
               "by the upper bound)", "then the busy waves' own setup and loads"],
    )


# What helps a bandwidth-bound kernel (every memory-bandwidth verdict says the same): the memory
# path is full, so only fewer bytes, fewer requests or a better-shaped grid shorten it.
BANDWIDTH_HELPS = [
    "fewer bytes: reuse what is loaded (larger tiles, LDS sharing), narrower or compressed data, "
    "no re-reads of the same input, fusion with the producer/consumer",
    "fewer, larger requests (dwordx4 instead of several narrow loads of the same line)",
    "a grid without a nearly empty last round (tile count a multiple of CUs × resident "
    "workgroups, split-K / stream-K)",
]
BANDWIDTH_DOES_NOT_HELP = ["latency hiding: prefetching, reordering or spreading the loads "
                           "(a full request queue is back-pressure, not latency)",
                           "occupancy", "instruction scheduling"]


def request_bandwidth(f: Facts) -> Bottleneck | None:
    """Without PMC: the request bytes of code.json × the grid reach the HBM peak."""
    traffic = f.structure.get("traffic") or {}
    requested = traffic.get("fraction_of_peak")
    if (f.share_of_peak is not None or not isinstance(requested, int | float)
            or requested < f.limits.request_of_peak or f.memory < f.limits.request_memory_share):
        return None
    return Bottleneck(
        "memory-bandwidth",
        f"Memory-bandwidth-bound: the loads and stores request {traffic['request_gbps'] / 1000:.1f} "
        f"TB/s ({requested:.0%} of the {traffic['peak_gbps'] / 1000:.1f} TB/s HBM peak; request "
        "bytes from code.json × the grid over the kernel time, loads every workgroup repeats left "
        f"out) and {f.memory:.0%} of stall is vector memory: nothing is left to hide, only fewer "
        "bytes help.",
        [f"request bandwidth {requested:.0%} of HBM peak (estimate; PMC counters override)",
         *f.lines], "medium",
        helps=list(BANDWIDTH_HELPS), does_not_help=list(BANDWIDTH_DOES_NOT_HELP),
        time_ceiling=f.limits.bandwidth_headroom,
    )


def capture_bandwidth(f: Facts) -> Bottleneck | None:
    """Without PMC counters or a kernel trace: the traced waves' request rate per busy CU,
    scaled to the GPU (analysis/bandwidth.py), is past the bar while memory (or, in a ping-pong
    schedule, the partner's memory phase behind the barriers) holds the stall."""
    grid_rate = (f.structure.get("traffic") or {}).get("fraction_of_peak")
    if f.share_of_peak is not None or grid_rate is not None:
        # PMC measured the traffic, or the grid's request bytes over the kernel's measured time
        # gave the dispatch's rate (request_bandwidth): a steady-state extrapolation from the
        # traced CUs is only for captures without a kernel trace (one short round bursts)
        return None
    estimate = f.bandwidth
    phase = f.barrier if f.ping_pong else 0.0
    if (estimate is None or estimate.fraction_of_peak < f.limits.capture_request_of_peak
            or f.memory + phase < f.limits.memory_share):
        return None
    issue = type_share(f.doc, isa.VMEM_LOAD, isa.VMEM_STORE) if not f.no_stall else None
    return Bottleneck(
        "memory-bandwidth",
        f"Memory-bandwidth-bound: the traced waves request {estimate.per_cu_bytes_per_clk:.1f} B "
        f"per clock per busy CU, {estimate.device_gbps / 1000:.1f} TB/s on "
        f"{estimate.busy_cus} CUs ({estimate.fraction_of_peak:.0%} of the "
        f"{estimate.peak_gbps / 1000:.1f} TB/s HBM peak"
        + ("; assumed: every CU as busy as the traced ones, no kernel trace" if estimate.cus_assumed
           else "") + f") and {f.memory + phase:.0%} of stall is memory"
        + (" or the partner group's memory phase" if phase else "")
        + ": the memory path is full, so loads wait or cannot issue (back-pressure) and "
        "hiding latency cannot help; only fewer bytes or requests, or a better grid, do.",
        [f"request rate {estimate.fraction_of_peak:.0%} of HBM peak from the capture: "
         f"{estimate.basis} (PMC counters override)",
         *([f"vector-memory issue stall {issue:.0%} (loads that cannot issue: a full queue)"]
           if issue else []), *f.lines],
        "low" if estimate.cus_assumed else "medium",
        helps=list(BANDWIDTH_HELPS), does_not_help=list(BANDWIDTH_DOES_NOT_HELP),
        time_ceiling=f.limits.bandwidth_headroom,
    )


def compute_mfma(f: Facts) -> Bottleneck | None:
    """The hot loop keeps the matrix pipe busy: compute-bound on MFMA."""
    busy, loop = f.mfma_busy, f.loop
    floor = busy is None
    busy = f.mfma_busy_floor if floor else busy
    if busy is None or busy < f.limits.mfma_bound:
        return None
    how = (" at least (no wave files: one wave's MFMA pass cycles over its loop time in "
           "code.json; other waves on the SIMD only add)" if floor else "")
    return Bottleneck(
        "compute-mfma",
        f"Compute-bound on the matrix pipe: the hot loop (rows {loop['first_index']}–"
        f"{loop['last_index']}, {loop['split']['loop_share']:.0%} of the waves' time) keeps MFMA "
        f"busy {busy:.0%}{how}; at most {1 - busy:.0%} of it is anything else.",
        [f"hot-loop MFMA busy {'≥ ' if floor else ''}{busy:.0%}",
         f"loop share {loop['split']['loop_share']:.0%}", *f.lines],
        "high" if busy >= f.limits.mfma_high_confidence else "medium",
        ceiling=round(1 - busy, 4),
        helps=["fewer MFMA pass cycles: a faster MFMA shape, lower precision, less redundant "
               "compute", "more work per MFMA (larger tiles) only if it does not lengthen the loop"],
        does_not_help=["hiding load latency, prefetching, more occupancy for latency hiding"],
    )


def compute_valu(f: Facts) -> Bottleneck | None:
    """The vector ALU is busy most of the waves' resident time."""
    valu = f.busy.get("VALU")
    if not isinstance(valu, int | float) or valu < f.limits.valu_bound:
        return None
    return Bottleneck(
        "compute-valu",
        f"Compute-bound on the vector ALU: VALU busy {valu:.0%} of the waves' resident time.",
        [f"VALU busy {valu:.0%}", *f.lines], "medium", ceiling=round(1 - valu, 4),
        helps=["fewer VALU instructions (packed math, hoisting, cheaper conversions)",
               "moving matrix-shaped work to MFMA"],
        does_not_help=["hiding load latency"],
    )


def memory_bandwidth(f: Facts) -> Bottleneck | None:
    """PMC counters show the memory path near peak while memory stall dominates."""
    peak = f.share_of_peak
    if peak is None or peak < f.limits.bandwidth_of_peak or f.memory < f.limits.memory_share:
        return None
    return Bottleneck(
        "memory-bandwidth",
        f"Memory-bandwidth-bound: the kernel moves data at {peak:.0%} of peak and "
        f"{f.memory:.0%} of stall is vector-memory.",
        [f"achieved bandwidth {peak:.0%} of peak", *f.lines], "high",
        helps=list(BANDWIDTH_HELPS), does_not_help=list(BANDWIDTH_DOES_NOT_HELP),
        time_ceiling=f.limits.bandwidth_headroom,
    )


def memory_streaming(f: Facts) -> Bottleneck | None:
    """Few loads per wave, no reuse, memory stall dominates: a streaming kernel."""
    streaming, loads_per_wave = f.streaming
    if not streaming or f.memory < f.limits.memory_share:
        return None
    return Bottleneck(
        "memory-streaming",
        f"Bandwidth/latency-bound streaming kernel: {loads_per_wave} vector load(s) per wave, no "
        f"reuse, {f.memory:.0%} of stall waiting on vector memory; each wave issues its loads and "
        "waits for them with nothing else to do.",
        [f"{loads_per_wave} vector loads per wave", "no MFMA, no LDS", *f.lines], "high",
        ceiling=round(f.memory * f.limits.streaming_hideable, 4),
        helps=["more bytes in flight per wave: wider loads (dwordx4), several elements per "
               "thread, loads issued before any wait", "enough waves per CU (occupancy, grid "
               "size) to cover memory latency"],
        does_not_help=["software pipelining inside a loop (there is none)", "LDS staging "
                       "(no reuse)", "scale-load reordering"],
    )


def synchronisation(f: Facts) -> Bottleneck | None:
    """Barriers hold a large share of stall."""
    if f.barrier < f.limits.barrier_share or f.barrier_caused:
        return None
    imbalance = f.peers.get("barrier_imbalance")
    vector = f.latency_mix.get("vector_work_share", 0.0) if f.ping_pong else 0.0
    if vector >= f.limits.ping_pong_vector_share:
        return Bottleneck(
            "issue-dependency",
            f"Issue-bound (ping-pong phase imbalance from vector work): barriers hold "
            f"{f.barrier:.0%} of stall as one wave group waits for its partner's phase, and "
            f"that phase is long because of the wave's own VALU/SALU instructions "
            f"({vector:.0%} of the hot loop's latency: address arithmetic, conversions, loop "
            "control) and the LDS round trips between them, not because of memory "
            f"({f.memory + f.lds_smem:.0%} of stall).",
            [f"barrier stall {f.barrier:.0%}", f"hot-loop latency: VALU/SALU {vector:.0%}",
             *f.lines], "medium",
            helps=["take the vector work out of the phase: unroll short inner loops so their "
                   "addresses fold into instruction offsets, hoist loop-invariant address math",
                   "issue the phase's LDS reads before one wait", "then the barrier schedule"],
            does_not_help=["removing the barriers (they are the schedule)",
                           "deeper memory prefetching"],
        )
    if f.ping_pong:
        return Bottleneck(
            "synchronisation",
            f"Synchronisation-bound (ping-pong phase imbalance): barriers hold {f.barrier:.0%} of "
            "stall while memory holds only {:.0%}: one wave group waits at the pairing barrier "
            "for its partner's load/LDS phase, which is longer than the MFMA phase it should "
            "hide behind because of the instructions it issues — shorten that phase, keep the "
            "barriers.".format(f.memory + f.lds_smem),
            [f"barrier stall {f.barrier:.0%}", *f.lines], "medium",
            helps=["spread the global loads of the load phase, split the LDS reads and their "
                   "waits across it, move address arithmetic out of it"],
            does_not_help=["removing the barriers (they are the schedule)", "more waves per SIMD"],
        )
    return Bottleneck(
        "synchronisation",
        f"Synchronisation-bound: barriers hold {f.barrier:.0%} of stall"
        + (f"; {imbalance:.0%} of the barrier wait is waves waiting for a slower wave "
           "(imbalance)" if imbalance is not None else "")
        + (f"; barrier waits are {f.barrier_cause()}" if f.stragglers is not None else "") + ".",
        [f"barrier stall {f.barrier:.0%}",
         f"barrier imbalance {_pct(imbalance)}", *f.lines],
        "high" if imbalance is not None else "medium",
        helps=["balance work between the waves of a workgroup", "fewer barriers per iteration "
               "(double-buffered LDS)"],
        does_not_help=["faster loads in one wave while the others wait at the barrier"],
    )


def nop_hazards(f: Facts) -> Bottleneck | None:
    """`s_nop` hazard padding holds a large share of stall."""
    if f.nop < f.limits.nop_share:
        return None
    return Bottleneck(
        "issue-dependency",
        f"Issue-bound on hazards: `s_nop` holds {f.nop:.0%} of stall (waits the compiler inserts "
        "after transcendental, MFMA or VALU-write → read hazards).",
        [f"s_nop stall {f.nop:.0%}", *f.lines], "medium",
        helps=["interleave independent work between the hazard producer and its consumer"],
        does_not_help=["memory latency hiding"],
    )


def loop_issue(f: Facts) -> Bottleneck | None:
    """The hot loop's matrix pipe idles while dependent non-matrix work, not waits, holds it."""
    busy, mix = f.mfma_busy, f.mix
    if not (busy is not None and busy < f.limits.low_mfma_busy
            and mix.get("issue", 0) >= f.limits.loop_issue_share
            and mix.get("waits", 1) < f.limits.loop_wait_share):
        return None
    parts = ", ".join(f"{kind} {mix[kind]:.0%}" for kind in ISSUE_TYPES
                      if mix.get(kind, 0) >= f.limits.mix_listed_share)
    return Bottleneck(
        "issue-dependency",
        f"Issue/dependency-bound in the hot loop: the MFMA pipe is busy only {busy:.0%} and "
        f"{mix['issue']:.0%} of the loop's stall is dependent non-matrix work ({parts}), only "
        f"{mix['waits']:.0%} memory waits: the vector/scalar work between MFMAs (softmax, "
        "masking, conversions) and its hazards set the pace.",
        [f"hot-loop MFMA busy {busy:.0%}", f"loop stall: issue {mix['issue']:.0%}, waits "
         f"{mix['waits']:.0%}", *f.lines], "medium",
        helps=["overlap the VALU/transcendental work of tile k with the MFMAs of tile k+1 "
               "(ping-pong two waves per SIMD or interleave in one)", "fewer compare/select and "
               "conversion instructions per element", "the `s_nop` hazard fixes"],
        does_not_help=["deeper memory prefetching alone (waits are the minority of the loop)"],
    )


def loop_work(f: Facts) -> Bottleneck | None:
    """The hot loop's latency is mostly VALU/SALU work (issue + dependent-issue stall), more
    than its waits: issue-bound however the stall ranking reads (review_blind.md weakness 4)."""
    mix, busy = f.latency_mix, f.mfma_busy
    vector, waits = mix.get("vector_work_share", 0.0), mix.get("wait_share", 0.0)
    if (vector < f.limits.loop_work_share or vector <= waits
            or (busy is not None and busy >= f.limits.mfma_bound)):
        return None
    valu = mix["by_type"].get(isa.VALU) or {}
    total = mix["latency_cycles"]
    issue, stall = (valu.get("issue", 0) / total, valu.get("stall", 0) / total) if total else (0, 0)
    mfma_rows = (mix["by_type"].get(isa.MFMA) or {}).get("rows", 0)
    loop = f.region
    straight = bool(loop.get("straight_line"))
    where = (f"straight-line code, no loop (rows {loop['first_index']}–{loop['last_index']}, each "
             "once per wave)" if straight else
             f"the hot loop (rows {loop['first_index']}–{loop['last_index']})")
    unit, per = ("the wave's", "per wave") if straight else ("the loop's", "per iteration")
    return Bottleneck(
        "issue-dependency",
        f"Issue-bound on vector work in {where}: VALU/SALU instructions hold {vector:.0%} of "
        f"{unit} latency (VALU issue {issue:.0%}, VALU waiting to issue {stall:.0%}; "
        f"{valu.get('rows', 0)} VALU vs {mfma_rows} MFMA rows {per}) against {waits:.0%} waits: "
        "the time is the kernel's own instructions, so hiding memory leaves most of it.",
        [f"{'wave' if straight else 'hot-loop'} latency: VALU/SALU {vector:.0%}, waits {waits:.0%}, MFMA "
         f"{mix['shares'].get(isa.MFMA, 0.0):.0%}", *([f"hot-loop MFMA busy {busy:.0%}"]
                                                       if busy is not None else []), *f.lines],
        "medium", ceiling=round(1 - vector, 4),
        helps=["fewer VALU instructions per iteration: fold scales into the MFMA scale operands "
               "(or apply them once after the reduction), packed math, fewer relu/add passes",
               "independent work between an MFMA (or VALU) and the instruction reading its "
               "result: the dependent-issue stalls", "then the memory waits"],
        does_not_help=[f"deeper memory prefetching alone (waits hold {waits:.0%} of the loop)"],
    )


def _before_the_loop(f: Facts) -> tuple[float, float] | None:
    """(share of the waves' time before the code.json hot loop, the loop's share) when the
    kernel iterates but its hot loop holds less than most of the waves' time (issue 21.5)."""
    flow = f.structure.get("control_flow") or {}
    hot = flow.get("hot_loop") or {}
    before, loop = flow.get("prologue_share"), hot.get("time_share")
    if not hot or not isinstance(before, int | float) or not isinstance(loop, int | float):
        return None
    return (before, loop) if loop < f.limits.min_loop_share else None


def prologue(f: Facts) -> Bottleneck | None:
    """Once-per-wave setup is a large share of the waves' cost: the kernel-argument round trips,
    or everything before a hot loop that holds less than most of the waves' time."""
    share = prologue_share(f.doc, f.waves_traced)
    before = _before_the_loop(f)
    if share < f.limits.prologue_share and (before is None or before[0] < f.limits.prologue_share):
        return None
    serial = (f.structure.get("setup") or {}).get("serialized_round_trips") or 0
    what = (f"once-per-wave setup (kernel-argument scalar loads and their waits) is {share:.0%} "
            "of the waves' cost" if share >= f.limits.prologue_share else
            f"the code before the hot loop (kernel-argument round trips, address setup, the first "
            f"loads) is {before[0]:.0%} of the waves' time and the loop only {before[1]:.0%}")
    return Bottleneck(
        "prologue",
        f"Prologue-dominated: {what}; each wave does too little work to amortise it.",
        [f"once-per-wave setup {share:.0%} of cost",
         *([f"before the hot loop {before[0]:.0%} of the waves' time, the loop {before[1]:.0%}"]
           if before else []), *f.lines], "medium",
        helps=(["one kernel-argument round trip instead of several: hoist the late `s_load` "
                "batches into the first, or preload the arguments"] if serial else [])
        + ["more work per wave (persistent waves, several tiles per wave)",
           "fewer kernel launches (fusion)"],
        does_not_help=[] if serial else
        ["optimising the setup loads themselves (one round trip: its latency is fixed)"],
    )


def tail(f: Facts) -> Bottleneck | None:
    """The slowest waves end long after the median and the exit drain is large."""
    if f.tail < f.limits.tail_share or f.drain < f.limits.tail_drain_share:
        return None
    return Bottleneck(
        "tail",
        f"Tail-bound: the slowest waves finish {f.tail:.0%} of the traced span after the median "
        f"wave and the `s_endpgm` drain is {f.drain:.0%} of cost.",
        [f"tail {f.tail:.0%} of span", *f.lines], "medium",
        helps=["smaller last wave of work (grid shape)", "fewer outstanding stores at exit"],
    )


def request_queue(f: Facts) -> Bottleneck | None:
    """Most of the stall is vector loads and stores that cannot issue (the request queue is
    full), not waits for their results: the memory path accepts requests no faster. Narrow or
    scattered accesses (a transpose's 2-byte gathers) cost one transaction each, so the queue
    fills while the bytes stay far below the peak; prefetching adds requests to a full queue.
    Checked last before memory-latency: a launch, compute or bytes bound reads first."""
    waits = f.memory - f.memory_issue + f.lds_smem
    if f.memory_issue < f.limits.request_queue_share or f.memory_issue <= waits:
        return None
    return Bottleneck(
        "memory-bandwidth",
        f"Memory-bound on requests: {f.memory_issue:.0%} of stall is vector loads and stores "
        f"that cannot issue because the request queue is full, against {waits:.0%} waiting for "
        "results: the memory path takes requests no faster. Narrow or scattered accesses cost a "
        "transaction each, so it fills below the bytes peak; fewer, wider requests help, "
        "prefetching adds requests to a full queue.",
        [f"vector-memory issue stall {f.memory_issue:.0%} (a full request queue)",
         f"memory waits {waits:.0%}", *f.lines], "medium",
        helps=["fewer, wider requests: 16-byte loads and stores per lane, coalesced (consecutive "
               "lanes on consecutive addresses; a transpose through LDS)", *BANDWIDTH_HELPS[:1]],
        does_not_help=list(BANDWIDTH_DOES_NOT_HELP),
        time_ceiling=f.limits.bandwidth_headroom,
    )


def memory_latency(f: Facts) -> Bottleneck | None:
    """Memory waits (vector, LDS, scalar) dominate stall; says when the loop is partly issue-bound."""
    memory, lds_smem, non_hidden, mix = f.memory, f.lds_smem, f.non_hidden, f.mix
    # in a ping-pong schedule waiting on memory the barrier waits are the partner's memory phase
    phase = f.barrier if f.ping_pong_memory else 0.0
    if memory + lds_smem + phase < f.limits.memory_share:
        return None
    kind_facts = [*f.lines]
    if f.mfma_busy is not None:
        kind_facts.insert(0, f"hot-loop MFMA busy {f.mfma_busy:.0%}")
    off_chip = memory + lds_smem - f.lds_only_waits
    if not f.no_stall and f.lds_round_trips > off_chip:
        return lds_round_trips(f, off_chip)
    split = mix.get("issue", 0) >= f.limits.mixed_issue_share
    if split:
        kind_facts.insert(1, f"hot-loop stall: waits {mix['waits']:.0%}, dependent issue "
                             f"{mix['issue']:.0%}")
    return Bottleneck(
        "memory-latency",
        f"Memory-latency-bound: {memory + lds_smem:.0%} of stall waits on memory "
        f"(vector {memory:.0%}, LDS/scalar {lds_smem:.0%})"
        + (f" and {non_hidden:.0%} of the cost is not hidden by other waves" if non_hidden else "")
        + (f"; but in the hot loop dependent VALU/`s_nop`/MFMA work holds {mix['issue']:.0%} of "
           f"the stall next to {mix['waits']:.0%} waits, so hiding memory alone leaves the "
           "issue-bound part" if split else "")
        + (f"; ping-pong schedule: the barrier waits ({f.barrier:.0%} of stall) are one wave group "
           "waiting for its partner's load/LDS phase — shorten that phase, keep the barriers"
           if f.ping_pong_memory and f.barrier >= f.limits.barrier_mention else
           f"; barrier waits ({f.barrier:.0%} of stall) are {f.barrier_cause()}"
           if f.barrier >= f.limits.barrier_mention and f.barrier_caused else "")
        + ".",
        kind_facts, "medium" if non_hidden is None or split else "high",
        helps=["issue loads earlier (prefetch / software pipeline)", "more waves to overlap "
               "waits (occupancy)", "wait only right before the consumer"]
        + (["overlap the VALU/transcendental work with MFMAs; the `s_nop` hazard fixes"]
           if split else []),
    )


def lds_round_trips(f: Facts, off_chip: float) -> Bottleneck:
    """Memory-shaped stall that is mostly on-chip: LDS instructions and the waits for their
    results hold more of it than the off-chip (vector, scalar) memory waits. Latency from LDS
    round trips is set by the kernel's own data exchange (layout changes, reductions, fragments
    read back one wait at a time), not by DRAM: prefetching deeper does not touch it."""
    return Bottleneck(
        "issue-dependency",
        f"Issue/dependency-bound on LDS round trips: LDS instructions and the waits for their "
        f"results hold {f.lds_round_trips:.0%} of stall, more than the {off_chip:.0%} that waits "
        "on off-chip memory: data exchanged through LDS (a layout change written, fenced and "
        "read back; fragments read one wait at a time) and waited for before the next step sets "
        "the pace.",
        [f"LDS round trips {f.lds_round_trips:.0%} of stall (LDS issue + LDS-only waits)",
         f"off-chip memory waits {off_chip:.0%}", *f.lines], "medium",
        helps=["fewer LDS round trips: change layouts in registers (DPP, permlane, "
               "`ds_bpermute`) or fuse the producer's layout with the consumer's",
               "issue every LDS read of a step before one wait, wider LDS operations (b64/b128)",
               "then the off-chip memory waits"],
        does_not_help=["deeper global-memory prefetching alone (the waits are on-chip)"],
    )


def mixed(f: Facts) -> Bottleneck:
    return Bottleneck(
        "mixed",
        "No single bound dominates: stall is spread over several classes; take the findings in "
        "order.", f.lines, "low",
    )


# The reading order: the first check that applies is the verdict (mixed when none does).
CHECKS: tuple[Callable[[Facts], Bottleneck | None], ...] = (
    launch_bound, work_distribution, latency_only, compute_mfma, compute_valu, memory_bandwidth,
    request_bandwidth, capture_bandwidth, memory_streaming, synchronisation, nop_hazards,
    loop_issue, loop_work, launch_overhead, prologue, tail, request_queue, memory_latency,
)


# The bars a bound must clear, by the threshold that sets each, and what the facts hold of it
BARS: tuple[tuple[str, str, Callable[[Facts], float | None]], ...] = (
    ("memory_share", "memory waits", lambda f: f.memory + f.lds_smem),
    ("barrier_share", "barrier stall", lambda f: f.barrier),
    ("nop_share", "`s_nop` stall", lambda f: f.nop),
    ("mfma_bound", "hot-loop MFMA busy",
     lambda f: f.mfma_busy if f.mfma_busy is not None else f.mfma_busy_floor),
    ("valu_bound", "VALU busy", lambda f: f.busy.get("VALU")),
)


def _first_check(facts: Facts) -> Bottleneck | None:
    return next((v for v in (check(facts) for check in CHECKS) if v is not None), None)


def lean(facts: Facts) -> Bottleneck | None:
    """No bound clears its bar: the verdict of the bound nearest its bar (the largest fraction
    of it, at least `lean_share`), with that one bar lowered to what the kernel shows, at low
    confidence. An engineer names the bound a kernel is closest to; "mixed" names none."""
    limits = facts.limits
    nearest = max(((value / getattr(limits, name), name, label, value)
                   for name, label, get in BARS
                   if isinstance(value := get(facts), int | float) and getattr(limits, name) > 0),
                  default=None)
    if nearest is None or nearest[0] < limits.lean_share:
        return None
    _, name, label, value = nearest
    verdict = _first_check(Facts(facts.doc, facts.l2, replace(limits, **{name: value})))
    if verdict is None:
        return None
    bar = getattr(limits, name)
    return replace(
        verdict, confidence="low",
        sentence=f"No bound clears its bar; the nearest is {label} at {value:.0%} against "
                 f"{bar:.0%}. {verdict.sentence}",
        evidence=[f"nearest bar: {label} {value:.0%} of {bar:.0%}", *verdict.evidence])


def decide(doc: dict, l2: dict | None = None,
           limits: VerdictThresholds = DEFAULT_VERDICT) -> Bottleneck:
    """The verdict for one hotspot document (and its L2 metrics when PMC was collected); from
    estimated stall, with low confidence, when the capture has no stall column."""
    facts = Facts(doc, l2, limits)
    verdict = _first_check(facts) or lean(facts) or mixed(facts)
    return replace(verdict, confidence="low") if facts.no_stall else verdict
