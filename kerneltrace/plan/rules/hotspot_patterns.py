"""The five hotspot patterns: loads in the MFMA loop, VMEM bursts, LDS→MFMA, late scales, entry line."""

from __future__ import annotations

from kerneltrace.plan.context import PlanContext, operands, reads, registers
from kerneltrace.plan.findings import Finding, finding_id, hiding_gain, priority_for_share
from kerneltrace.plan.rules._util import (
    is_lds_read,
    is_mfma,
    is_small_load,
    is_vmem_load,
    stall_rate,
    stalled,
    total_stall,
)

MFMA_WINDOW = 24  # instructions on each side that count as "inside the MFMA sequence"
MIN_SHARE = 0.01  # below 1 % of all stall a pattern is noise, not a plan item
HIGH_STALL_RATE = 0.5


def _unique(instructions: list[dict]) -> list[dict]:
    seen: dict[int, dict] = {}
    for ins in instructions:
        seen.setdefault(ins["index"], ins)
    return sorted(seen.values(), key=lambda ins: ins["index"])


def loads_in_mfma_loop(ctx: PlanContext) -> list[Finding]:
    """P1: a global load sits between MFMAs and its wait follows closely, so nothing hides it."""
    findings = []
    for line in ctx.real_lines():
        loads = []
        waits = []
        for load in filter(is_vmem_load, ctx.line_instructions(line)):
            before, after = ctx.neighbours(load["index"], MFMA_WINDOW, MFMA_WINDOW)
            if not (any(map(is_mfma, before)) and any(map(is_mfma, after))):
                continue
            loads.append(load)
            waits += [ins for ins in after if ins.get("type") == "VMEM-wait" and stalled(ins)][:1]
        cost = _unique(loads + waits)
        share = ctx.share(total_stall(cost))
        if not loads or share < MIN_SHARE or stall_rate(cost) < HIGH_STALL_RATE:
            continue
        findings.append(
            Finding(
                id=finding_id("P1-loads-in-mfma-loop", line["location"]),
                rule="P1-loads-in-mfma-loop",
                title=f"Global loads issued inside the MFMA loop at {line['location']}",
                priority=priority_for_share(share),
                stall_share=round(share, 4),
                estimated_gain=hiding_gain(share, 0.5, 0.9, "the load and wait stall of this line"),
                root_cause=(
                    f"{len(loads)} vector-memory load(s) sit between MFMAs and their `s_waitcnt vmcnt` "
                    f"follows within a few instructions; stall rate {stall_rate(cost):.0%}, so almost "
                    "no matrix work overlaps the memory latency."
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
                evidence=[
                    ctx.evidence(ins, "load between MFMAs" if ins in loads else "its wait")
                    for ins in cost
                ],
                location=line["location"],
                effort="medium",
            )
        )
    return findings


def vmem_queue_burst(ctx: PlanContext, min_loads: int = 4, max_gap: int = 2) -> list[Finding]:
    """P2: back-to-back vector loads with no compute between them; later loads stall on issue."""
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
    per_line: dict[str, list[dict]] = {}
    for burst in bursts:
        if len(burst) < min_loads:
            continue
        issue_stalls = [ins for ins in burst[1:] if stalled(ins)]
        if not issue_stalls:
            continue
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
            Finding(
                id=finding_id("P2-vmem-queue-burst", location),
                rule="P2-vmem-queue-burst",
                title=f"Back-to-back vector loads fill the memory queue at {location}",
                priority=priority_for_share(share),
                stall_share=round(share, 4),
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
                location=location,
                effort="medium",
            )
        )
    return findings


def lds_read_before_mfma(ctx: PlanContext) -> list[Finding]:
    """P3: `ds_read` then `s_waitcnt lgkmcnt` then the MFMA that consumes it, back to back."""
    per_line: dict[str, list[tuple[dict, dict, dict]]] = {}
    for wait in ctx.program_order:
        if wait.get("type") != "LDS/SMEM-wait" or not stalled(wait):
            continue
        before, after = ctx.neighbours(wait["index"], 6, 3)
        consumer = next((ins for ins in after if is_mfma(ins)), None)
        if consumer is None:
            continue
        consumed = reads(consumer["asm"])
        producer = next(
            (
                ins
                for ins in reversed(before)
                if is_lds_read(ins)
                and registers(operands(ins["asm"])[0] if operands(ins["asm"]) else "") & consumed
            ),
            None,
        )
        if producer is None:
            continue
        line = ctx.line_of.get(producer["index"])
        if line:
            per_line.setdefault(line["location"], []).append((producer, wait, consumer))
    findings = []
    for location, triples in per_line.items():
        waits = _unique([wait for _, wait, _ in triples])
        share = ctx.share(total_stall(waits))
        if share < MIN_SHARE:
            continue
        evidence = []
        for producer, wait, consumer in triples[:4]:
            evidence += [
                ctx.evidence(producer, "LDS read"),
                ctx.evidence(wait, "lgkmcnt wait right after it"),
                ctx.evidence(consumer, "MFMA consuming the read"),
            ]
        findings.append(
            Finding(
                id=finding_id("P3-lds-read-before-mfma", location),
                rule="P3-lds-read-before-mfma",
                title=f"LDS reads wait right before their MFMA consumer at {location}",
                priority=priority_for_share(share),
                stall_share=round(share, 4),
                estimated_gain=hiding_gain(share, 0.4, 0.8, "the lgkmcnt waits"),
                root_cause=(
                    f"{len(waits)} `s_waitcnt lgkmcnt` wait(s) sit between an LDS read and the MFMA "
                    "that consumes it; every read's latency is exposed."
                ),
                fix=(
                    "Split the loop body: issue every LDS read of the block first, then run the "
                    "MFMAs, so later reads are in flight while earlier MFMAs execute."
                ),
                schematic="for k: a[k] = ds_read(...)   # all reads first\nwait(lgkmcnt)\nfor k: mfma(a[k], b[k], acc)",
                evidence=evidence,
                location=location,
                effort="low",
            )
        )
    return findings


def scale_load_late(ctx: PlanContext, max_distance: int = 8) -> list[Finding]:
    """P4: a small (scale/metadata) load issued only a few instructions before its first use."""
    per_line: dict[str, list[tuple[dict, dict, int]]] = {}
    for load in ctx.program_order:
        if not is_small_load(load):
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
        waits = _unique([wait for _, wait, _ in items])
        share = ctx.share(total_stall(waits))
        if share < MIN_SHARE:
            continue
        closest = min(distance for _, _, distance in items)
        evidence = []
        for load, wait, distance in items[:4]:
            evidence += [
                ctx.evidence(load, f"small load, first use {distance} instruction(s) later"),
                ctx.evidence(wait, "wait before the use"),
            ]
        findings.append(
            Finding(
                id=finding_id("P4-scale-load-late", location),
                rule="P4-scale-load-late",
                title=f"Scale/metadata load issued too close to its use at {location}",
                priority=priority_for_share(share),
                stall_share=round(share, 4),
                estimated_gain=hiding_gain(share, 0.5, 0.9, "the waits in front of the use"),
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
                location=location,
                effort="low",
            )
        )
    return findings


def entry_line_artifact(ctx: PlanContext, min_share: float = 0.02) -> list[Finding]:
    """P5: stall charged to the kernel-entry (decorator) line or unmapped code: explained, not ranked."""
    findings = []
    for line in ctx.artifact_lines():
        share = line.get("share") or 0.0
        if share < min_share:
            continue
        kind = line["artifact"]
        what = (
            "the kernel entry/decorator line"
            if kind == "kernel-entry"
            else "instructions without a source line"
        )
        findings.append(
            Finding(
                id=finding_id("P5-entry-line-artifact", line["location"]),
                rule="P5-entry-line-artifact",
                title=f"{share:.0%} of stall is charged to {what} ({line['location']}): not a hotspot",
                priority="LOW",
                stall_share=round(share, 4),
                estimated_gain=None,
                root_cause=(
                    "Compiler-generated glue (address arithmetic, selects, prologue, waits the "
                    f"compiler placed) is attributed to {what}; its {line.get('dominant_type')} stall "
                    "belongs to the user operations around it."
                ),
                fix=(
                    "Do not optimise this line. Work on the ranked user lines; if this bucket is "
                    "large, the waits it holds are usually on loads issued by those lines."
                ),
                evidence=[
                    ctx.evidence(ins)
                    for ins in sorted(
                        ctx.line_instructions(line), key=lambda i: -(i.get("stall_cycles") or 0)
                    )[:5]
                ],
                location=line["location"],
                effort="none",
                ranked=False,
            )
        )
    return findings
