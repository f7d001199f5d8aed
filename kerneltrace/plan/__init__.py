"""The optimization plan: evidence-based rules over stage documents, and the summary document."""

from __future__ import annotations

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Evidence, Finding, Gain, sort_findings

__all__ = ["Evidence", "Finding", "Gain", "PlanContext", "sort_findings", "run_rules"]


def run_rules(ctx: PlanContext) -> list[Finding]:
    """Every registered rule over one dispatch, de-duplicated ids, in priority order."""
    from kerneltrace.plan.rules import run_all

    return run_all(ctx)
