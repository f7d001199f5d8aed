"""WAIT-staircase: a loop's repeated identical `vmcnt` wait, each pacing one load, as one finding."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.issue_mix import row_stall
from kerneltrace.analysis.wait_staircase import Staircase, loop_staircases
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules.line_hotspot import LineThresholds, hideable_range
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class StaircaseThresholds:
    """WAIT-staircase: how many repeats make a staircase and how much stall ranks it."""

    CONCERN = "staircase"
    min_steps: int = heuristic(3, "repeats of one wait text in a loop body, each followed by a "
                               "vector load, that make a software-pipelined staircase")
    min_share: float = heuristic(0.05, "share of all stall (estimated stall without a stall "
                                 "column) the staircase's waits must hold to be ranked")


def found_staircases(ctx: PlanContext) -> list[Staircase]:
    """The staircases of the dispatch's loops (code.json loops, wave-file headers first)."""
    loops = [(loop.first_index, loop.last_index) for loop in ctx.static_loops]
    return loop_staircases(ctx.program_order, loops,
                           ctx.thresholds.of(StaircaseThresholds).min_steps)


def staircase_waits(ctx: PlanContext) -> frozenset[int]:
    """Rows of every ranked-size staircase's waits (REGION-hotspot leaves them to this rule)."""
    return frozenset(row for stair, _ in _ranked(ctx) for row in stair.waits)


def _ranked(ctx: PlanContext) -> list[tuple[Staircase, float]]:
    _, total = ctx.ranking_basis
    if not total:
        return []
    limit = ctx.thresholds.of(StaircaseThresholds).min_share
    scored = [(stair, sum(row_stall(ctx.instructions[row]) for row in stair.waits) / total)
              for stair in found_staircases(ctx)]
    return [(stair, share) for stair, share in scored if share >= limit]


@plan_rule(id="WAIT-staircase", lever="memory-pipeline", order=175, calibrated=True,
           thresholds=(StaircaseThresholds, LineThresholds))
def wait_staircase(ctx: PlanContext) -> list[Finding]:
    """A loop's repeated identical `vmcnt` wait, each before one load, ranked as one pattern.

    WAIT-staircase: the same `s_waitcnt vmcnt(N)` text repeated in one loop body, each followed by
    a vector load before the next vector-memory wait (a software-pipelined load sequence paced by
    its wait), is one finding whose share is the sum of its waits, not one region per step.

    Trigger: ≥ 3 such waits in one loop body (`kerneltrace/analysis/wait_staircase.py`) holding ≥
        5 % of stall together (estimated stall without a stall column); id
        `WAIT-staircase@rows<a>-<b>` (first and last wait); REGION-hotspot leaves regions whose
        top row is one of these waits to it
    Evidence: every wait of the staircase, most stall first
    Gain: VMEM-wait hideable range of the waits' summed stall (calibrated like the other wait
        findings)
    Fix: more bytes in flight than the wait count allows (one more stage if LDS/registers allow,
        wider loads, one wait per group of loads); reordering the steps keeps the same cap"""
    line_limits = ctx.thresholds.of(LineThresholds)
    by, _ = ctx.ranking_basis
    metric = "stall" if by == "stall_cycles" else "estimated stall"
    findings = []
    for stair, share in _ranked(ctx):
        waits = [ctx.instructions[row] for row in stair.waits]
        first, last = stair.waits[0], stair.waits[-1]
        count = stair.wait.removeprefix("s_waitcnt").strip()
        to_lds = sum(1 for row in stair.loads
                     if (ctx.instructions[row].get("asm") or "").rstrip().endswith(" lds"))
        kinds = sorted({isa.opcode(ctx.instructions[row].get("asm") or "") for row in stair.loads})
        _, _, low, high = hideable_range(isa.VMEM_WAIT, line_limits)
        cited = sorted(waits, key=lambda ins: (-row_stall(ins), ins["index"]))
        findings.append(ctx.finding(
            "WAIT-staircase", share, cap="HIGH", location=f"<rows {first}-{last}>",
            id=f"WAIT-staircase@rows{first}-{last}",
            title=(f"{stair.wait} staircase: {len(waits)} identical waits, each before one load, "
                   f"hold {share:.0%} of {metric} (rows {first}–{last}, loop {stair.loop[0]}–"
                   f"{stair.loop[1]})"),
            estimated_gain=hiding_gain(share, low, high, f"the staircase's {metric}"),
            root_cause=(f"The loop issues its loads ({len(stair.loads)}× {', '.join(kinds)}"
                        + (f", {to_lds} straight to LDS" if to_lds else "")
                        + f") one at a time behind the same `{count}`: each wait lets the load "
                        "issued that many loads earlier retire before the next one goes out, so "
                        "the loop never has more loads in flight than the count allows and "
                        "every step waits on memory. Cut at every wait, the pattern looks like "
                        f"{len(waits)} small regions; together its waits hold {share:.1%} of "
                        f"all {metric}."),
            fix=("Get more bytes in flight than the wait count allows: one more pipeline stage "
                 "(if the LDS and register budget allows it: check what else holds LDS), wider "
                 "loads, or one wait per group of loads instead of one per load. Reordering the "
                 "steps or moving single waits keeps the same cap."),
            evidence=[ctx.evidence(ins, "staircase wait") for ins in cited],
            effort="medium",
        ))
    return findings
