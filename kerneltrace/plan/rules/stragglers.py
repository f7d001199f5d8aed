"""Barrier findings from the straggler analysis: "barrier waits here are caused by …" (issue 21.4).

With wave files `structure.barriers.stragglers` (analysis/barrier_stragglers.py) says what the
last-arriving wave lost its time at before each barrier. When the waits of memory, LDS or
scratch reloads explain most of the barrier wait the barrier is a symptom: the finding becomes
`BAR-straggler-waits`, its evidence the instructions the straggler waited at (the fix is there,
not at the barrier). Otherwise `BAR-dominated` stays, and says what the straggler was doing.
Without wave files (or when the stragglers were mostly untraced) nothing changes: the code.json
segments between barriers (analysis/barriers.py) stand for it.
"""

from __future__ import annotations

from kerneltrace.analysis.barrier_stragglers import cause_sentence, memory_share, usable
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules.barrier_gain import barrier_gain
from kerneltrace.thresholds import VerdictThresholds

CAUSE_ROWS = 6  # evidence rows taken from the leading causes
RULE_STRAGGLER_WAITS = "BAR-straggler-waits"


def stragglers_of(ctx: PlanContext) -> dict | None:
    """The usable straggler causes of this dispatch (None without wave files)."""
    stragglers = (ctx.structure.get("barriers") or {}).get("stragglers")
    limit = ctx.thresholds.of(VerdictThresholds).straggler_traced
    return stragglers if usable(stragglers, limit) else None


def straggler_waits_finding(ctx: PlanContext, share: float, barriers: list[dict],
                            stragglers: dict, location: str | None,
                            hideable: tuple[float, float], min_share: float) -> Finding:
    """BAR-straggler-waits: the barrier stall is the last wave's memory/LDS/scratch waits."""
    evidence = cause_evidence(ctx, stragglers, min_share, ("memory", "lds", "spill"))
    evidence += [ctx.evidence(ins, "barrier") for ins in barriers[:2]]
    caused = cause_sentence(stragglers)
    return ctx.finding(
        RULE_STRAGGLER_WAITS, share, location=ctx.user_location(evidence) or location,
        title=(f"Barrier waits ({share:.0%} of stall) are caused by the last wave's waits: "
               f"{caused}"),
        estimated_gain=barrier_gain(
            ctx, hiding_gain(share, *hideable, "the barrier stall (the straggler's waits, hidden "
                             "or issued earlier)"),
            hideable[0], "issuing the straggler's loads earlier or overlapping another wave "
            "group's MFMAs with them"),
        scope="kernel",
        root_cause=(f"Barrier waits here are caused by {caused} (wave files: at each barrier the "
                    f"wave arriving last lost its time there, {memory_share(stragglers):.0%} of "
                    "the barrier wait on memory, LDS or scratch). The barrier only makes the "
                    "other waves wait for it."),
        fix=("Fix the straggler's waits, not the barrier: issue those loads one stage earlier "
             "(prefetch the next tile before the barrier), wait only right before the consumer, "
             "and split LDS reads from their waits. Removing barriers does not shorten the wait."),
        schematic="load(tile k+1); barrier(); wait(tile k); compute(tile k)   # load one stage ahead",
        evidence=evidence, effort="medium",
    )


def cause_evidence(ctx: PlanContext, stragglers: dict | None, min_share: float,
                   families: tuple[str, ...] | None = None) -> list:
    """Evidence: the rows the last-arriving waves lost their time at (leading causes first)."""
    rows: list[int] = []
    for cause in (stragglers or {}).get("causes") or []:
        if cause.get("share", 0) < min_share:
            continue
        if families is None or cause["family"] in families:
            rows += [i for i in cause["rows"] if i in ctx.instructions and i not in rows]
    return [ctx.evidence(ctx.instructions[i], "the last-arriving wave loses its time here")
            for i in rows[:CAUSE_ROWS]]


def straggler_note(stragglers: dict | None) -> str:
    """The sentence BAR-dominated adds with wave files: what the last wave was doing."""
    if stragglers is None:
        return ""
    return f" Barrier waits here are caused by {cause_sentence(stragglers)} (wave files)."
