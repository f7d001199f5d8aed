"""The bottleneck verdict: what bounds one dispatch (kind, evidence, confidence), decided first.

A senior kernel engineer reads a thread trace top-down: is the hot loop's matrix or vector pipe
saturated (compute), are waves waiting on memory with nothing else to do (memory latency, or a
streaming kernel with too few bytes in flight), on each other (barriers, and how unbalanced),
on instruction hazards (`s_nop`, dependent chains), on once-per-wave setup (prologue), or on the
end of the dispatch (tail, `s_endpgm` drain)? The thresholds below are that reading written down;
each verdict carries the figures that decided it. `ceiling` is what the verdict leaves for any
finding that does not attack the bound: the non-bound share of the hot loop (1 − pipe busy) for
compute-bound kernels, the hideable part of the memory stall for streaming kernels, 1 otherwise
(kerneltrace/plan/gains.py applies it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kerneltrace.isa import classify as isa

MFMA_BOUND = 0.8  # hot-loop MFMA busy fraction from which the matrix pipe bounds the loop
LOW_MFMA_BUSY = 0.5  # below this the matrix pipe idles half of the loop's time
VALU_BOUND = 0.6  # VALU pipe busy share (of resident time) from which vector ALU work bounds it
MIN_LOOP_SHARE = 0.25  # a loop must hold this much of the waves' time to decide the verdict
STREAMING_MAX_LOADS = 8  # executed vector-load instructions per wave in a streaming kernel
STREAMING_MAX_EXECUTED = 200  # executed instructions of a short streaming kernel
MEMORY_SHARE = 0.4
STREAMING_HIDEABLE = 0.4  # more bytes in flight hides at most this much of a streaming kernel's memory stall  # stall share of vector-memory waits/issue for a memory verdict
BARRIER_SHARE = 0.3
NOP_SHARE = 0.2
PROLOGUE_SHARE = 0.4
TAIL_SHARE = 0.4
BANDWIDTH_OF_PEAK = 0.5  # counters.md §5: at or above half of peak the memory path is busy

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

    def to_dict(self) -> dict:
        return asdict(self)


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


def hot_loop(doc: dict) -> dict | None:
    """The hottest wave-observed loop holding at least MIN_LOOP_SHARE of the waves' time."""
    for loop in (doc.get("waves") or {}).get("loops") or []:
        if ((loop.get("split") or {}).get("loop_share") or 0) >= MIN_LOOP_SHARE:
            return loop
    return None


ISSUE_TYPES = (isa.VALU, isa.NOP, isa.MFMA, isa.SALU)
LOOP_ISSUE_SHARE = 0.5  # of the hot loop's stall on dependent VALU/s_nop/MFMA/SALU issue
MIXED_ISSUE_SHARE = 0.35  # memory verdicts name the issue-bound part of the loop from here


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


def streaming_shape(doc: dict, waves: int | None) -> tuple[bool, int]:
    """(is a streaming kernel, vector loads per wave): few loads, no MFMA, no LDS reuse;
    `waves`: the document's `wave_count`."""
    executed = [ins for ins in doc.get("instructions") or [] if (ins.get("hits") or 0) > 0]
    kinds = {ins.get("type") for ins in executed}
    loads = [ins for ins in executed if ins.get("type") == isa.VMEM_LOAD]
    per_wave = round(sum(ins.get("hits") or 0 for ins in loads) / (waves or 1))
    small = len(executed) <= STREAMING_MAX_EXECUTED
    shape = bool(loads) and isa.MFMA not in kinds and isa.LDS not in kinds and small
    return shape and per_wave <= STREAMING_MAX_LOADS, per_wave


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def decide(doc: dict, l2: dict | None = None) -> Bottleneck:
    """The verdict for one hotspot document (and its L2 metrics when PMC was collected)."""
    fmt = doc.get("format")
    totals = doc.get("totals") or {}
    waves = doc.get("waves") or {}
    peers = waves.get("peers") or {}
    busy = peers.get("pipe_busy") or {}
    costs = doc.get("costs") or {}
    drain = (costs.get("endpgm_drain") or {}).get("share") or 0.0
    timing = waves.get("timing") or {}
    span = timing.get("span_cycles") or 0
    tail = (timing.get("tail_cycles") or 0) / span if span else 0.0
    memory = type_share(doc, *MEMORY_TYPES)
    lds_smem = type_share(doc, isa.LDS_SMEM_WAIT)
    barrier = type_share(doc, isa.BARRIER)
    nop = type_share(doc, isa.NOP)
    non_hidden = peers.get("non_hidden_share")
    facts = [f"vector-memory stall {_pct(memory)}", f"LDS/SMEM waits {_pct(lds_smem)}",
             f"barrier {_pct(barrier)}", f"s_nop {_pct(nop)}",
             f"s_endpgm drain {_pct(drain)} of cost"]
    if non_hidden is not None:
        facts.append(f"non-hidden cost {_pct(non_hidden)} (no other wave issued meanwhile)")

    if fmt == "legacy" or (not totals.get("stall_cycles") and fmt != "pcsampling"):
        top = max(costs.get("by_type") or [{}], key=lambda e: e.get("cost_cycles") or 0)
        why = ("No stall column in this capture (rocprofv2 legacy format)" if fmt == "legacy"
               or totals.get("stall_cycles") is None else "No stall recorded in this capture")
        return Bottleneck(
            "latency-only",
            f"{why}: the plan ranks by latency; {top.get('type') or 'n/a'} instructions hold the "
            f"most cost ({_pct(top.get('share'))} of {costs.get('basis') or 'latency'}). A latency "
            "ranking cannot tell waiting from working.",
            [f"format {fmt}", f"top cost class {top.get('type')} {_pct(top.get('share'))}"],
            "low",
            helps=["re-capture with rocprofv3 ATT (stall and idle columns, wave files)"],
        )

    loop = hot_loop(doc)
    mfma_busy = (loop or {}).get("mfma_busy_fraction")
    if isinstance(mfma_busy, int | float) and mfma_busy >= MFMA_BOUND:
        return Bottleneck(
            "compute-mfma",
            f"Compute-bound on the matrix pipe: the hot loop (rows {loop['first_index']}–"
            f"{loop['last_index']}, {loop['split']['loop_share']:.0%} of the waves' time) keeps MFMA "
            f"busy {mfma_busy:.0%}; at most {1 - mfma_busy:.0%} of it is anything else.",
            [f"hot-loop MFMA busy {mfma_busy:.0%}", f"loop share {loop['split']['loop_share']:.0%}",
             *facts],
            "high" if mfma_busy >= 0.9 else "medium",
            ceiling=round(1 - mfma_busy, 4),
            helps=["fewer MFMA pass cycles: a faster MFMA shape, lower precision, less redundant "
                   "compute", "more work per MFMA (larger tiles) only if it does not lengthen the loop"],
            does_not_help=["hiding load latency, prefetching, more occupancy for latency hiding"],
        )
    valu = busy.get("VALU")
    if isinstance(valu, int | float) and valu >= VALU_BOUND:
        return Bottleneck(
            "compute-valu",
            f"Compute-bound on the vector ALU: VALU busy {valu:.0%} of the waves' resident time.",
            [f"VALU busy {valu:.0%}", *facts], "medium", ceiling=round(1 - valu, 4),
            helps=["fewer VALU instructions (packed math, hoisting, cheaper conversions)",
                   "moving matrix-shaped work to MFMA"],
            does_not_help=["hiding load latency"],
        )
    waves_traced = wave_count(doc)
    streaming, loads_per_wave = streaming_shape(doc, waves_traced)
    peaks = [v for v in ((l2 or {}).get("fraction_of_peak"), (l2 or {}).get("total_fraction_of_peak"))
             if isinstance(v, int | float)]
    share_of_peak = max(peaks) if peaks else None
    if isinstance(share_of_peak, int | float) and share_of_peak >= BANDWIDTH_OF_PEAK and memory >= MEMORY_SHARE:
        return Bottleneck(
            "memory-bandwidth",
            f"Memory-bandwidth-bound: the kernel moves data at {share_of_peak:.0%} of peak and "
            f"{memory:.0%} of stall is vector-memory.",
            [f"achieved bandwidth {share_of_peak:.0%} of peak", *facts], "high",
            helps=["fewer bytes: fuse, compress, avoid over-fetch"],
            does_not_help=["latency hiding; occupancy; instruction scheduling"],
        )
    if streaming and memory >= MEMORY_SHARE:
        return Bottleneck(
            "memory-streaming",
            f"Bandwidth/latency-bound streaming kernel: {loads_per_wave} vector load(s) per wave, no "
            f"reuse, {memory:.0%} of stall waiting on vector memory; each wave issues its loads and "
            "waits for them with nothing else to do.",
            [f"{loads_per_wave} vector loads per wave", "no MFMA, no LDS", *facts], "high",
            ceiling=round(memory * STREAMING_HIDEABLE, 4),
            helps=["more bytes in flight per wave: wider loads (dwordx4), several elements per "
                   "thread, loads issued before any wait", "enough waves per CU (occupancy, grid "
                   "size) to cover memory latency"],
            does_not_help=["software pipelining inside a loop (there is none)", "LDS staging "
                           "(no reuse)", "scale-load reordering"],
        )
    if barrier >= BARRIER_SHARE:
        imbalance = peers.get("barrier_imbalance")
        return Bottleneck(
            "synchronisation",
            f"Synchronisation-bound: barriers hold {barrier:.0%} of stall"
            + (f"; {imbalance:.0%} of the barrier wait is waves waiting for a slower wave "
               "(imbalance)" if imbalance is not None else "") + ".",
            [f"barrier stall {barrier:.0%}",
             f"barrier imbalance {_pct(imbalance)}", *facts],
            "high" if imbalance is not None else "medium",
            helps=["balance work between the waves of a workgroup", "fewer barriers per iteration "
                   "(double-buffered LDS)"],
            does_not_help=["faster loads in one wave while the others wait at the barrier"],
        )
    if nop >= NOP_SHARE:
        return Bottleneck(
            "issue-dependency",
            f"Issue-bound on hazards: `s_nop` holds {nop:.0%} of stall (waits the compiler inserts "
            "after transcendental, MFMA or VALU-write → read hazards).",
            [f"s_nop stall {nop:.0%}", *facts], "medium",
            helps=["interleave independent work between the hazard producer and its consumer"],
            does_not_help=["memory latency hiding"],
        )
    mix = loop_stall_mix(doc, loop) if loop else {}
    if (isinstance(mfma_busy, int | float) and mfma_busy < LOW_MFMA_BUSY
            and mix.get("issue", 0) >= LOOP_ISSUE_SHARE and mix.get("waits", 1) < 0.5):
        parts = ", ".join(f"{kind} {mix[kind]:.0%}" for kind in ISSUE_TYPES if mix.get(kind, 0) >= 0.05)
        return Bottleneck(
            "issue-dependency",
            f"Issue/dependency-bound in the hot loop: the MFMA pipe is busy only {mfma_busy:.0%} and "
            f"{mix['issue']:.0%} of the loop's stall is dependent non-matrix work ({parts}), only "
            f"{mix['waits']:.0%} memory waits: the vector/scalar work between MFMAs (softmax, "
            "masking, conversions) and its hazards set the pace.",
            [f"hot-loop MFMA busy {mfma_busy:.0%}", f"loop stall: issue {mix['issue']:.0%}, waits "
             f"{mix['waits']:.0%}", *facts], "medium",
            helps=["overlap the VALU/transcendental work of tile k with the MFMAs of tile k+1 "
                   "(ping-pong two waves per SIMD or interleave in one)", "fewer compare/select and "
                   "conversion instructions per element", "the `s_nop` hazard fixes"],
            does_not_help=["deeper memory prefetching alone (waits are the minority of the loop)"],
        )
    prologue = prologue_share(doc, waves_traced)
    if prologue >= PROLOGUE_SHARE:
        return Bottleneck(
            "prologue",
            f"Prologue-dominated: once-per-wave setup (kernel-argument scalar loads and their waits) "
            f"is {prologue:.0%} of the waves' cost; each wave does too little work to amortise it.",
            [f"once-per-wave setup {prologue:.0%} of cost", *facts], "medium",
            helps=["more work per wave (persistent waves, several tiles per wave)",
                   "fewer kernel launches (fusion)"],
            does_not_help=["optimising the setup loads themselves (their latency is fixed)"],
        )
    if tail >= TAIL_SHARE and drain >= 0.2:
        return Bottleneck(
            "tail",
            f"Tail-bound: the slowest waves finish {tail:.0%} of the traced span after the median "
            f"wave and the `s_endpgm` drain is {drain:.0%} of cost.",
            [f"tail {tail:.0%} of span", *facts], "medium",
            helps=["smaller last wave of work (grid shape)", "fewer outstanding stores at exit"],
        )
    if memory + lds_smem >= MEMORY_SHARE:
        kind_facts = [*facts]
        if isinstance(mfma_busy, int | float):
            kind_facts.insert(0, f"hot-loop MFMA busy {mfma_busy:.0%}")
        split = mix.get("issue", 0) >= MIXED_ISSUE_SHARE
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
            + ".",
            kind_facts, "medium" if non_hidden is None or split else "high",
            helps=["issue loads earlier (prefetch / software pipeline)", "more waves to overlap "
                   "waits (occupancy)", "wait only right before the consumer"]
            + (["overlap the VALU/transcendental work with MFMAs; the `s_nop` hazard fixes"]
               if split else []),
        )
    return Bottleneck(
        "mixed",
        "No single bound dominates: stall is spread over several classes; take the findings in "
        "order.", facts, "low",
    )
