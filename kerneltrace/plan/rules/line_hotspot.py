"""Fallback for top user lines no pattern explained: root cause and fix from the dominant stall type."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.issue_mix import row_stall
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules.kernel_wide import barrier_remedy
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import is_no_stall
from kerneltrace.thresholds import heuristic

_HIDES = "share of a line's {} stall its fix hides"


@dataclass(frozen=True)
class LineThresholds:
    """LINE-hotspot (and REGION-hotspot): hideable share per dominant stall type."""

    CONCERN = "lines"
    min_share: float = heuristic(0.03, "share of stall from which a top user line no rule "
                                 "located gets a LINE-hotspot finding")
    top_lines: int = heuristic(5, "top user lines the fallback looks at")
    vmem_load: tuple[float, float] = heuristic((0.3, 0.7), _HIDES.format("VMEM-load (issue)"))
    vmem_wait: tuple[float, float] = heuristic((0.3, 0.8), _HIDES.format("VMEM-wait"))
    vmem_store: tuple[float, float] = heuristic((0.2, 0.5), _HIDES.format("VMEM-store"))
    lds: tuple[float, float] = heuristic((0.2, 0.6), _HIDES.format("LDS"))
    lds_smem_wait: tuple[float, float] = heuristic((0.3, 0.7), _HIDES.format("LDS/SMEM-wait"))
    smem: tuple[float, float] = heuristic((0.3, 0.7), _HIDES.format("SMEM"))
    barrier: tuple[float, float] = heuristic((0.2, 0.6), _HIDES.format("barrier"))
    mfma: tuple[float, float] = heuristic((0.3, 0.7), _HIDES.format("MFMA"))
    valu: tuple[float, float] = heuristic((0.1, 0.4), _HIDES.format("VALU"))
    salu: tuple[float, float] = heuristic((0.1, 0.3), _HIDES.format("SALU"))
    other: tuple[float, float] = heuristic((0.1, 0.3), _HIDES.format("mixed or uncommon"))


# (root cause, fix, LineThresholds field of its hideable range) per dominant stall type.
_BY_TYPE: dict[str, tuple[str, str, str]] = {
    isa.VMEM_LOAD: (
        "vector loads cannot issue: the memory queue is full or nothing independent "
        "is left to overlap",
        "spread loads between compute; prefetch one stage ahead",
        "vmem_load",
    ),
    isa.VMEM_WAIT: (
        "the wave waits for vector-memory loads to return",
        "issue the loads earlier (one iteration ahead) so compute covers their latency",
        "vmem_wait",
    ),
    isa.VMEM_STORE: (
        "stores back up the memory queue",
        "batch stores at the end of the block, use wider stores",
        "vmem_store",
    ),
    isa.LDS: (
        "LDS access latency or bank conflicts",
        "pad or swizzle the LDS layout; use wider ds_read_b128",
        "lds",
    ),
    isa.LDS_SMEM_WAIT: (
        "the wave waits for LDS or scalar loads (lgkmcnt)",
        "issue LDS/scalar reads earlier, group them before their consumers",
        "lds_smem_wait",
    ),
    isa.SMEM: (
        "scalar loads stall",
        "hoist scalar loads (kernel arguments, pointers) to the start",
        "smem",
    ),
    isa.BARRIER: (
        "waves wait at the barrier for the slowest wave",
        "balance work between waves; fewer barriers per iteration",
        "barrier",
    ),
    isa.MFMA: (
        "MFMAs wait on operands or on a dependent MFMA",
        "interleave independent MFMA chains",
        "mfma",
    ),
    isa.VALU: (
        "vector ALU instructions wait on operands or issue",
        "reduce dependent VALU chains; move work off the critical path",
        "valu",
    ),
    isa.SALU: ("scalar ALU dependency chain", "simplify scalar address arithmetic", "salu"),
}
_DEFAULT = (
    "stall of mixed or uncommon instruction types",
    "inspect the evidence instructions",
    "other",
)


def hideable_range(kind: str, limits: LineThresholds) -> tuple[str, str, float, float]:
    """(root cause, fix, hideable low, hideable high) for a dominant stall type."""
    cause, fix, name = _BY_TYPE.get(kind, _DEFAULT)
    low, high = getattr(limits, name)
    return cause, fix, low, high


def estimated_line(rows: list[dict], share: float, kind: str) -> tuple[float, str]:
    """A line's (share, dominant type) without a stall column: its latency share less the pass
    cycles of its MFMA rows (an MFMA's latency up to its pass time is the matrix pipe working,
    or a co-resident wave's MFMA, not a stall to fix: isa/mfma.py), and the type holding most of
    what is left. Other rows keep their latency: the calibrated ranges were fitted on it."""
    latency = sum(int(ins.get("latency_cycles") or 0) for ins in rows)
    by_type: dict[str, int] = {}
    for ins in rows:
        kept = int(ins.get("latency_cycles") or 0)
        if ins.get("type") == isa.MFMA:
            kept = row_stall(ins)
        by_type[ins.get("type") or isa.OTHER] = by_type.get(ins.get("type") or isa.OTHER, 0) + kept
    kept_total = sum(by_type.values())
    if not latency or not kept_total:
        return 0.0, kind
    return share * kept_total / latency, max(by_type, key=lambda t: (by_type[t], t))


@plan_rule(id="LINE-hotspot", lever="line", calibrated=True, stage="fallback", order=1000,
           thresholds=(LineThresholds,))
def top_line_hotspots(ctx: PlanContext, covered: set[str]) -> list[Finding]:
    """A top user line no rule explained: cause and fix from its dominant stall type.

    One finding per top real line (≥ 3 % of stall) that no other rule has located.

    Trigger: fallback: a top-5 user line ≥ 3 % of stall that no rule located
    Evidence: its top stalled instructions
    Gain: a per-type hideable range (`rules/line_hotspot.py`)
    Fix: by dominant type (e.g. VMEM-wait: issue the loads one iteration ahead)"""
    limits = ctx.thresholds.of(LineThresholds)
    findings = []
    for line in ctx.real_lines(limits.top_lines):
        share = line.get("share") or 0.0
        kind = line.get("dominant_type") or isa.OTHER
        if ctx.ranking_basis[0] != "stall_cycles" and is_no_stall(ctx.hotspots):
            share, kind = estimated_line(ctx.line_instructions(line), share, kind)
        if line["location"] in covered or share < limits.min_share:
            continue
        cause, fix, low, high = barrier_remedy(ctx, kind, hideable_range(kind, limits))
        # pcsampling documents carry stalled samples instead of stall cycles
        # pcsampling: stalled samples; no stall column (legacy): latency
        cost = lambda i: (i.get("stall_cycles") or 0, i.get("pc_stalled") or 0,  # noqa: E731
                          i.get("latency_cycles") or 0 if i.get("stall_cycles") is None else 0)
        stalled = sorted(ctx.line_instructions(line), key=cost, reverse=True)
        rate = line.get("stall_rate")
        findings.append(
            ctx.finding(
                "LINE-hotspot", share, location=line["location"],
                title=f"{kind} stall at {line['location']}",
                estimated_gain=hiding_gain(share, low, high, f"this line's {kind} stall"),
                root_cause=(
                    f"Dominant type {kind}: {cause}"
                    + (f"; stall rate {rate:.0%}." if rate is not None else ".")
                ),
                fix=fix[0].upper() + fix[1:] + ".",
                evidence=[
                    ctx.evidence(
                        ins,
                        f"{ins['pc_stalled']} stalled PC samples" if ins.get("pc_stalled") else "",
                    )
                    for ins in stalled[:5]
                    if any(cost(ins))
                ],
                effort="medium",
            )
        )
    return findings
