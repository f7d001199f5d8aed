"""The five hotspot patterns: loads in the MFMA loop, VMEM bursts, LDS→MFMA, late scales, entry line.

P1 and P3 are loop-aware: inside a static loop body (kerneltrace/analysis/loops.py) the
instructions after a load are walked cyclically — past the latch back to the header — because in
a loop the MFMAs at the end of the body run between a load at the top of the next iteration and
the wait for it. Whether a wait is "too close" is judged by the MFMA pass cycles
(kerneltrace/isa/mfma.py) issued between the load and the first `s_waitcnt` that drains it — the
latency this wave's matrix work can hide — against a typical memory latency (heuristic budgets
below); the measured stall rate must confirm that the wait is exposed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kerneltrace.isa.classify import LDS, SMEM, VMEM_LOAD, VMEM_STORE, opcode, wait_counters
from kerneltrace.isa.mfma import mfma_info
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

MFMA_WINDOW = 24  # outside loops: instructions on each side that count as "inside the MFMA sequence"
WAIT_SEARCH = 64  # outside loops: how far to look for the wait that drains a load
MIN_SHARE = 0.01  # below 1 % of all stall a pattern is noise, not a plan item
HIGH_STALL_RATE = 0.5
# Latency-hiding budgets (heuristics, not measurements): a global load that misses the caches
# takes roughly 500–800+ cycles from HBM, an LDS read roughly 64–128 cycles (more with bank
# conflicts). MFMA pass cycles between issue and wait below the lower end cannot cover the load
# from this wave's own matrix work.
HBM_LATENCY_CYCLES = 500
LDS_LATENCY_CYCLES = 128
VMEM_COUNTERS = ("vmcnt", "loadcnt")  # gfx9 name, gfx12 name
LGKM_COUNTERS = ("lgkmcnt", "dscnt")


def _unique(instructions: list[dict]) -> list[dict]:
    seen: dict[int, dict] = {}
    for ins in instructions:
        seen.setdefault(ins["index"], ins)
    return sorted(seen.values(), key=lambda ins: ins["index"])


@dataclass(frozen=True)
class Drain:
    """The first wait that drains a producer, and the matrix work issued before it."""

    wait: dict
    between: list[dict]  # instructions executed between producer and wait (walk order)
    after: list[dict]  # instructions following the wait in the same walk
    mfmas: int
    mfma_cycles: int  # MFMA pass cycles between, weighted by hits relative to the producer
    unknown_mfma: bool  # an MFMA in between has no known pass latency
    wrapped: bool  # the wait lies in the next iteration (walk went past the latch)


def _weight(ins: dict, producer: dict) -> float:
    """Executions of `ins` per execution of the producer (inner loops, skipped branches)."""
    hits, base = ins.get("hits") or 0, producer.get("hits") or 0
    return hits / base if hits and base else 1.0


def first_draining_wait(
    ctx: PlanContext,
    producer: dict,
    counters: tuple[str, ...],
    counted: Callable[[dict], bool],
    limit: int,
) -> Drain | None:
    """Walk forward (cyclically inside a loop) to the first `s_waitcnt` that drains `producer`.

    A wait `cnt(N)` leaves at most N operations of its counter outstanding; they complete in
    order, so the producer is drained once N or more counted operations were issued after it.
    Scalar loads return out of order: with one in flight after the producer only `cnt(0)` counts.
    """
    walk = ctx.following(producer["index"], limit)
    issued_after, out_of_order = 0, False
    mfmas, cycles, unknown = 0, 0.0, False
    for pos, ins in enumerate(walk):
        if opcode(ins.get("asm", "")).startswith("s_wait"):
            values = wait_counters(ins["asm"])
            limit_value = next((values[c] for c in counters if c in values), None)
            if limit_value is not None and (
                limit_value == 0 or (not out_of_order and issued_after >= limit_value)
            ):
                return Drain(
                    wait=ins,
                    between=walk[:pos],
                    after=walk[pos + 1 :],
                    mfmas=mfmas,
                    mfma_cycles=int(round(cycles)),
                    unknown_mfma=unknown,
                    wrapped=ins["index"] < producer["index"],
                )
        if counted(ins):
            issued_after += 1
            out_of_order = out_of_order or ins.get("type") == SMEM
        if is_mfma(ins):
            info = mfma_info(ins.get("asm", ""))
            mfmas += 1
            if info is None:
                unknown = True
            else:
                cycles += info.cycles * _weight(ins, producer)
    return None


def _walk_limit(ctx: PlanContext, index: int, outside: int) -> int:
    loop = ctx.loop_of(index)
    return loop.size - 1 if loop else outside


def _in_mfma_region(ctx: PlanContext, index: int) -> bool:
    """Inside a loop body that holds MFMAs, or (straight-line code) between MFMAs."""
    loop = ctx.loop_of(index)
    if loop is not None:
        return any(is_mfma(ins) for ins in ctx.following(index, loop.size - 1))
    before, after = ctx.neighbours(index, MFMA_WINDOW, MFMA_WINDOW)
    return any(map(is_mfma, before)) and any(map(is_mfma, after))


def _where(ctx: PlanContext, index: int) -> str:
    loop = ctx.loop_of(index)
    return f"the MFMA loop (rows {loop.first_index}–{loop.last_index})" if loop else "an MFMA sequence"


def _wave_attribution(ctx: PlanContext) -> dict[int, dict[int, int]]:
    """{wait row: {producer row: stall cycles}} from the wave analysis (hot waits only)."""
    return {
        wait["index"]: {p["index"]: p.get("cycles") or 0 for p in wait.get("producers") or []}
        for wait in (ctx.waves or {}).get("waitcnt") or []
    }


def exposed_wait_stall(
    ctx: PlanContext, drain: Drain, producers: set[int], other_types: tuple[str, ...]
) -> int:
    """Stall cycles of `drain.wait` that belong to `producers`.

    The wave analysis (when it reports this wait) charges each wait to the youngest producer it
    drained: take the cycles charged to `producers`. Without it, a mixed wait (`vmcnt` and
    `lgkmcnt`) that also drains other kinds of work issued after the producer is ambiguous: 0.
    """
    attributed = _wave_attribution(ctx).get(drain.wait["index"])
    if attributed is not None:
        return sum(cycles for index, cycles in attributed.items() if index in producers)
    counters = wait_counters(drain.wait.get("asm", ""))
    mixed = any(c in counters for c in VMEM_COUNTERS) and any(c in counters for c in LGKM_COUNTERS)
    if mixed and any(ins.get("type") in other_types for ins in drain.between):
        return 0
    return drain.wait.get("stall_cycles") or 0


def _charged(drain: Drain, exposed: dict[int, int]) -> str:
    """Evidence note suffix when only part of a wait's stall is charged to this finding."""
    cycles, total = exposed[drain.wait["index"]], drain.wait.get("stall_cycles") or 0
    return f"; {cycles:,} of its {total:,} stall cycles charged here" if cycles < total else ""


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
            if load["index"] in in_bursts or not _in_mfma_region(ctx, load["index"]):
                continue
            drain = first_draining_wait(
                ctx,
                load,
                VMEM_COUNTERS,
                lambda ins: ins.get("type") in (VMEM_LOAD, VMEM_STORE),
                _walk_limit(ctx, load["index"], WAIT_SEARCH),
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
        waits = _unique([drain.wait for _, drain in pairs])
        share = ctx.share(total_stall(loads) + sum(exposed[w["index"]] for w in waits))
        if not pairs or share < MIN_SHARE or stall_rate(loads + waits) < HIGH_STALL_RATE:
            continue
        most = max(pairs, key=lambda pair: pair[1].mfma_cycles)[1]
        wrapped = any(drain.wrapped for _, drain in pairs)
        evidence = []
        for load, drain in pairs[:4]:
            evidence.append(ctx.evidence(load, f"load inside {_where(ctx, load['index'])}"))
            evidence.append(
                ctx.evidence(
                    drain.wait,
                    f"first wait draining #{load['index']}: {drain.mfmas} MFMA(s), "
                    f"{drain.mfma_cycles} pass cycles after issue"
                    + (" (next iteration)" if drain.wrapped else "")
                    + _charged(drain, exposed),
                )
            )
        findings.append(
            Finding(
                id=finding_id("P1-loads-in-mfma-loop", line["location"]),
                rule="P1-loads-in-mfma-loop",
                title=f"Global loads issued inside the MFMA loop at {line['location']}",
                priority=priority_for_share(share),
                stall_share=round(share, 4),
                estimated_gain=hiding_gain(share, 0.5, 0.9, "the load and wait stall of this line"),
                root_cause=(
                    f"{len(loads)} vector-memory load(s) sit inside {_where(ctx, loads[0]['index'])} "
                    + _cover_phrase(most, wrapped)
                    + f", far below a global-memory latency of ~{HBM_LATENCY_CYCLES}–800+ cycles "
                    f"(heuristic); stall rate {stall_rate(loads + waits):.0%}, so the matrix work "
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
                location=line["location"],
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


def lds_read_before_mfma(ctx: PlanContext, max_consumer_gap: int = 3) -> list[Finding]:
    """P3: `ds_read` → its draining `s_waitcnt lgkmcnt` → the MFMA consuming it, with too little
    matrix work between read and wait to cover LDS latency (cyclic inside loop bodies)."""
    per_line: dict[str, list[tuple[dict, Drain, dict]]] = {}
    for read in filter(is_lds_read, ctx.program_order):
        line = ctx.line_of.get(read["index"])
        if not line or line.get("artifact"):
            continue
        drain = first_draining_wait(
            ctx,
            read,
            LGKM_COUNTERS,
            lambda ins: ins.get("type") in (LDS, SMEM),
            _walk_limit(ctx, read["index"], 16),
        )
        if (
            drain is None
            or not stalled(drain.wait)
            or drain.unknown_mfma
            or drain.mfma_cycles >= LDS_LATENCY_CYCLES
        ):
            continue
        ops = operands(read["asm"])
        written = registers(ops[0]) if ops else set()
        consumer = next(
            (
                ins
                for ins in drain.after[:max_consumer_gap]
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
        waits = _unique([drain.wait for _, drain, _ in triples])
        share = ctx.share(sum(exposed[w["index"]] for w in waits))
        if not triples or share < MIN_SHARE:
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
                    + _charged(drain, exposed),
                ),
                ctx.evidence(consumer, "MFMA consuming the read"),
            ]
        most = max(drain.mfma_cycles for _, drain, _ in triples)
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
                    f"that consumes it, with at most {most} MFMA pass cycles between read and wait "
                    f"(an LDS read takes ~64–{LDS_LATENCY_CYCLES}+ cycles, heuristic); every read's "
                    "latency is exposed."
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
