"""REGION-hotspot: rank instruction regions when source lines cannot carry the ranking."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kerneltrace.analysis.issue_mix import estimated_stall
from kerneltrace.analysis.regions import split_regions
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules.kernel_wide import barrier_remedy
from kerneltrace.plan.rules.line_hotspot import LineThresholds, hideable_range
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import total_stall
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class RegionThresholds:
    """REGION-hotspot (lines fail) and GLUE-line-loads (the kernel's loads on the glue line)."""

    CONCERN = "regions"
    lines_fail_share: float = heuristic(0.5, "stall share on artifact lines (entry/decorator, "
                                        "unmapped) from which source lines cannot rank")
    min_region_share: float = heuristic(0.03, "stall share of a region to be ranked (and of the "
                                        "top region before whole basic blocks are used)")
    max_regions: int = heuristic(3, "regions ranked at most")
    glue_loads_min_share: float = heuristic(0.1, "stall share of vector loads and their waits on "
                                            "the kernel-entry line for GLUE-line-loads")


def lines_fail(ctx: PlanContext) -> bool:
    """True when the source-line ranking cannot point at user code for most of the stall."""
    limits = ctx.thresholds.of(RegionThresholds)
    mapped = (ctx.hotspots.get("source_mapping") or {}).get("mapped_fraction")
    artifact = sum(line.get("share") or 0.0 for line in ctx.artifact_lines())
    return mapped == 0 or artifact >= limits.lines_fail_share or not ctx.real_lines()


@plan_rule(id="REGION-hotspot", lever="region", order=180, calibrated=True,
           thresholds=(RegionThresholds, LineThresholds))
def region_hotspots(ctx: PlanContext, *, force: bool = False) -> list[Finding]:
    """Instruction regions ranked when source lines cannot carry the ranking.

    Top instruction regions by stall (latency in legacy captures) when lines fail (or `force`).

    Trigger: source lines fail: no line tables, or entry/unmapped lines hold ≥ 50 % of stall, or no
        user line has stall (and always when no other rule ranked anything). Regions
        (`kerneltrace/analysis/regions.py`): the instruction stream cut at branch targets and after
        every `s_waitcnt`/`s_barrier`/branch (whole basic blocks when the top region is < 3 %),
        named by row range, the 3 dominant opcodes and the nearest mapped source line; the top 3 (≥
        3 % each), id `REGION-hotspot@rows<a>-<b>`, may be HIGH
    Evidence: the region's top instructions
    Gain: per-type hideable range of its top instruction (none in legacy captures, ranked by
        latency)
    Fix: the fix of its top instruction's type, in the code that emits those rows"""
    if not (force or lines_fail(ctx)):
        return []
    limits = ctx.thresholds.of(RegionThresholds)
    by, total = ctx.ranking_basis
    if not total:
        return []
    artifacts = {line["location"] for line in ctx.artifact_lines()}
    regions = split_regions(ctx.program_order, artifacts, by)
    if regions and regions[0].metric_cycles < limits.min_region_share * total:
        # the cost is spread thin over many waits: rank whole basic blocks instead
        regions = split_regions(ctx.program_order, artifacts, by, at_waits=False)
    from kerneltrace.plan.rules.staircase import staircase_waits

    # a region closed by a staircase wait is one step of WAIT-staircase's pattern: ranked there
    stairs = staircase_waits(ctx)
    regions = [r for r in regions if not stairs or _top_row(ctx, r, by) not in stairs]
    findings = []
    metric = "stall" if by == "stall_cycles" else "latency"
    for region in regions[:limits.max_regions]:
        share = region.metric_cycles / total
        if by != "stall_cycles":  # no stall column: the region's estimated stall, not its latency
            inside = [ctx.instructions[i] for i in region.instructions]
            latency = sum(int(ins.get("latency_cycles") or 0) for ins in inside)
            share *= sum(estimated_stall(ins) for ins in inside) / latency if latency else 0.0
        if share < limits.min_region_share and findings:
            break
        if not region.metric_cycles:
            break
        cited = sorted((ctx.instructions[i] for i in region.instructions),
                       key=lambda ins: -int(ins.get(by) or 0))
        top_type = cited[0].get("type") or "other"
        cause, fix, low, high = barrier_remedy(
            ctx, top_type, hideable_range(top_type, ctx.thresholds.of(LineThresholds)))
        location = f"<rows {region.first_index}-{region.last_index}>"
        findings.append(ctx.finding(
            "REGION-hotspot", share, cap="HIGH", location=location,
            id=f"REGION-hotspot@rows{region.first_index}-{region.last_index}",
            title=f"{top_type} {metric} in instruction region {region.name}",
            estimated_gain=replace(hiding_gain(share, low, high, f"the region's {metric}"),
                                   unit="stall_cycles" if by == "stall_cycles" else "latency_cycles"),
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
            effort="medium",
        ))
    return findings


def _top_row(ctx: PlanContext, region, by: str) -> int:
    """The region's row holding most of its metric (estimated stall without a stall column)."""
    rows = [ctx.instructions[i] for i in region.instructions]
    key = (lambda ins: int(ins.get(by) or 0)) if by == "stall_cycles" else estimated_stall
    return max(rows, key=lambda ins: (key(ins), -ins["index"]))["index"]


@plan_rule(id="GLUE-line-loads", lever="memory-pipeline", order=170, calibrated=True,
           thresholds=(RegionThresholds, LineThresholds))
def glue_line_loads(ctx: PlanContext) -> list[Finding]:
    """The kernel's own data loads and their waits sit on the glue (entry) line.

    GLUE-line-loads: the kernel's own data loads (and the `vmcnt` waits draining them) are charged
    to the kernel-entry/decorator line — the real bottleneck hidden under "do not optimise this
    line". Named by the row range of those loads and waits.

    Trigger: the kernel-entry/decorator line holds vector loads and stalled `vmcnt` waits worth ≥ 10
        % of stall (e.g. K/V tiles loaded with `buffer_load … lds` and drained by `vmcnt(0)` before
        `s_barrier`): the real bottleneck hidden under "do not optimise this line". Id
        `GLUE-line-loads@rows<a>-<b>`, may be HIGH
    Evidence: the loads and waits by stall
    Gain: VMEM-wait hideable range of their stall
    Fix: load tile k+1 while computing tile k, `vmcnt(N)` instead of `vmcnt(0)` before the barrier"""
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
    if share < ctx.thresholds.of(RegionThresholds).glue_loads_min_share:
        return []
    first = min(ins["index"] for ins in cited)
    last = max(ins["index"] for ins in cited)
    to_lds = sum(1 for ins in loads if (ins.get("asm") or "").rstrip().endswith(" lds"))
    kinds = sorted({isa.opcode(ins["asm"]) for ins in loads})
    return [ctx.finding(
        "GLUE-line-loads", share, cap="HIGH", location=f"<rows {first}-{last}>",
        id=f"GLUE-line-loads@rows{first}-{last}",
        title=(f"The kernel's loads sit on the glue line: {len(loads)} vector load(s) and their "
               f"`vmcnt` waits hold {share:.0%} of stall (rows {first}–{last})"),
        estimated_gain=hiding_gain(share, *hideable_range(isa.VMEM_WAIT,
                                                          ctx.thresholds.of(LineThresholds))[2:],
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
        effort="medium",
    )]
