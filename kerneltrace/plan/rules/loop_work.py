"""VALU-loop-issue: a hot loop whose latency is mostly its own VALU/SALU work, not waits."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.issue_mix import (
    dependent_issue,
    latency_mix,
    loop_rows,
    opcode_counts,
    producer,
    row_stall,
)
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, scoped_title
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import hot_loop
from kerneltrace.thresholds import VerdictThresholds, heuristic


@dataclass(frozen=True)
class LoopWorkThresholds:
    """VALU-loop-issue: what counts as a dependent issue and how much vector work a rewrite removes."""

    CONCERN = "loop_work"
    dependent_per_hit: float = heuristic(16.0, "stall per issue (cycles) from which a VALU row "
                                         "waits on its operand (a dependent issue): a VALU pass "
                                         "is 4 cycles, an MFMA result needs 8–20 cycles of "
                                         "spacing (isa/mfma.py)")
    vector_removable: tuple[float, float] = heuristic((0.1, 0.25), "share of a loop's VALU/SALU "
                                                      "latency that fewer, packed or fused "
                                                      "instructions and independent work "
                                                      "between producer and consumer remove")
    cited_rows: int = heuristic(6, "dependent-issue rows cited as evidence, most stall first")


def _chain(rows: list[dict], ins: dict) -> str:
    """`row N (op)`, or `row N (op) ← row M (MFMA)` when the producer reads an MFMA result."""
    first = producer(rows, ins)
    if first is None:
        return "an operand produced earlier"
    words = f"#{first['index']} `{isa.opcode(first.get('asm') or '')}`"
    second = producer(rows, first) if first.get("type") == isa.VALU else None
    if second is not None and second.get("type") == isa.MFMA:
        words += f" ← #{second['index']} `{isa.opcode(second.get('asm') or '')}`"
    return words


@plan_rule(id="VALU-loop-issue", lever="issue", serves=("issue-dependency",), order=205,
           thresholds=(VerdictThresholds, LoopWorkThresholds))
def loop_vector_work(ctx: PlanContext) -> list[Finding]:
    """The hot loop's time is its own VALU/SALU instructions (issue + dependent-issue stall).

    VALU-loop-issue: the hot loop's latency (issue + stall per row) is mostly VALU/SALU work and
    more than its waits; the verdict's own finding when it is issue-dependency on vector work.

    Trigger: a hot loop holding most of the waves' time (wave files or code.json) whose VALU/SALU
        rows hold ≥ 50 % of its latency and more than its waits (VMEM/LDS/SMEM waits, barriers);
        without a stall column the issue time is estimated (4 cycles per hit, an MFMA's pass
        cycles). Loop scope (an umbrella over the line findings inside it); id
        `VALU-loop-issue@rows<a>-<b>`
    Evidence: the loop's VALU rows that wait ≥ 16 cycles per issue on an operand (dependent
        issue: a consumer right after the MFMA or VALU producing its input), most stall first,
        each with its producer; then the loop's header and back edge
    Gain: 10–25 % of the loop's VALU/SALU share of the waves' time (a share of wave time)
    Fix: fewer VALU instructions per iteration (fold scales into MFMA scale operands, packed
        math, fewer relu/add passes) and independent work between each producer and its consumer"""
    verdict_limits = ctx.thresholds.of(VerdictThresholds)
    limits = ctx.thresholds.of(LoopWorkThresholds)
    loop = hot_loop(ctx.hotspots, verdict_limits.min_loop_share)
    if loop is None:
        # straight-line code: the umbrella would be the whole kernel; the verdict names the
        # vector work and the line findings (precise math, exp guards, hot lines) point at it
        return []
    rows = loop_rows(ctx.program_order, loop)
    mix = latency_mix(rows)
    vector, waits = mix["vector_work_share"], mix["wait_share"]
    if vector < verdict_limits.loop_work_share or vector <= waits:
        return []
    _, total = ctx.ranking_basis
    vector_rows = [ins for ins in rows if ins.get("type") in (isa.VALU, isa.SALU)]
    share = sum(row_stall(ins) for ins in vector_rows) / total if total else 0.0
    loop_share = (loop.get("split") or {}).get("loop_share") or 0.0
    dependent = dependent_issue(rows, limits.dependent_per_hit)[:limits.cited_rows]
    counts = opcode_counts(rows, isa.VALU)
    top_ops = ", ".join(f"{n} `{op}`" for op, n in counts.most_common(4))
    valu = mix["by_type"].get(isa.VALU) or {}
    first, last = loop["first_index"], loop["last_index"]
    waits_text = "; ".join(
        f"#{ins['index']} `{isa.opcode(ins.get('asm') or '')}` waits "
        f"{row_stall(ins) / ins['hits']:.0f} cycles per issue on {_chain(rows, ins)}"
        for ins in dependent)
    low, high = limits.vector_removable
    base = loop_share * vector
    cited = dependent or sorted(vector_rows, key=lambda ins: -int(ins.get("latency_cycles") or 0))[:3]
    return [ctx.finding(
        "VALU-loop-issue", share, location=f"<rows {first}-{last}>", scope="loop",
        id=f"VALU-loop-issue@rows{first}-{last}",
        title=scoped_title(f"Vector work holds {vector:.0%} of the hot loop's latency (rows "
                           f"{first}–{last}), waits {waits:.0%}: cut VALU work and its "
                           "dependent issues", "loop", "VALU/SALU stall inside the loop"),
        estimated_gain=Gain(round(base * low, 4), round(base * high, 4),
                            f"the loop holds {loop_share:.0%} of the waves' time and VALU/SALU "
                            f"rows {vector:.0%} of its latency; fewer instructions and fewer "
                            f"dependent issues remove {low:.0%}–{high:.0%} of that; overlaps the "
                            "line findings inside the loop", unit="wave_time"),
        root_cause=(f"Latency is issue plus stall: in this loop VALU rows issue for "
                    f"{valu.get('issue', 0):,} and wait on operands for {valu.get('stall', 0):,} "
                    f"of its {mix['latency_cycles']:,} cycles ({valu.get('rows', 0)} VALU vs "
                    f"{(mix['by_type'].get(isa.MFMA) or {}).get('rows', 0)} MFMA rows per "
                    f"iteration: {top_ops}), against {waits:.0%} waits. The loop is paced by "
                    "its own vector instructions; hiding memory latency leaves that time."
                    + (f" Dependent issues: {waits_text}." if waits_text else "")),
        fix=("Cut the VALU work per iteration: fold per-element scales into the MFMA scale "
             "operands or apply them once after the reduction, use packed math (`v_pk_*`) where "
             "it is still scalar, fuse relu/add passes; put independent instructions between "
             "each producer (MFMA result, relu) and the instruction reading it, or split a "
             "stalled packed op into two independent halves."),
        evidence=[*(ctx.evidence(ins, "dependent issue" if ins in dependent else "vector work")
                    for ins in cited),
                  # the change is to the whole iteration: its bounds
                  *(ctx.evidence(ctx.instructions[index], note) for index, note in (
                      (first, "hot loop header: the iteration whose vector work to cut"),
                      (last, "hot loop back edge")) if index in ctx.instructions)],
        effort="medium",
    )]
