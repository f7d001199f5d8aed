"""Hotspot patterns on LDS and small loads: P3 LDS read right before its MFMA, P4 late scale load."""

from __future__ import annotations

from kerneltrace.isa.classify import LDS, SMEM, VMEM_LOAD, VMEM_STORE
from kerneltrace.isa.registers import operands, reads, registers
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules._util import (
    is_lds_read,
    is_mfma,
    is_small_load,
    is_vmem_load,
    stalled,
)
from kerneltrace.plan.rules.drain import (
    LGKM_COUNTERS,
    Drain,
    PatternThresholds,
    charged_note,
    exposed_drain,
    exposed_wait_stall,
    unique_by_index,
)
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import once_per_wave, total_stall


@plan_rule(id="P3-lds-read-before-mfma", lever="memory-pipeline", calibrated=True,
           optional=("waves",), order=80, thresholds=(PatternThresholds,))
def lds_read_before_mfma(ctx: PlanContext) -> list[Finding]:
    """LDS reads waited for right before the MFMA that consumes them.

    P3: `ds_read` → its draining `s_waitcnt lgkmcnt` → the MFMA consuming it, with too little matrix
    work between read and wait to cover LDS latency (cyclic inside loop bodies).

    Trigger: an LDS read whose first draining `lgkmcnt`/`dscnt` wait (cyclic inside loop bodies, as
        P1) stalls, comes after < 128 MFMA pass cycles (heuristic LDS latency ~64–128+ cycles), and
        is followed within 3 instructions by an MFMA reading the read's destination; wait stall
        charged as in P1
    Evidence: read, wait, MFMA triples
    Gain: 40–80 % of the waits
    Fix: issue every LDS read of the block first, then the MFMAs"""
    limits = ctx.thresholds.of(PatternThresholds)
    per_line: dict[str, list[tuple[dict, Drain, dict]]] = {}
    for read in filter(is_lds_read, ctx.program_order):
        line = ctx.line_of.get(read["index"])
        if not line or line.get("artifact"):
            continue
        drain = exposed_drain(ctx, read, LGKM_COUNTERS, lambda ins: ins.get("type") in (LDS, SMEM),
                              limits.lds_wait_search, limits.lds_latency_cycles)
        if drain is None:
            continue
        ops = operands(read["asm"])
        written = registers(ops[0]) if ops else set()
        consumer = next(
            (
                ins
                for ins in drain.after[:limits.consumer_gap]
                if is_mfma(ins) and written & reads(ins["asm"])
            ),
            None,
        )
        if consumer is not None:
            per_line.setdefault(line["location"], []).append((read, drain, consumer))
    findings = []
    for location, triples in per_line.items():
        reads_here = {read["index"] for read, _, _ in triples}
        exposed: dict[int, int] = {}
        for _, drain, _ in triples:
            cycles = exposed_wait_stall(ctx, drain, reads_here, (VMEM_LOAD, VMEM_STORE))
            exposed[drain.wait["index"]] = max(exposed.get(drain.wait["index"], 0), cycles)
        triples = [t for t in triples if exposed[t[1].wait["index"]] > 0]
        waits = unique_by_index([drain.wait for _, drain, _ in triples])
        share = ctx.share(sum(exposed[w["index"]] for w in waits))
        if not triples or share < limits.min_share:
            continue
        evidence = []
        for read, drain, consumer in triples[:4]:
            evidence += [
                ctx.evidence(read, "LDS read"),
                ctx.evidence(
                    drain.wait,
                    f"first lgkmcnt wait draining it: {drain.mfmas} MFMA(s), "
                    f"{drain.mfma_cycles} pass cycles after the read"
                    + (" (next iteration)" if drain.wrapped else "")
                    + charged_note(drain, exposed),
                ),
                ctx.evidence(consumer, "MFMA consuming the read"),
            ]
        most = max(drain.mfma_cycles for _, drain, _ in triples)
        findings.append(
            ctx.finding(
                "P3-lds-read-before-mfma", share, location=location,
                title=f"LDS reads wait right before their MFMA consumer at {location}",
                estimated_gain=hiding_gain(share, *limits.p3_hideable, "the lgkmcnt waits"),
                root_cause=(
                    f"{len(waits)} `s_waitcnt lgkmcnt` wait(s) sit between an LDS read and the MFMA "
                    f"that consumes it, with at most {most} MFMA pass cycles between read and wait "
                    f"(an LDS read takes ~64–{limits.lds_latency_cycles}+ cycles, heuristic); every read's "
                    "latency is exposed."
                ),
                fix=(
                    "Split the loop body: issue every LDS read of the block first, then run the "
                    "MFMAs, so later reads are in flight while earlier MFMAs execute."
                ),
                schematic="for k: a[k] = ds_read(...)   # all reads first\nwait(lgkmcnt)\nfor k: mfma(a[k], b[k], acc)",
                evidence=evidence,
                effort="low",
            )
        )
    return findings


def data_stream_loads(ctx: PlanContext) -> bool:
    """True when the small loads carry the kernel's data: they are at least half of its executed
    vector-load hits (axpy, vec_add: every data load is one dword), so they are not metadata."""
    loads = [ins for ins in ctx.program_order if is_vmem_load(ins) and ins.get("hits")]
    small = sum(ins["hits"] for ins in loads if is_small_load(ins))
    return bool(loads) and small * 2 >= sum(ins["hits"] for ins in loads)


def is_scale_load(ctx: PlanContext, load: dict, stream: bool) -> bool:
    """A small load that is metadata, not data: vector loads only when the small loads are not
    the kernel's data stream; scalar loads only when they run more than once per wave (kernel
    arguments, loaded once per wave, are the prologue's business)."""
    if not is_small_load(load):
        return False
    if load.get("type") == "SMEM":
        return not once_per_wave(ctx.wave_count, load)
    return not stream


@plan_rule(id="P4-scale-load-late", lever="memory-pipeline", order=90,
           thresholds=(PatternThresholds,))
def scale_load_late(ctx: PlanContext) -> list[Finding]:
    """A scale/metadata load issued too close to its first use.

    P4: a small (scale/metadata) load issued only a few instructions before its first use.

    Trigger: a single-dword (or narrower) load that is metadata, not data: a vector load only when
        the small loads are less than half of the kernel's vector-load executions (in axpy/vec_add
        they are the data stream), a scalar load only when it runs more than once per wave (kernel
        arguments are the prologue's); its result first read ≤ 8 instructions later, with a stalled
        wait between
    Evidence: load (with distance) + wait
    Gain: 50–90 % of the waits
    Fix: hoist the scale/metadata loads to the start of the block, ahead of the bulk loads"""
    limits = ctx.thresholds.of(PatternThresholds)
    max_distance = limits.scale_max_distance
    per_line: dict[str, list[tuple[dict, dict, int]]] = {}
    stream = data_stream_loads(ctx)
    for load in ctx.program_order:
        if not is_scale_load(ctx, load, stream):
            continue
        use = ctx.distance_to_use(load["index"], window=max_distance + 1)
        if use is None:
            continue
        distance, consumer = use
        _, between = ctx.neighbours(load["index"], 0, distance + 1)
        waits = [
            ins
            for ins in between
            if ins.get("type") in ("VMEM-wait", "LDS/SMEM-wait") and stalled(ins)
        ]
        if not waits:
            continue
        line = ctx.line_of.get(load["index"])
        if line and not line.get("artifact"):
            per_line.setdefault(line["location"], []).append((load, waits[0], distance))
    findings = []
    for location, items in per_line.items():
        waits = unique_by_index([wait for _, wait, _ in items])
        share = ctx.share(total_stall(waits))
        if share < limits.min_share:
            continue
        closest = min(distance for _, _, distance in items)
        evidence = []
        for load, wait, distance in items[:4]:
            evidence += [
                ctx.evidence(load, f"small load, first use {distance} instruction(s) later"),
                ctx.evidence(wait, "wait before the use"),
            ]
        findings.append(
            ctx.finding(
                "P4-scale-load-late", share, location=location,
                title=f"Scale/metadata load issued too close to its use at {location}",
                estimated_gain=hiding_gain(share, *limits.p4_hideable,
                                           "the waits in front of the use"),
                root_cause=(
                    f"{len(items)} small load(s) are consumed only {closest} instruction(s) after issue; "
                    "the wait before the use exposes the full memory latency."
                ),
                fix=(
                    "Hoist the scale/metadata loads to the start of the block, ahead of the bulk "
                    "loads, to maximise the distance between issue and use."
                ),
                schematic="scale = load(scale_ptr)   # first, before bulk loads\nA = load(...); B = load(...)\n... use(scale) late",
                evidence=evidence,
                effort="low",
            )
        )
    return findings
