"""Wave-level evidence (hotspots/2 `waves`): which loads a wait drains, MFMA busy share of loops, tails.

Rules here read the `waves` object of `kerneltrace.analysis.waves.analyze.analyze_waves` (docs/hotspot-json.md,
docs/summary-json.md); every one returns nothing when the document has no `waves` section.
`sharpen_with_waves` is a post-pass of the findings pipeline (kerneltrace/plan/pipeline.py): it adds producer attribution and loop context to
findings other rules made, so a finding on a wait names the load it waits for.
W1 (glue waits on user loads) and W3 (wave tail) live here, W2 (hot-loop MFMA busy) in
waves_loop.py, the shared reference helpers in waves_refs.py; each is its own PlanRule.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, hiding_gain
from kerneltrace.plan.occupancy_check import headroom as occupancy_headroom
from kerneltrace.plan.rules.waves_refs import (
    PRODUCER_DEFAULT,
    PRODUCER_KINDS,
    is_artifact_ref,
    loop_of,
    loop_phrase,
    producer_sentence,
    ref_evidence,
    ref_location,
    type_of,
    wave_waits,
)
from kerneltrace.plan.spec import plan_rule
from kerneltrace.sourceloc import short_location
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class WaveThresholds:
    """W1 (glue waits on user loads) and W3 (wave tail)."""

    CONCERN = "waves"
    min_share: float = heuristic(0.01, "attributed wait stall (share of all stall) below which "
                                 "a producer line is not a W1 item")
    entry_hideable: tuple[float, float] = heuristic((0.3, 0.7), "share of the attributed wait "
                                                    "stall issuing the loads earlier hides (W1)")
    tail_share: float = heuristic(0.25, "the slowest wave ends this share of the traced span "
                                  "after the median wave: a W3 finding (the tail verdict needs "
                                  "verdict.tail_share)")
    tail_med_share: float = heuristic(0.5, "tail share from which W3 is MED (else LOW)")
    imbalance: float = heuristic(1.5, "longest wave / median wave duration for W3")
    min_tail_waves: int = heuristic(4, "waves traced for W3 to judge a tail")
    equal_work_spread: float = heuristic(1.05, "most / fewest instructions among the longest and "
                                         "shortest traced waves up to which they did the same "
                                         "work: their duration spread is contention (issue "
                                         "arbitration, the launch ramp), which a balanced work "
                                         "split cannot remove (no W3)")
    tail_recoverable: tuple[float, float] = heuristic((0.0, 0.1), "share of one traced CU's "
                                                      "tail (slowest wave's end after the median) "
                                                      "a balanced work split removes from the "
                                                      "kernel time (W3): one CU of many is "
                                                      "traced, so the low end is 0 (the others "
                                                      "may be balanced) and the high end small")


def tail_gain(tail_share: float, rounds: float | None, recoverable: tuple[float, float]) -> Gain:
    """W3: the tail is CU time (kernel time, not stall). Balancing removes part of it; with
    several rounds of workgroups per CU the CU refills while long waves run, so only the last
    round's tail is the dispatch's (÷ rounds)."""
    low, high = recoverable
    per_round = min(tail_share, 1.0) / max(rounds or 1.0, 1.0)
    return Gain(round(per_round * low, 4), round(per_round * high, 4),
                f"the traced CU runs {tail_share:.0%} of its span after the median wave ended"
                + (f", over {rounds:g} rounds of workgroups (only the last round's tail is the "
                   "dispatch's)" if rounds and rounds > 1 else "")
                + f"; a balanced split of the work removes {low:.0%}–{high:.0%} of that (one CU "
                "traced: the others may be balanced)", unit="kernel_time")


@plan_rule(id="W1-entry-waits-on-loads", lever="memory-latency", calibrated=True, attribution=True,
           requires=("hotspots", "waves"), order=190, thresholds=(WaveThresholds,))
def entry_waits_on_user_loads(ctx: PlanContext) -> list[Finding]:
    """Waits in compiler glue stall on loads a user line issued.

    W1: waits charged to glue (entry/unmapped line) that wait for loads a user line issued.

    Trigger: hotspots/2 only: `s_waitcnt` on a kernel-entry/unmapped line whose attributed producers
        (`waves.waitcnt[].producers`, youngest drained producer) sit on a user line; ≥ 1 % of stall
        per producer line. Located at the producer line; it does not count as "covered", so the
        line's own stall still gets its finding
    Evidence: the producer instructions and the glue waits with their attributed cycles
    Gain: 30–70 % of the attributed wait stall
    Fix: issue the loads earlier (one stage ahead) and put independent work before the wait"""
    limits = ctx.thresholds.of(WaveThresholds)
    per_line: dict[str, list[tuple[dict, dict]]] = {}
    for wait in wave_waits(ctx):
        if not is_artifact_ref(ctx, wait):
            continue
        for producer in wait.get("producers") or []:
            location = ref_location(ctx, producer)
            if producer.get("cycles") and location and not is_artifact_ref(ctx, producer):
                per_line.setdefault(location, []).append((wait, producer))
    findings = []
    for location, pairs in per_line.items():
        cycles = sum(producer["cycles"] for _, producer in pairs)
        share = ctx.share(cycles)
        if share < limits.min_share:
            continue
        waits = sorted(
            {wait["index"]: wait for wait, _ in pairs}.values(), key=lambda w: w["index"]
        )
        glue = sorted({short_location(ref_location(ctx, wait)) for wait in waits})
        kind_type = type_of(ctx, pairs[0][1])
        kind, fix = PRODUCER_KINDS.get(kind_type, PRODUCER_DEFAULT)
        loop = loop_of(ctx, pairs[0][1]["index"])
        if kind_type == isa.VMEM_LOAD and loop is None:
            fix = (
                "Issue these loads earlier and put independent work between each load and its "
                "first use"
                + ("; when nothing independent is left, more waves per SIMD hide the latency."
                   if occupancy_headroom(ctx.hotspots)[0] else ".")
            )
        evidence, seen = [], set()
        for wait, producer in sorted(pairs, key=lambda pair: -pair[1]["cycles"])[:4]:
            if producer["index"] not in seen:
                seen.add(producer["index"])
                evidence.append(ref_evidence(ctx, producer, f"{kind} the glue waits drain"))
            evidence.append(
                ref_evidence(
                    ctx,
                    wait,
                    f"{producer['cycles']:,} stall cycles waiting for #{producer['index']}",
                )
            )
        findings.append(
            ctx.finding(
                "W1-entry-waits-on-loads", share, location=location,
                title=f"Waits in compiler glue stall on the {kind}s at {location}",
                estimated_gain=hiding_gain(share, *limits.entry_hideable,
                                           f"the waits on these {kind}s"),
                root_cause=(
                    f"{len(waits)} `s_waitcnt` charged to {', '.join(glue)} (not ranked: compiler "
                    f"glue) spend {cycles:,} stall cycles ({share:.1%} of all stall) waiting for "
                    f"{len(seen)} {kind}(s) issued at {location}"
                    + (f", {loop_phrase(loop)}" if loop else "")
                    + ". A wait is released when the youngest load it drains returns, so this "
                    "latency belongs to these loads, not to the glue line."
                ),
                fix=fix,
                schematic="load(next)      # issue early\n... independent work ...\nwait(); use(next)",
                evidence=evidence,
                effort="medium",
            )
        )
    return findings


@plan_rule(id="W3-wave-tail", lever="tail", serves=("tail",), requires=("hotspots", "waves"),
           order=210, thresholds=(WaveThresholds,))
def wave_tail(ctx: PlanContext) -> list[Finding]:
    """Uneven waves: the slowest ends long after the median.

    W3: uneven waves — the slowest ends long after the median (grid tail / load imbalance).

    Trigger: hotspots/2 only: ≥ 4 waves, `timing.tail_cycles` ≥ 25 % of `span_cycles` and the
        longest wave ≥ 1.5× the median duration (MED from 50 %), and the longest and shortest
        waves ran different instruction counts (> 5 % apart: same work is contention, not a tail
        a work split removes)
    Evidence: durations and longest waves in the text
    Gain: 0–10 % of the tail share of the traced span ÷ the launch's rounds of workgroups per CU,
        in kernel time (the tail is CU time, not stall: `stall_share` 0; one CU traced)
    Fix: balance work per workgroup (split-K/split-sequence, largest tiles first, a persistent tile
        scheduler)"""
    limits = ctx.thresholds.of(WaveThresholds)
    waves = ctx.waves or {}
    timing = waves.get("timing") or {}
    duration = (waves.get("per_wave") or {}).get("duration") or {}
    span, tail = timing.get("span_cycles"), timing.get("tail_cycles")
    median, longest = duration.get("p50"), duration.get("max")
    if (waves.get("waves") or 0) < limits.min_tail_waves or not span or not median or not longest:
        return []
    tail_share = (tail or 0) / span
    if tail_share < limits.tail_share or longest < limits.imbalance * median:
        return []
    if same_work(waves, limits.equal_work_spread):
        return []
    slowest = ", ".join(
        f"{wave['file']} ({wave['duration']:,})" for wave in waves.get("longest_waves") or []
    )
    return [
        ctx.finding(
            "W3-wave-tail", 0.0,
            title=f"Wave tail: the slowest waves finish {tail:,} cycles ({tail_share:.0%} of the "
            "traced span) after the median wave",
            priority="MED" if tail_share >= limits.tail_med_share else "LOW",
            estimated_gain=tail_gain(tail_share, (ctx.structure.get("launch") or {}).get("rounds"),
                                     limits.tail_recoverable),
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
            effort="high",  # a different work split: split-K, a persistent tile scheduler
        )
    ]


def same_work(waves: dict, spread: float) -> bool:
    """Whether the longest and the shortest traced waves ran the same number of instructions
    (within `spread`): then the slow ones are not slow for having more work."""
    counts = [wave.get("instructions") for wave in
              (waves.get("longest_waves") or []) + (waves.get("shortest_waves") or [])]
    counts = [count for count in counts if isinstance(count, int) and count > 0]
    return len(counts) >= 2 and max(counts) <= spread * min(counts)


def sharpen_with_waves(ctx: PlanContext, findings: list[Finding],
                       made_from_waves: frozenset[str] = frozenset()) -> list[Finding]:
    """Name the load each evidenced wait is on, and the hot loop a finding sits in (in place);
    findings of the rules in `made_from_waves` (those that require `waves`) are left alone."""
    if not ctx.waves:
        return findings
    waits = {wait["index"]: wait for wait in wave_waits(ctx)}
    for finding in findings:
        if finding.rule in made_from_waves:  # their text is the wave analysis already
            continue
        sentences: list[str] = []
        if not finding.ranked:
            # the glue bucket: every reported wait on it, by the line that issued what it drains
            producers: dict[str, int] = {}
            for wait in waits.values():
                if ref_location(ctx, wait) != finding.location:
                    continue
                for producer in wait.get("producers") or []:
                    if producer.get("cycles"):
                        where = short_location(ref_location(ctx, producer))
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
                        ref_evidence(
                            ctx,
                            producer,
                            f"producer of wait #{wait['index']}: {producer['cycles']:,} cycles",
                        )
                    )
            if hot and finding.rule == "LINE-hotspot":
                producer = hot[0]["dominant_producer"]
                if type_of(ctx, producer) == isa.SMEM:
                    finding.fix += (
                        " Here the wait is on a scalar load (kernel arguments, descriptors) issued "
                        "at wave start: its latency is paid once per wave, so put independent "
                        "work before the first use, or give each wave more work to amortise it."
                    )
        anchor = next((e.instruction_index for e in finding.evidence), None)
        loop = loop_of(ctx, anchor) if finding.ranked and finding.location else None
        if loop:
            sentences.append(f"This line runs {loop_phrase(loop)}")
        if sentences:
            finding.root_cause = " ".join(
                [finding.root_cause.rstrip(), *(sentence + "." for sentence in sentences)]
            )
    return findings
