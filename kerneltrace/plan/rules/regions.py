"""REGION-hotspot: rank instruction regions when source lines cannot carry the ranking."""

from __future__ import annotations

from kerneltrace.analysis.regions import split_regions
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain, priority_for_share
from kerneltrace.plan.rules.line_hotspot import hideable_range
from kerneltrace.plan.verdict import total_stall

LINES_FAIL_SHARE = 0.5  # artifact lines (entry/decorator, unmapped) holding this much stall
MIN_REGION_SHARE = 0.03
MAX_REGIONS = 3


def lines_fail(ctx: PlanContext) -> bool:
    """True when the source-line ranking cannot point at user code for most of the stall."""
    mapped = (ctx.hotspots.get("source_mapping") or {}).get("mapped_fraction")
    artifact = sum(line.get("share") or 0.0 for line in ctx.artifact_lines())
    return mapped == 0 or artifact >= LINES_FAIL_SHARE or not ctx.real_lines()


def region_hotspots(ctx: PlanContext, *, force: bool = False) -> list[Finding]:
    """Top instruction regions by stall (latency in legacy captures) when lines fail (or `force`)."""
    if not (force or lines_fail(ctx)):
        return []
    by, total = ctx.ranking_basis
    if not total:
        return []
    artifacts = {line["location"] for line in ctx.artifact_lines()}
    regions = split_regions(ctx.program_order, artifacts, by)
    if regions and regions[0].metric_cycles < MIN_REGION_SHARE * total:
        # the cost is spread thin over many waits: rank whole basic blocks instead
        regions = split_regions(ctx.program_order, artifacts, by, at_waits=False)
    findings = []
    metric = "stall" if by == "stall_cycles" else "latency"
    for region in regions[:MAX_REGIONS]:
        share = region.metric_cycles / total
        if share < MIN_REGION_SHARE and findings:
            break
        if not region.metric_cycles:
            break
        cited = sorted((ctx.instructions[i] for i in region.instructions),
                       key=lambda ins: -int(ins.get(by) or 0))
        top_type = cited[0].get("type") or "other"
        cause, fix, low, high = hideable_range(top_type)
        location = f"<rows {region.first_index}-{region.last_index}>"
        findings.append(Finding(
            id=f"REGION-hotspot@rows{region.first_index}-{region.last_index}",
            rule="REGION-hotspot",
            title=f"{top_type} {metric} in instruction region {region.name}",
            priority=priority_for_share(share),
            stall_share=round(share, 4),
            estimated_gain=hiding_gain(share, low, high, f"the region's {metric}")
            if by == "stall_cycles" else None,
            root_cause=(
                f"Source lines cannot rank this kernel (the entry/decorator line or unmapped code "
                f"holds the {metric}, or there are no line tables), so the instruction stream is "
                f"ranked instead: this region (pc {region.first_pc:#x}–{region.last_pc:#x}) holds "
                f"{share:.1%} of all {metric}; its top instruction is a {top_type}: {cause}."
                if region.first_pc is not None else
                f"Source lines cannot rank this kernel, so the instruction stream is ranked: this "
                f"region holds {share:.1%} of all {metric}; its top instruction is a {top_type}: "
                f"{cause}."
            ),
            fix=f"{fix[0].upper()}{fix[1:]}, in the code that emits rows {region.first_index}–"
                f"{region.last_index}" + (f" (nearest source line {region.source})." if region.source
                                         else "."),
            evidence=[ctx.evidence(ins, "in region") for ins in cited[:5] if ins.get(by)],
            location=location,
            effort="medium",
        ))
    return findings


GLUE_LOADS_MIN_SHARE = 0.1


def glue_line_loads(ctx: PlanContext) -> list[Finding]:
    """GLUE-line-loads: the kernel's own data loads (and the `vmcnt` waits draining them) are
    charged to the kernel-entry/decorator line — the real bottleneck hidden
    under "do not optimise this line". Named by the row range of those loads and waits."""
    from kerneltrace.isa import classify as isa

    # the decorator line only: with no line tables everything is "unmapped" and REGION ranks it
    glue = [ctx.instructions[i] for line in ctx.artifact_lines()
            if line.get("artifact") == "kernel-entry"
            for i in line.get("instructions") or [] if i in ctx.instructions]
    loads = [ins for ins in glue if ins.get("type") == isa.VMEM_LOAD and ins.get("hits")]
    waits = [ins for ins in glue if ins.get("type") == isa.VMEM_WAIT and ins.get("stall_cycles")]
    if not loads or not waits:
        return []
    cited = sorted(loads + waits, key=lambda ins: -(ins.get("stall_cycles") or 0))
    stall = total_stall(cited)
    share = ctx.share(stall)
    if share < GLUE_LOADS_MIN_SHARE:
        return []
    first = min(ins["index"] for ins in cited)
    last = max(ins["index"] for ins in cited)
    to_lds = sum(1 for ins in loads if (ins.get("asm") or "").rstrip().endswith(" lds"))
    kinds = sorted({isa.opcode(ins["asm"]) for ins in loads})
    return [Finding(
        id=f"GLUE-line-loads@rows{first}-{last}",
        rule="GLUE-line-loads",
        title=(f"The kernel's loads sit on the glue line: {len(loads)} vector load(s) and their "
               f"`vmcnt` waits hold {share:.0%} of stall (rows {first}–{last})"),
        priority=priority_for_share(share),
        stall_share=round(share, 4),
        estimated_gain=hiding_gain(share, *hideable_range("VMEM-wait")[2:],
                                   "the glue-line loads' issue stall and waits"),
        root_cause=(f"{len(loads)} data load(s) ({', '.join(kinds)}"
                    + (f"; {to_lds} straight to LDS" if to_lds else "")
                    + f") and {len(waits)} `s_waitcnt vmcnt` wait(s) on them are charged to the "
                    "kernel-entry/decorator line, so the line ranking hides them; "
                    "they are the kernel's tile loads, not compiler glue, and the waves stall "
                    "draining them (typically `vmcnt(0)` right before an `s_barrier`)."),
        fix=("Issue the next tile's loads one stage earlier (double-buffer the LDS/register tile: "
             "load tile k+1 while computing tile k) and wait with `vmcnt(N)` for the tile you need "
             "instead of `vmcnt(0)` before the barrier."),
        schematic="load_lds(tile[0])\nfor k: load_lds(tile[k+1]); wait_vmcnt(loads of k+1); "
                  "barrier(); compute(tile[k])",
        evidence=[ctx.evidence(ins, "glue-line load" if ins.get("type") == isa.VMEM_LOAD
                               else "wait on them") for ins in cited[:6]],
        location=f"<rows {first}-{last}>",
        effort="medium",
    )]
