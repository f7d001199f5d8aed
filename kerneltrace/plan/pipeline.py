"""The findings pipeline: run the rules, then the post-passes in one written order (`run_all`).

Each step is a function over the findings list (and the context); `POST_PASSES` is the order, and
the order matters — every step says what it needs from the steps before it:

1. `fallback_lines`: top user lines no rule located get a LINE-hotspot finding (attribution
   findings, which carry stall charged elsewhere, cover no line).
2. `sharpen_with_waves`: wave-level attribution names the load each wait drains (no-op without
   `waves`); after 1 so the fallback findings are sharpened too.
3. `demote_artifact_lines`: a finding located on a glue (artifact) line is never HIGH.
4. `never_empty`: with nothing ranked while stall exists, rank the instruction regions.
5. `merge_duplicates`: one finding per line and stall (before the bounds, which see each
   finding's final evidence).
5b. `check_dependencies`: every fix that reorders instructions checked against register def-use
   (kerneltrace/plan/dependencies.py): after 5, on each finding's final evidence.
6. `bound_findings`: lever vs verdict, ceiling, once-per-wave, priority from the bounded gain,
   calibration (kerneltrace/plan/gains.py).
7. `kernel_time`: one currency (issue 21.1) — every ranked gain restated as a fraction of kernel
   time and the priority set from it alone (after 6: it converts the bounded gains).
8. `order_and_name`: sort by that gain, the line carrying most of an umbrella's cycles in the
   umbrella's place (`lines_before_umbrellas`), spills in the hot loop first, unique ids (`#2`).
9. `overlap_groups`, 10. `defer_to_verdict`, 11. `one_high_per_line`: overlap groups from the
   sorted order, then the priority caps that depend on them.
12. `order_and_group`: the final order (the caps changed priorities) and the groups recomputed for
    it (a group is named by its first member).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kerneltrace.isa.classify import BARRIER
from kerneltrace.plan import gains
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.dependencies import check_dependencies
from kerneltrace.plan.findings import (
    Finding,
    dedupe_ids,
    lines_before_umbrellas,
    merge_duplicates,
    sort_findings,
)
from kerneltrace.plan.rules import ATTRIBUTION_RULES, RULES, WAVE_RULES, rule_named
from kerneltrace.plan.rules.kernel_wide import RULE_PING_PONG
from kerneltrace.plan.rules.launch import RULE_SETUP
from kerneltrace.plan.rules.spills import spills_first
from kerneltrace.plan.rules.stragglers import RULE_STRAGGLER_WAITS
from kerneltrace.plan.rules.waves import sharpen_with_waves
from kerneltrace.plan.spec import PlanRule
from kerneltrace.thresholds import GainThresholds

Step = Callable[[list[Finding], PlanContext], list[Finding]]


def available_inputs(ctx: PlanContext) -> frozenset[str]:
    """The INPUTS (kerneltrace/plan/spec.py) this dispatch has."""
    have = {"hotspots"}
    if ctx.waves:
        have.add("waves")
    if ctx.l2_metrics:
        have.add("counters")
    if ctx.hotspots.get("launch"):
        have.add("launch")
    return frozenset(have)


def run_rules(ctx: PlanContext, rules: Iterable[PlanRule]) -> list[Finding]:
    """Every rule whose required inputs this dispatch has, in run order."""
    have = available_inputs(ctx)
    findings: list[Finding] = []
    for rule in rules:
        if rule.requires <= have:
            findings.extend(rule.apply(ctx))
    return findings


def fallback_lines(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    covered = {f.location for f in findings if f.location and f.rule not in ATTRIBUTION_RULES}
    return findings + rule_named("LINE-hotspot").apply(ctx, covered)


def sharpen(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    return sharpen_with_waves(ctx, findings, WAVE_RULES)


def demote_artifact_lines(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    # A glue bucket is never the thing to fix first.
    for finding in findings:
        if (finding.ranked and finding.location and ctx.is_artifact(finding.location)
                and finding.priority == "HIGH"):
            finding.priority = "MED"
    return findings


def never_empty(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    # never "nothing to rank" while stall (or latency) exists: rank the instruction stream
    if any(f.ranked for f in findings):
        return findings
    return findings + rule_named("REGION-hotspot").apply(ctx, force=True)


def merge(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    return merge_duplicates(findings)


def bound(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    return gains.bound_findings(findings, ctx.verdict, ctx)


def kernel_time(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    gains.in_kernel_time(findings, ctx)
    return findings


def _lines_first(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    return lines_before_umbrellas(findings, ctx.thresholds.of(GainThresholds).umbrella_line_share,
                                  frozenset({RULE_SETUP}))


def order_and_name(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    return dedupe_ids(spills_first(_lines_first(sort_findings(findings), ctx)))


def _in_place(step: Callable[[list[Finding]], None]) -> Step:
    def run(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
        step(findings)
        return findings
    run.__name__ = step.__name__
    run.__doc__ = step.__doc__
    return run


# barrier findings that name the barrier waits' cause (the partner phase, the straggler's waits)
BARRIER_CAUSES = frozenset({RULE_PING_PONG, RULE_STRAGGLER_WAITS})


def restatements_last(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    """Line and region findings on barrier stall below a finding that names the barrier waits'
    cause say that cause again for a part of the same waits (barrier_remedy gives them its fix):
    they follow every distinct ranked change, so the second slot is a second change. When the
    waits before the barriers explain the barrier stall without such a finding (code.json's
    segments, `PlanContext.barrier_caused`), every barrier line is the symptom and follows the
    waits that cause it (issue 21.4: causes before symptoms)."""
    cause = next((k for k, f in enumerate(findings) if f.ranked and f.rule in BARRIER_CAUSES), None)
    if cause is None and ctx.barrier_caused:
        cause = -1
    if cause is None:
        return findings
    again = [f for f in findings[cause + 1:] if f.ranked and gains.stall_mostly(f, ctx, BARRIER)]
    if not again:
        return findings
    moved = {id(f) for f in again}
    rest = [f for f in findings if id(f) not in moved]
    last_ranked = max((k for k, f in enumerate(rest) if f.ranked), default=-1)
    return rest[:last_ranked + 1] + again + rest[last_ranked + 1:]


def order_and_group(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    findings = restatements_last(spills_first(_lines_first(sort_findings(findings), ctx)), ctx)
    gains.overlap_groups(findings)
    return findings


POST_PASSES: tuple[Step, ...] = (
    fallback_lines,
    sharpen,
    demote_artifact_lines,
    never_empty,
    merge,
    check_dependencies,
    bound,
    kernel_time,
    order_and_name,
    _in_place(gains.overlap_groups),
    _in_place(gains.defer_to_verdict),
    _in_place(gains.one_high_per_line),
    order_and_group,
)


def run_all(ctx: PlanContext, rules: Iterable[PlanRule] | None = None) -> list[Finding]:
    """Run the rules (all registered ones by default), then every post-pass in order."""
    findings = run_rules(ctx, RULES if rules is None else rules)
    for step in POST_PASSES:
        findings = step(findings, ctx)
    return findings
