"""Fallback for top user lines no pattern explained: root cause and fix from the dominant stall type."""

from __future__ import annotations

from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain

# (root cause, fix, hideable low, hideable high) per dominant stall type.
_BY_TYPE: dict[str, tuple[str, str, float, float]] = {
    isa.VMEM_LOAD: (
        "vector loads cannot issue: the memory queue is full or nothing independent "
        "is left to overlap",
        "spread loads between compute; prefetch one stage ahead",
        0.3,
        0.7,
    ),
    isa.VMEM_WAIT: (
        "the wave waits for vector-memory loads to return",
        "issue the loads earlier (one iteration ahead) so compute covers their latency",
        0.3,
        0.8,
    ),
    isa.VMEM_STORE: (
        "stores back up the memory queue",
        "batch stores at the end of the block, use wider stores",
        0.2,
        0.5,
    ),
    isa.LDS: (
        "LDS access latency or bank conflicts",
        "pad or swizzle the LDS layout; use wider ds_read_b128",
        0.2,
        0.6,
    ),
    isa.LDS_SMEM_WAIT: (
        "the wave waits for LDS or scalar loads (lgkmcnt)",
        "issue LDS/scalar reads earlier, group them before their consumers",
        0.3,
        0.7,
    ),
    isa.SMEM: (
        "scalar loads stall",
        "hoist scalar loads (kernel arguments, pointers) to the start",
        0.3,
        0.7,
    ),
    isa.BARRIER: (
        "waves wait at the barrier for the slowest wave",
        "balance work between waves; fewer barriers per iteration",
        0.2,
        0.6,
    ),
    isa.MFMA: (
        "MFMAs wait on operands or on a dependent MFMA",
        "interleave independent MFMA chains",
        0.3,
        0.7,
    ),
    isa.VALU: (
        "vector ALU instructions wait on operands or issue",
        "reduce dependent VALU chains; move work off the critical path",
        0.1,
        0.4,
    ),
    isa.SALU: ("scalar ALU dependency chain", "simplify scalar address arithmetic", 0.1, 0.3),
}
_DEFAULT = (
    "stall of mixed or uncommon instruction types",
    "inspect the evidence instructions",
    0.1,
    0.3,
)


def hideable_range(kind: str) -> tuple[str, str, float, float]:
    """(root cause, fix, hideable low, hideable high) for a dominant stall type."""
    return _BY_TYPE.get(kind, _DEFAULT)


def top_line_hotspots(ctx: PlanContext, covered: set[str], limit: int = 5) -> list[Finding]:
    """One finding per top real line (≥ 3 % of stall) that no other rule has located."""
    findings = []
    for line in ctx.real_lines(limit):
        share = line.get("share") or 0.0
        if line["location"] in covered or share < 0.03:
            continue
        kind = line.get("dominant_type") or isa.OTHER
        cause, fix, low, high = _BY_TYPE.get(kind, _DEFAULT)
        # pcsampling documents carry stalled samples instead of stall cycles
        cost = lambda i: (i.get("stall_cycles") or 0, i.get("pc_stalled") or 0)  # noqa: E731
        stalled = sorted(ctx.line_instructions(line), key=cost, reverse=True)
        rate = line.get("stall_rate")
        findings.append(
            Finding.for_share(
                "LINE-hotspot", line["location"], share,
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
