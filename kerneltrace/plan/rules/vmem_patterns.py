"""Hotspot patterns on vector-memory loads: P1 loads inside the MFMA loop, P2 back-to-back bursts."""

from __future__ import annotations

from kerneltrace.analysis.dataflow import depends
from kerneltrace.isa.classify import LDS, SMEM, VMEM_LOAD, VMEM_STORE
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules._util import (
    instructions_stall_rate,
    is_mfma,
    is_vmem_load,
    stalled,
)
from kerneltrace.plan.rules.drain import (
    VMEM_COUNTERS,
    Drain,
    PatternThresholds,
    charged_note,
    exposed_drain,
    exposed_wait_stall,
    in_mfma_region,
    unique_by_index,
    where_phrase,
)
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import total_stall


def _cover_phrase(drain: Drain, wrapped: bool) -> str:
    """How much matrix work runs between the loads and their wait, in words."""
    if drain.mfmas == 0:
        return "and the first `s_waitcnt vmcnt` that drains them comes before any MFMA runs (0 MFMA pass cycles of cover)"
    return (
        f"and the first `s_waitcnt vmcnt` that drains them comes after at most {drain.mfmas} "
        f"MFMA(s) ({drain.mfma_cycles} MFMA pass cycles"
        + (", counting the MFMAs at the end of the loop body" if wrapped else "")
        + ")"
    )


@plan_rule(id="P1-loads-in-mfma-loop", lever="memory-pipeline", calibrated=True,
           optional=("waves",), order=60, thresholds=(PatternThresholds,))
def loads_in_mfma_loop(ctx: PlanContext) -> list[Finding]:
    """Global loads issued inside the MFMA loop, waited for after too little matrix work.

    P1: a global load inside the MFMA loop whose wait comes after too little matrix work.

    Trigger: a top user line has a VMEM load (not in a P2 burst) inside a static loop body holding
        MFMAs (outside loops: MFMAs within 24 instructions before and after); the first `s_waitcnt
        vmcnt/loadcnt` that drains it — walked cyclically inside the body, so the MFMAs at the end
        of the body count for a load at the top — stalls and comes after < 500 MFMA pass cycles
        (`isa/mfma.py`, weighted by hits; vs a heuristic HBM latency of ~500–800+ cycles); the loads
        plus the wait stall charged to them (wave attribution when the wait is reported; a mixed
        `vmcnt`+`lgkmcnt` wait that also drains LDS/SMEM work is skipped without it) have stall rate
        ≥ 50 % and ≥ 1 % of stall
    Evidence: the loads and their draining waits (MFMAs and pass cycles between, "next iteration"
        when wrapped)
    Gain: 50–90 % of that stall hidden by prefetching one stage ahead
    Fix: issue the loads one iteration ahead (prefetch into registers) so the MFMA sequence covers
        the latency"""
    limits = ctx.thresholds.of(PatternThresholds)
    in_bursts = {ins["index"] for burst in stalling_bursts(ctx, limits.burst_min_loads,
                                                           limits.burst_max_gap)
                 for ins in burst}
    findings = []
    for line in ctx.real_lines():
        pairs: list[tuple[dict, Drain]] = []
        for load in filter(is_vmem_load, ctx.line_instructions(line)):
            # a burst of back-to-back loads is P2's finding, with the same fix
            if load["index"] in in_bursts or not in_mfma_region(ctx, load["index"]):
                continue
            drain = exposed_drain(ctx, load, VMEM_COUNTERS,
                                  lambda ins: ins.get("type") in (VMEM_LOAD, VMEM_STORE),
                                  limits.wait_search, limits.hbm_latency_cycles)
            if drain is None:
                continue
            pairs.append((load, drain))
        candidates = {load["index"] for load, _ in pairs}
        exposed: dict[int, int] = {}
        for _, drain in pairs:
            cycles = exposed_wait_stall(ctx, drain, candidates, (LDS, SMEM))
            exposed[drain.wait["index"]] = max(exposed.get(drain.wait["index"], 0), cycles)
        # a load whose wait stalls on something else (e.g. an LDS read) is not this pattern
        pairs = [(load, drain) for load, drain in pairs if exposed[drain.wait["index"]] > 0]
        loads = [load for load, _ in pairs]
        waits = unique_by_index([drain.wait for _, drain in pairs])
        share = ctx.share(total_stall(loads) + sum(exposed[w["index"]] for w in waits))
        if (not pairs or share < limits.min_share
                or instructions_stall_rate(loads + waits) < limits.high_stall_rate):
            continue
        most = max(pairs, key=lambda pair: pair[1].mfma_cycles)[1]
        wrapped = any(drain.wrapped for _, drain in pairs)
        evidence = []
        for load, drain in pairs[:4]:
            evidence.append(ctx.evidence(load, f"load inside {where_phrase(ctx, load['index'])}"))
            evidence.append(
                ctx.evidence(
                    drain.wait,
                    f"first wait draining #{load['index']}: {drain.mfmas} MFMA(s), "
                    f"{drain.mfma_cycles} pass cycles after issue"
                    + (" (next iteration)" if drain.wrapped else "")
                    + charged_note(drain, exposed),
                )
            )
        findings.append(
            ctx.finding(
                "P1-loads-in-mfma-loop", share, location=line["location"],
                title=f"Global loads issued inside the MFMA loop at {line['location']}",
                estimated_gain=hiding_gain(share, *limits.p1_hideable,
                                           "the load and wait stall of this line"),
                root_cause=(
                    f"{len(loads)} vector-memory load(s) sit inside {where_phrase(ctx, loads[0]['index'])} "
                    + _cover_phrase(most, wrapped)
                    + f", far below a global-memory latency of ~{limits.hbm_latency_cycles}–800+ cycles "
                    f"(heuristic); stall rate {instructions_stall_rate(loads + waits):.0%}, so the matrix work "
                    "hides little of the memory latency."
                ),
                fix=(
                    "Issue the loads for the next stage before the MFMA loop, or one iteration ahead "
                    "(prefetch into registers), so the whole MFMA sequence covers the memory latency."
                ),
                schematic=(
                    "load(tile[k+1])            # issued one iteration ahead\n"
                    "for k: mfma(tile[k]) ...   # no load between MFMAs\n"
                    "       wait(vmcnt); swap buffers"
                ),
                evidence=evidence,
                effort="medium",
            )
        )
    return findings


def stalling_bursts(ctx: PlanContext, min_loads: int, max_gap: int) -> list[list[dict]]:
    """Runs of ≥ `min_loads` VMEM loads (≤ `max_gap` non-MFMA instructions apart) that stall on issue."""
    bursts: list[list[dict]] = []
    current: list[dict] = []
    gap = 0
    for ins in ctx.program_order:
        if is_vmem_load(ins):
            current.append(ins)
            gap = 0
        elif current and (is_mfma(ins) or gap >= max_gap):
            bursts.append(current)
            current, gap = [], 0
        elif current:
            gap += 1
    if current:
        bursts.append(current)
    return [
        burst
        for burst in bursts
        if len(burst) >= min_loads and any(stalled(ins) for ins in burst[1:])
    ]


_NOT_BACK_PRESSURE = (VMEM_LOAD, VMEM_STORE, LDS, SMEM, "VMEM-wait", "LDS/SMEM-wait", "barrier")


def back_pressure(ctx: PlanContext, burst: list[dict]) -> dict | None:
    """The instruction right after a load burst when the burst's queue back-pressure surfaces on
    it: not a memory instruction, wait or barrier, reading none of the burst's destinations (no
    data waits on them there), and stalling longer than the burst's loads together — the wave
    blocks at it until the memory pipe has taken the loads (a burst of one-dword loads from
    every wave of the SIMD)."""
    _, following = ctx.neighbours(burst[-1]["index"], 0, 1)
    if not following:
        return None
    nxt = following[0]
    if nxt.get("type") in _NOT_BACK_PRESSURE or is_vmem_load(nxt):
        return None
    if any(depends(ins.get("asm") or "", nxt.get("asm") or "") for ins in burst):
        return None
    return nxt if (nxt.get("stall_cycles") or 0) > total_stall(burst) else None


@plan_rule(id="P2-vmem-queue-burst", lever="memory-pipeline", order=70,
           thresholds=(PatternThresholds,))
def vmem_queue_burst(ctx: PlanContext) -> list[Finding]:
    """Back-to-back vector loads fill the memory queue.

    P2: back-to-back vector loads with no compute between them; later loads stall on issue.

    Trigger: ≥ 4 VMEM loads with ≤ 2 non-MFMA instructions between them, later loads stall on issue
        (or the instruction right after the burst carries its back-pressure: no memory op, wait or
        barrier, reading none of the loaded registers, stalling longer than the loads together),
        ≥ 1 % of stall
    Evidence: stalled loads of the burst, and that instruction
    Gain: 30–70 % of their issue stall
    Fix: software-pipeline the loop so loads are spread between compute"""
    limits = ctx.thresholds.of(PatternThresholds)
    per_line: dict[str, list[dict]] = {}
    pressured: dict[str, list[dict]] = {}
    for burst in stalling_bursts(ctx, limits.burst_min_loads, limits.burst_max_gap):
        blocked = back_pressure(ctx, burst)
        owner = max(
            {
                id(ctx.line_of.get(i["index"]) or {}): ctx.line_of.get(i["index"]) for i in burst
            }.values(),
            key=lambda line: (line or {}).get("stall_cycles") or 0,
        )
        if owner:
            per_line.setdefault(owner["location"], []).extend(burst)
            if blocked is not None:
                pressured.setdefault(owner["location"], []).append(blocked)
    findings = []
    for location, loads in per_line.items():
        blocked = pressured.get(location, [])
        share = ctx.share(total_stall(loads) + total_stall(blocked))
        if share < limits.min_share:
            continue
        findings.append(
            ctx.finding(
                "P2-vmem-queue-burst", share, location=location,
                title=f"Back-to-back vector loads fill the memory queue at {location}",
                estimated_gain=hiding_gain(share, *limits.p2_hideable,
                                           "the issue stall of these loads"),
                root_cause=(
                    f"{len(loads)} vector loads are issued back to back with no compute between them; "
                    "the vector-memory queue fills and the later loads stall on issue"
                    + ("" if not blocked else
                       f", and the wave then waits {total_stall(blocked):,} cycles at "
                       + ", ".join(f"#{ins['index']} ({ins.get('asm', '').split()[0]})" for ins in blocked)
                       + " until the memory pipe has taken them (it reads none of the loaded "
                       "registers: the stall is the loads', not its own)") + "."
                ),
                fix=(
                    "Software-pipeline the loop: prefetch tile n+1 while computing tile n (double "
                    "buffering), so loads are spread between compute instead of bunched"
                    + ("; and fewer, wider requests (several elements per lane: dwordx2/x4 over "
                       "contiguous data) instead of one-dword loads" if blocked else "") + "."
                ),
                schematic="load(A[0]); load(B[0])\nfor n: load(A[n+1]); load(B[n+1]); compute(n)",
                evidence=([ctx.evidence(ins, "waits for the burst to issue") for ins in blocked]
                          + [ctx.evidence(ins, "load in burst") for ins in loads if stalled(ins)])[:8],
                effort="medium",
            )
        )
    return findings
