"""Rule registry: every rule is a function PlanContext → list[Finding]; add one here with its test."""

from __future__ import annotations

from collections.abc import Callable

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, dedupe_ids, merge_duplicates, sort_findings
from kerneltrace.plan.gains import (
    bound_findings,
    defer_to_verdict,
    one_high_per_line,
    overlap_groups,
)
from kerneltrace.plan.rules.entry_line import entry_line_artifact
from kerneltrace.plan.rules.hazards import nop_hazards
from kerneltrace.plan.rules.kernel_wide import (
    barrier_dominated,
    no_source_mapping,
    occupancy_limited,
)
from kerneltrace.plan.rules.lds_scalar_patterns import lds_read_before_mfma, scale_load_late
from kerneltrace.plan.rules.line_hotspot import top_line_hotspots
from kerneltrace.plan.rules.memory import memory_verdict
from kerneltrace.plan.rules.mfma_chain import mfma_dependency_chain
from kerneltrace.plan.rules.regions import glue_line_loads, region_hotspots
from kerneltrace.plan.rules.spills import private_array_scratch, register_spills, spills_first
from kerneltrace.plan.rules.verdict_rules import narrow_loads, prologue_setup, streaming_kernel
from kerneltrace.plan.rules.vmem_patterns import loads_in_mfma_loop, vmem_queue_burst
from kerneltrace.plan.rules.waves import sharpen_with_waves, waves_evidence

Rule = Callable[[PlanContext], list[Finding]]

ATTRIBUTION_RULES = frozenset({"W1-entry-waits-on-loads"})

RULES: list[Rule] = [
    register_spills,
    private_array_scratch,
    streaming_kernel,
    prologue_setup,
    narrow_loads,
    loads_in_mfma_loop,
    vmem_queue_burst,
    lds_read_before_mfma,
    scale_load_late,
    entry_line_artifact,
    occupancy_limited,
    barrier_dominated,
    mfma_dependency_chain,
    memory_verdict,
    no_source_mapping,
    nop_hazards,
    glue_line_loads,
    region_hotspots,
    waves_evidence,
]


def run_all(ctx: PlanContext, rules: list[Rule] | None = None) -> list[Finding]:
    """Run the rules, add fallback findings for unexplained top lines, cap artifact-located items."""
    findings: list[Finding] = []
    for rule in RULES if rules is None else rules:
        findings.extend(rule(ctx))
    # Attribution findings carry stall charged elsewhere; the line's own stall still needs a finding.
    covered = {f.location for f in findings if f.location and f.rule not in ATTRIBUTION_RULES}
    findings.extend(top_line_hotspots(ctx, covered))
    # Wave-level attribution sharpens whatever the line rules found (no-op without `waves`).
    sharpen_with_waves(ctx, findings)
    for finding in findings:
        # A glue bucket is never the thing to fix first (reference pattern 5).
        if finding.ranked and finding.location and ctx.is_artifact(finding.location):
            if finding.priority == "HIGH":
                finding.priority = "MED"
    if not any(f.ranked for f in findings):
        # never "nothing to rank" while stall (or latency) exists: rank the instruction stream
        findings.extend(region_hotspots(ctx, force=True))
    findings = merge_duplicates(findings)
    bound_findings(findings, ctx.verdict, ctx)
    findings = dedupe_ids(spills_first(sort_findings(findings)))
    overlap_groups(findings)
    defer_to_verdict(findings)
    one_high_per_line(findings)
    findings = spills_first(sort_findings(findings))
    overlap_groups(findings)
    return findings
