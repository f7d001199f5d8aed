"""Hotspot patterns on vector-memory loads: P1 loads inside the MFMA loop, P2 back-to-back bursts."""

from __future__ import annotations

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
    HBM_LATENCY_CYCLES,
    HIGH_STALL_RATE,
    MIN_SHARE,
    VMEM_COUNTERS,
    WAIT_SEARCH,
    Drain,
    charged_note,
    exposed_wait_stall,
    first_draining_wait,
    in_mfma_region,
    unique_by_index,
    walk_limit,
    where_phrase,
)
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


def loads_in_mfma_loop(ctx: PlanContext) -> list[Finding]:
    """P1: a global load inside the MFMA loop whose wait comes after too little matrix work."""
    in_bursts = {ins["index"] for burst in stalling_bursts(ctx) for ins in burst}
    findings = []
    for line in ctx.real_lines():
        pairs: list[tuple[dict, Drain]] = []
        for load in filter(is_vmem_load, ctx.line_instructions(line)):
            # a burst of back-to-back loads is P2's finding, with the same fix
            if load["index"] in in_bursts or not in_mfma_region(ctx, load["index"]):
                continue
            drain = first_draining_wait(
                ctx,
                load,
                VMEM_COUNTERS,
                lambda ins: ins.get("type") in (VMEM_LOAD, VMEM_STORE),
                walk_limit(ctx, load["index"], WAIT_SEARCH),
            )
            if (
                drain is None
                or not stalled(drain.wait)
                or drain.unknown_mfma
                or drain.mfma_cycles >= HBM_LATENCY_CYCLES
            ):
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
        if not pairs or share < MIN_SHARE or instructions_stall_rate(loads + waits) < HIGH_STALL_RATE:
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
            Finding.for_share(
                "P1-loads-in-mfma-loop", line["location"], share,
                title=f"Global loads issued inside the MFMA loop at {line['location']}",
                estimated_gain=hiding_gain(share, 0.5, 0.9, "the load and wait stall of this line"),
                root_cause=(
                    f"{len(loads)} vector-memory load(s) sit inside {where_phrase(ctx, loads[0]['index'])} "
                    + _cover_phrase(most, wrapped)
                    + f", far below a global-memory latency of ~{HBM_LATENCY_CYCLES}–800+ cycles "
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


def stalling_bursts(ctx: PlanContext, min_loads: int = 4, max_gap: int = 2) -> list[list[dict]]:
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


def vmem_queue_burst(ctx: PlanContext, min_loads: int = 4, max_gap: int = 2) -> list[Finding]:
    """P2: back-to-back vector loads with no compute between them; later loads stall on issue."""
    per_line: dict[str, list[dict]] = {}
    for burst in stalling_bursts(ctx, min_loads, max_gap):
        owner = max(
            {
                id(ctx.line_of.get(i["index"]) or {}): ctx.line_of.get(i["index"]) for i in burst
            }.values(),
            key=lambda line: (line or {}).get("stall_cycles") or 0,
        )
        if owner:
            per_line.setdefault(owner["location"], []).extend(burst)
    findings = []
    for location, loads in per_line.items():
        share = ctx.share(total_stall(loads))
        if share < MIN_SHARE:
            continue
        findings.append(
            Finding.for_share(
                "P2-vmem-queue-burst", location, share,
                title=f"Back-to-back vector loads fill the memory queue at {location}",
                estimated_gain=hiding_gain(share, 0.3, 0.7, "the issue stall of these loads"),
                root_cause=(
                    f"{len(loads)} vector loads are issued back to back with no compute between them; "
                    "the vector-memory queue fills and the later loads stall on issue."
                ),
                fix=(
                    "Software-pipeline the loop: prefetch tile n+1 while computing tile n (double "
                    "buffering), so loads are spread between compute instead of bunched."
                ),
                schematic="load(A[0]); load(B[0])\nfor n: load(A[n+1]); load(B[n+1]); compute(n)",
                evidence=[ctx.evidence(ins, "load in burst") for ins in loads if stalled(ins)][:8],
                effort="medium",
            )
        )
    return findings
