"""Hotspot pattern P5: stall charged to the kernel-entry line or unmapped code (explained, not ranked)."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class EntryLineThresholds:
    """P5: glue lines explained, not ranked."""

    CONCERN = "entry_line"
    min_share: float = heuristic(0.02, "share of stall on a kernel-entry/unmapped line from "
                                 "which the plan explains it")


@plan_rule(id="P5-entry-line-artifact", lever="none", optional=("waves",), order=100,
           thresholds=(EntryLineThresholds,))
def entry_line_artifact(ctx: PlanContext) -> list[Finding]:
    """Stall charged to the kernel-entry line or unmapped code (explained, not ranked).

    P5: stall charged to the kernel-entry (decorator) line or unmapped code: explained, not ranked.

    Trigger: a kernel-entry or unmapped line holds ≥ 2 % of stall
    Evidence: its top instructions
    Gain: none; never ranked
    Fix: do not optimise this line; its waits are usually on loads the ranked lines issue"""
    min_share = ctx.thresholds.of(EntryLineThresholds).min_share
    # no line tables at all: every instruction is "unmapped", there is no user line to point at,
    # and the capture-quality note (SRC-no-source-mapping) already says so
    unmapped_kernel = (ctx.hotspots.get("source_mapping") or {}).get("mapped_fraction") == 0
    findings = []
    for line in ctx.artifact_lines():
        share = line.get("share") or 0.0
        if share < min_share:
            continue
        kind = line["artifact"]
        if unmapped_kernel and kind != "kernel-entry":
            continue
        what = (
            "the kernel entry/decorator line"
            if kind == "kernel-entry"
            else "instructions without a source line"
        )
        findings.append(
            ctx.finding(
                "P5-entry-line-artifact", share, location=line["location"],
                title=f"{share:.0%} of {'stall' if ctx.total_stall else 'latency'} is charged to "
                f"{what} ({line['location']}): not a hotspot",
                priority="LOW",
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
                effort="none",
                ranked=False,
            )
        )
    return findings
