"""Hotspot pattern P5: stall charged to the kernel-entry line or unmapped code (explained, not ranked)."""

from __future__ import annotations

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, finding_id


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
                title=f"{share:.0%} of {'stall' if ctx.total_stall else 'latency'} is charged to "
                f"{what} ({line['location']}): not a hotspot",
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
