"""Wave-level evidence (hotspots/2 `waves`): which loads a wait drains, MFMA busy share of loops, tails.

Rules here read the `waves` object of `kerneltrace.analysis.waves.analyze_waves` (docs/hotspot-json.md,
docs/summary-json.md); every one returns nothing when the document has no `waves` section.
`sharpen_with_waves` is a post-pass of `run_all`: it adds producer attribution and loop context to
findings other rules made, so a finding on a wait names the load it waits for.
"""

from __future__ import annotations

from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import (
    Evidence,
    Finding,
    Gain,
    finding_id,
    hiding_gain,
    priority_for_share,
    scoped_title,
    short_location,
)

MIN_SHARE = 0.01  # attributed wait stall below 1 % of all stall is not a plan item
LOW_MFMA_BUSY = 0.5  # below this the matrix pipe idles half of the loop's time
SATURATED_MFMA_BUSY = 0.8
MIN_LOOP_SHARE = 0.25  # the loop must hold at least a quarter of the waves' time
TAIL_SHARE = 0.25  # slowest wave ends this share of the traced span after the median wave
IMBALANCE = 1.5  # longest wave / median wave duration
MIN_TAIL_WAVES = 4
WAIT_TYPES = (isa.VMEM_WAIT, isa.LDS_SMEM_WAIT, isa.EXP_WAIT)

# What a producer of a given type is, and how to get its latency off the critical path.
_PRODUCER: dict[str, tuple[str, str]] = {
    isa.VMEM_LOAD: (
        "vector-memory load",
        "Issue these loads earlier — one iteration (or pipeline stage) ahead of their use — so the "
        "work between issue and the `s_waitcnt` covers their latency; when they already are, more "
        "waves per SIMD (or a deeper prefetch) hide the rest.",
    ),
    isa.VMEM_STORE: (
        "vector-memory store",
        "Stores count on `vmcnt` too: a wait for them (before reusing the stored registers, or "
        "at the end of the kernel) exposes the write latency. Write through other registers, "
        "or issue the stores earlier and do independent work before the wait.",
    ),
    isa.SMEM: (
        "scalar load",
        "Hoist the scalar loads (kernel arguments, descriptors, pointers) to the very start and put "
        "independent work (address arithmetic, other loads) between them and their first use.",
    ),
    isa.LDS: (
        "LDS read",
        "Issue the LDS reads for the next step before the current compute and wait only right "
        "before their consumers (group reads first, then MFMAs).",
    ),
}
_PRODUCER_DEFAULT = (
    "instruction",
    "Move the producer earlier or independent work between it and the wait.",
)


def _waitcnt(ctx: PlanContext) -> list[dict]:
    return list((ctx.waves or {}).get("waitcnt") or [])


def _loops(ctx: PlanContext) -> list[dict]:
    return list((ctx.waves or {}).get("loops") or [])


def _location(ctx: PlanContext, ref: dict) -> str | None:
    """The hotspot document's line for an instruction reference, else its own `source`."""
    line = ctx.line_of.get(ref.get("index"))
    return line["location"] if line else (ref.get("source") or None)


def _is_artifact_ref(ctx: PlanContext, ref: dict) -> bool:
    line = ctx.line_of.get(ref.get("index"))
    return bool(line and line.get("artifact"))


def _type_of(ctx: PlanContext, ref: dict) -> str:
    ins = ctx.instructions.get(ref.get("index"))
    if ins and ins.get("type"):
        return ins["type"]
    return isa.classify(ref.get("asm") or "")


def _ref_evidence(ctx: PlanContext, ref: dict, note: str) -> Evidence:
    ins = ctx.instructions.get(ref.get("index"))
    if ins is not None:
        return ctx.evidence(ins, note)
    return Evidence(_location(ctx, ref), ref.get("index"), ref.get("asm") or "", None, None, note)


def producer_sentence(ctx: PlanContext, wait: dict, producer: dict, here: str | None = None) -> str:
    """'wait #83 `…` is on the vector-memory load `…` (#77, file.py:83): 5,136 of its 5,136 …'."""
    kind = _PRODUCER.get(_type_of(ctx, producer), _PRODUCER_DEFAULT)[0]
    location = _location(ctx, producer)
    where = short_location(location)
    if _is_artifact_ref(ctx, producer):
        where += ", kernel-entry glue"
    elif here is not None and location != here:
        where += ", not this line"
    return (
        f"wait #{wait['index']} `{wait.get('asm') or ''}` is on the {kind} "
        f"`{producer.get('asm') or ''}` (#{producer['index']}, {where}): "
        f"{producer.get('cycles', 0):,} of its {wait.get('stall_cycles', 0):,} stall cycles over "
        f"{producer.get('waits', 0):,} waits"
    )


def _loop_of(ctx: PlanContext, index: int | None) -> dict | None:
    """The innermost reported loop containing an instruction row."""
    if index is None:
        return None
    inside = [loop for loop in _loops(ctx) if loop["first_index"] <= index <= loop["last_index"]]
    return min(inside, key=lambda loop: loop["last_index"] - loop["first_index"], default=None)


def _loop_phrase(loop: dict) -> str:
    busy = loop.get("mfma_busy_fraction")
    busy_text = f", MFMA busy {busy:.0%}" if isinstance(busy, int | float) else ""
    return (
        f"inside the hot loop (rows {loop['first_index']}–{loop['last_index']}, "
        f"{loop['cycles_per_iteration']:,.0f} cycles/iteration{busy_text})"
    )


def entry_waits_on_user_loads(ctx: PlanContext) -> list[Finding]:
    """W1: waits charged to glue (entry/unmapped line) that wait for loads a user line issued."""
    per_line: dict[str, list[tuple[dict, dict]]] = {}
    for wait in _waitcnt(ctx):
        if not _is_artifact_ref(ctx, wait):
            continue
        for producer in wait.get("producers") or []:
            location = _location(ctx, producer)
            if producer.get("cycles") and location and not _is_artifact_ref(ctx, producer):
                per_line.setdefault(location, []).append((wait, producer))
    findings = []
    for location, pairs in per_line.items():
        cycles = sum(producer["cycles"] for _, producer in pairs)
        share = ctx.share(cycles)
        if share < MIN_SHARE:
            continue
        waits = sorted(
            {wait["index"]: wait for wait, _ in pairs}.values(), key=lambda w: w["index"]
        )
        glue = sorted({short_location(_location(ctx, wait)) for wait in waits})
        kind_type = _type_of(ctx, pairs[0][1])
        kind, fix = _PRODUCER.get(kind_type, _PRODUCER_DEFAULT)
        loop = _loop_of(ctx, pairs[0][1]["index"])
        if kind_type == isa.VMEM_LOAD and loop is None:
            fix = (
                "Issue these loads earlier and put independent work between each load and its "
                "first use; when nothing independent is left, more waves per SIMD hide the latency."
            )
        evidence, seen = [], set()
        for wait, producer in sorted(pairs, key=lambda pair: -pair[1]["cycles"])[:4]:
            if producer["index"] not in seen:
                seen.add(producer["index"])
                evidence.append(_ref_evidence(ctx, producer, f"{kind} the glue waits drain"))
            evidence.append(
                _ref_evidence(
                    ctx,
                    wait,
                    f"{producer['cycles']:,} stall cycles waiting for #{producer['index']}",
                )
            )
        findings.append(
            Finding(
                id=finding_id("W1-entry-waits-on-loads", location),
                rule="W1-entry-waits-on-loads",
                title=f"Waits in compiler glue stall on the {kind}s at {location}",
                priority=priority_for_share(share),
                stall_share=round(share, 4),
                estimated_gain=hiding_gain(share, 0.3, 0.7, f"the waits on these {kind}s"),
                root_cause=(
                    f"{len(waits)} `s_waitcnt` charged to {', '.join(glue)} (not ranked: compiler "
                    f"glue) spend {cycles:,} stall cycles ({share:.1%} of all stall) waiting for "
                    f"{len(seen)} {kind}(s) issued at {location}"
                    + (f", {_loop_phrase(loop)}" if loop else "")
                    + ". A wait is released when the youngest load it drains returns, so this "
                    "latency belongs to these loads, not to the glue line."
                ),
                fix=fix,
                schematic="load(next)      # issue early\n... independent work ...\nwait(); use(next)",
                evidence=evidence,
                location=location,
                effort="medium",
            )
        )
    return findings


def _loop_stall(ctx: PlanContext, loop: dict) -> tuple[int, int, list[dict]]:
    """(stall cycles inside the loop rows, of which waits, the loop's instructions by stall)."""
    inside = [
        ins
        for index, ins in ctx.instructions.items()
        if loop["first_index"] <= index <= loop["last_index"]
    ]
    stall = sum(ins.get("stall_cycles") or 0 for ins in inside)
    waits = sum(ins.get("stall_cycles") or 0 for ins in inside if ins.get("type") in WAIT_TYPES)
    return stall, waits, sorted(inside, key=lambda ins: -(ins.get("stall_cycles") or 0))


def _umbrella_gain(share: float, low: float, high: float, what: str) -> Gain:
    """A loop-wide gain: the line findings inside the loop claim the same cycles."""
    gain = hiding_gain(share, low, high, what)
    return Gain(
        gain.low,
        gain.high,
        gain.basis + "; overlaps the line findings inside the loop, so do not add it to theirs",
    )


def hot_loop_mfma_busy(ctx: PlanContext) -> list[Finding]:
    """W2: the hottest MFMA loop keeps its matrix pipe busy < 50 % while waits dominate (or ≥ 80 %)."""
    loop = next(
        (
            loop
            for loop in _loops(ctx)
            if isinstance(loop.get("mfma_busy_fraction"), int | float)
            and (loop.get("mfma_pass_cycles") or 0) > 0
        ),
        None,
    )
    if loop is None or ((loop.get("split") or {}).get("loop_share") or 0) < MIN_LOOP_SHARE:
        return []
    busy = loop["mfma_busy_fraction"]
    stall, wait_stall, ranked = _loop_stall(ctx, loop)
    share = ctx.share(stall)
    loop_share = loop["split"]["loop_share"]
    facts = (
        f"The loop at rows {loop['first_index']}–{loop['last_index']} (starts at "
        f"{short_location(loop.get('first_source'))}) runs {loop['iterations']:,} iterations "
        f"({loop['iterations_per_wave']:g} per wave over {loop['waves']} waves) at "
        f"{loop['cycles_per_iteration']:,.0f} cycles/iteration and holds {loop_share:.0%} of the "
        f"waves' time; its MFMAs keep the SIMD's matrix pipe busy {busy:.0%} of the time a wave is "
        f"in it ({loop['mfma_pass_cycles']:,} MFMA pass cycles)"
    )
    wait_fraction = wait_stall / stall if stall else 0.0
    evidence = [
        ctx.evidence(ins, "stall inside the loop")
        for ins in ranked[:5]
        if (ins.get("stall_cycles") or 0) > 0
    ]
    if busy < LOW_MFMA_BUSY and wait_fraction < 0.5:
        by_type: dict[str, int] = {}
        for ins in ranked:
            by_type[ins.get("type") or isa.OTHER] = by_type.get(ins.get("type") or isa.OTHER, 0) + (
                ins.get("stall_cycles") or 0
            )
        top = sorted(by_type.items(), key=lambda item: -item[1])[:3]
        mix = ", ".join(f"{kind} {cycles / stall:.0%}" for kind, cycles in top if stall and cycles)
        return [
            Finding(
                id="W2-hot-loop-mfma-underused",
                rule="W2-hot-loop-mfma-underused",
                title=scoped_title(
                    f"MFMA busy only {busy:.0%} of the hot loop: other work holds the pipe idle",
                    "loop",
                    "all stall inside the loop",
                ),
                priority=priority_for_share(share, cap="MED"),
                stall_share=round(share, 4),
                estimated_gain=_umbrella_gain(
                    ctx.share(stall - wait_stall), 0.1, 0.4, "the loop's non-wait stall"
                ),
                scope="loop",
                root_cause=facts
                + f". The loop's {stall:,} stall cycles are mostly not memory waits ({mix}): "
                "non-matrix work and its dependencies sit between the MFMAs. This overlaps the "
                "line findings inside the loop.",
                fix=(
                    "Overlap the non-MFMA work with matrix work: interleave independent VALU/"
                    "transcendental work of tile k with the MFMAs of tile k+1 (or ping-pong two "
                    "waves per SIMD), and fix the line findings inside the loop first."
                ),
                evidence=evidence,
                location=None,
                effort="high",
            )
        ]
    if busy < LOW_MFMA_BUSY:
        gain = _umbrella_gain(ctx.share(wait_stall), 0.1, 0.3, "the loop's `s_waitcnt` stall")
        gain = Gain(
            gain.low,
            gain.high,
            gain.basis + f"; the MFMA pipe bounds it: the loop cannot run faster than its MFMA "
            f"work, {busy:.0%} of its time now",
        )
        return [
            Finding(
                id="W2-hot-loop-mfma-underused",
                rule="W2-hot-loop-mfma-underused",
                title=scoped_title(
                    f"MFMA busy only {busy:.0%} of the hot loop: waits hold "
                    f"{wait_fraction:.0%} of its stall",
                    "loop",
                    "all stall inside the loop",
                ),
                scope="loop",
                # kernel-wide umbrella: the line findings that make it up rank first
                priority=priority_for_share(share, cap="MED"),
                stall_share=round(share, 4),
                estimated_gain=gain,
                root_cause=facts
                + f". {wait_stall:,} of the loop's {stall:,} stall cycles are `s_waitcnt` waits: "
                "the matrix pipe idles while loads return. This overlaps the line findings inside "
                "the loop.",
                fix=(
                    "Deepen the software pipeline: load tile k+1 (or k+2) into registers/LDS while "
                    "the MFMAs of tile k run, interleave the loads and LDS reads between MFMAs "
                    "instead of bunching them, and wait only right before the consumer; if "
                    "occupancy allows, more waves per SIMD overlap one wave's waits with another's "
                    "MFMAs."
                ),
                schematic=(
                    "prefetch(tile[0]); prefetch(tile[1])\n"
                    "for k: wait(tile[k]); mfma(tile[k]) interleaved with prefetch(tile[k+2])"
                ),
                evidence=evidence,
                location=None,
                effort="high",
            )
        ]
    if busy >= SATURATED_MFMA_BUSY:
        return [
            Finding(
                id="W2-hot-loop-mfma-bound",
                rule="W2-hot-loop-mfma-bound",
                title=scoped_title(
                    f"MFMA pipe busy {busy:.0%} of the hot loop: compute-bound there",
                    "loop",
                    "all stall inside the loop",
                ),
                scope="loop",
                priority="LOW",
                stall_share=round(share, 4),
                estimated_gain=None,
                root_cause=facts + ": memory latency is already hidden behind matrix work.",
                fix=(
                    "Do not chase load latency in this loop. Speed-ups need fewer MFMA pass "
                    "cycles (a faster MFMA variant or lower precision, less redundant compute)."
                ),
                evidence=evidence,
                location=None,
                effort="high",
            )
        ]
    return []


def wave_tail(ctx: PlanContext) -> list[Finding]:
    """W3: uneven waves — the slowest ends long after the median (grid tail / load imbalance)."""
    waves = ctx.waves or {}
    timing = waves.get("timing") or {}
    duration = (waves.get("per_wave") or {}).get("duration") or {}
    span, tail = timing.get("span_cycles"), timing.get("tail_cycles")
    median, longest = duration.get("p50"), duration.get("max")
    if (waves.get("waves") or 0) < MIN_TAIL_WAVES or not span or not median or not longest:
        return []
    tail_share = (tail or 0) / span
    if tail_share < TAIL_SHARE or longest < IMBALANCE * median:
        return []
    slowest = ", ".join(
        f"{wave['file']} ({wave['duration']:,})" for wave in waves.get("longest_waves") or []
    )
    return [
        Finding(
            id="W3-wave-tail",
            rule="W3-wave-tail",
            title=f"Wave tail: the slowest waves finish {tail:,} cycles ({tail_share:.0%} of the "
            "traced span) after the median wave",
            priority="MED" if tail_share >= 0.5 else "LOW",
            stall_share=0.0,
            estimated_gain=None,
            scope="kernel",
            root_cause=(
                f"On the traced CU, {waves['waves']} waves run {median:,.0f} cycles at the median "
                f"but up to {longest:,.0f} (p90 {duration.get('p90') or 0:,.0f}); the last ends "
                f"{tail:,} of {span:,} traced cycles after the median wave (begin spread "
                f"{timing.get('begin_spread', 0):,}). Longest: {slowest}. The CU idles while the "
                "few long waves finish: work per wave is uneven (ragged tiles, causal masks, "
                "variable sequence lengths) — this is kernel time, not stall."
            ),
            fix=(
                "Balance work per workgroup: split long work items (split-K / split-sequence), "
                "order the largest tiles first or use a persistent tile scheduler; check that the "
                "grid fills every CU more than once so the tail is a small fraction."
            ),
            location=None,
            effort="medium",
        )
    ]


def waves_evidence(ctx: PlanContext) -> list[Finding]:
    """Findings backed by the wave analysis; nothing when the document has no `waves` section."""
    if not ctx.waves:
        return []
    return entry_waits_on_user_loads(ctx) + hot_loop_mfma_busy(ctx) + wave_tail(ctx)


def sharpen_with_waves(ctx: PlanContext, findings: list[Finding]) -> list[Finding]:
    """Name the load each evidenced wait is on, and the hot loop a finding sits in (in place)."""
    if not ctx.waves:
        return findings
    waits = {wait["index"]: wait for wait in _waitcnt(ctx)}
    for finding in findings:
        if finding.rule.startswith("W"):
            continue
        sentences: list[str] = []
        if not finding.ranked:
            # the glue bucket: every reported wait on it, by the line that issued what it drains
            producers: dict[str, int] = {}
            for wait in waits.values():
                if _location(ctx, wait) != finding.location:
                    continue
                for producer in wait.get("producers") or []:
                    if producer.get("cycles"):
                        where = short_location(_location(ctx, producer))
                        producers[where] = producers.get(where, 0) + producer["cycles"]
            if producers:
                listed = sorted(producers.items(), key=lambda item: -item[1])[:4]
                sentences.append(
                    "Wave analysis: its hottest waits are on loads issued at "
                    + ", ".join(f"{where} ({cycles:,} cycles)" for where, cycles in listed)
                )
        else:
            evidenced = {e.instruction_index for e in finding.evidence}
            hot = sorted(
                (waits[i] for i in evidenced if i in waits and waits[i].get("dominant_producer")),
                key=lambda wait: -(wait.get("stall_cycles") or 0),
            )[:2]
            if hot:
                sentences.append(
                    "Wave analysis: "
                    + "; ".join(
                        producer_sentence(ctx, wait, wait["dominant_producer"], finding.location)
                        for wait in hot
                    )
                )
            for wait in hot:
                producer = wait["dominant_producer"]
                if producer["index"] not in evidenced:
                    evidenced.add(producer["index"])
                    finding.evidence.append(
                        _ref_evidence(
                            ctx,
                            producer,
                            f"producer of wait #{wait['index']}: {producer['cycles']:,} cycles",
                        )
                    )
            if hot and finding.rule == "LINE-hotspot":
                producer = hot[0]["dominant_producer"]
                if _type_of(ctx, producer) == isa.SMEM:
                    finding.fix += (
                        " Here the wait is on a scalar load (kernel arguments, descriptors) issued "
                        "at wave start: its latency is paid once per wave, so put independent "
                        "work before the first use, or give each wave more work to amortise it."
                    )
        anchor = next((e.instruction_index for e in finding.evidence), None)
        loop = _loop_of(ctx, anchor) if finding.ranked and finding.location else None
        if loop:
            sentences.append(f"This line runs {_loop_phrase(loop)}")
        if sentences:
            finding.root_cause = " ".join(
                [finding.root_cause.rstrip(), *(sentence + "." for sentence in sentences)]
            )
    return findings
