"""MATH-precise-expansions: IEEE divisions and range-reduced exps where fast-math forms would do."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.issue_mix import row_issue
from kerneltrace.analysis.precise_math import KEPT, find_expansions
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic

VECTOR_BOUND = ("compute-valu", "issue-dependency")


@dataclass(frozen=True)
class PreciseMathThresholds:
    """MATH-precise-expansions: when the precise lowerings are worth replacing."""

    CONCERN = "precise_math"
    min_share: float = heuristic(0.03, "share of the waves' time (latency + idle cycles) the "
                                 "expansions' instructions take from which they are a finding")
    cited: int = heuristic(3, "expansions cited as evidence: the first in program order, then "
                           "the costliest")


@plan_rule(id="MATH-precise-expansions", lever="compute", serves=VECTOR_BOUND, order=157,
           thresholds=(PreciseMathThresholds,))
def precise_math(ctx: PlanContext) -> list[Finding]:
    """Precise fp32 divisions and range-reduced exps, ~10 instructions each where 2 would do.

    Trigger: the instructions of every IEEE division (`v_div_scale` … `v_div_fixup`) and
        range-reduced exp (`v_rndne` … `v_exp_f32` … `v_ldexp`) found by def-use
        (analysis/precise_math.py) take ≥ 3 % of the waves' time
    Evidence: the first expansion in program order and the costliest ones: each one's last
        instruction and its two costliest rows
    Gain: the instructions a fast-math lowering drops (all but 2 per expansion) times their
        latency share of the waves' time (low); when the verdict is vector-bound (the VALU pipe,
        not latency, sets the pace) their share of the VALU issue instead, times the vector work's
        share of the time (high)
    Fix: fast reciprocal and exp (`v_rcp_f32` + multiply, `v_exp_f32` of x·log2 e)"""
    limits = ctx.thresholds.of(PreciseMathThresholds)
    executed = [ins for ins in ctx.program_order if ins.get("hits")]
    found = [e for e in find_expansions(executed) if e.anchor in ctx.instructions]
    total = ctx.waves_time
    if not found or not total:
        return []
    rows = sorted({index for e in found for index in e.rows})
    latency = sum(ctx.instructions[i].get("latency_cycles") or 0 for i in rows)
    share = latency / total
    if share < limits.min_share:
        return []
    removable = max(0.0, 1 - KEPT * len(found) / len(rows))
    low = removable * share
    high = low
    basis = (f"a fast lowering keeps {KEPT} of each expansion's instructions: {removable:.0%} of "
             f"{len(rows)} instructions holding {share:.1%} of the waves' time")
    valu_issue = sum(row_issue(ins) for ins in executed if ins.get("type") == isa.VALU)
    if ctx.verdict.kind in VECTOR_BOUND and valu_issue:
        demand = sum(row_issue(ctx.instructions[i]) for i in rows
                     if ctx.instructions[i].get("type") == isa.VALU) / valu_issue
        vector = ctx.type_share(isa.VALU, isa.SALU)
        high = max(low, removable * demand * vector)
        basis += (f"; the VALU pipe sets the pace ({ctx.verdict.kind}), and they are {demand:.0%} "
                  f"of its issue cycles, so up to {removable:.0%} of that share of the "
                  f"{vector:.0%} vector work")
    divisions = [e for e in found if e.kind == "division"]
    exps = [e for e in found if e.kind == "exp"]
    parts = [f"{len(group)} {word} (~{sum(len(e.rows) for e in group) / len(group):.0f} "
             "instructions each)" for group, word in ((divisions, "IEEE divisions"),
                                                      (exps, "range-reduced exps")) if group]

    def cost(expansion) -> int:
        return sum(ctx.instructions[i].get("latency_cycles") or 0 for i in expansion.rows)

    evidence = []
    # the first expansion in program order (where a reader starts), then the costliest
    costliest = sorted(found, key=lambda e: -cost(e))
    chosen = [found[0], *(e for e in costliest if e is not found[0])][:limits.cited]
    for expansion in sorted(chosen, key=lambda e: e.anchor):
        heavy = [i for i in sorted(expansion.rows, key=lambda i: -(
            ctx.instructions[i].get("latency_cycles") or 0)) if i != expansion.anchor]
        for index in sorted([*heavy[:2], expansion.anchor]):
            evidence.append(ctx.evidence(ctx.instructions[index], f"precise {expansion.kind}"
                                         + (" (its last instruction)" if index == expansion.anchor else "")))
    stall = sum(ctx.instructions[i].get("stall_cycles") or 0 for i in rows)
    return [ctx.finding(
        "MATH-precise-expansions", ctx.share(stall), location=ctx.user_location(evidence),
        title=(f"{' and '.join(parts)}: {share:.0%} of the waves' time; use fast reciprocal and "
               "exp forms"),
        estimated_gain=Gain(round(low, 4), round(high, 4), basis, unit="wave_time"),
        root_cause=(
            f"{' and '.join(parts)} per traced wave: the compiler's IEEE-correct division "
            "(`v_div_scale`, `v_rcp_f32`, a Newton-Raphson refinement, `v_div_fmas`, "
            "`v_div_fixup`) and the full-range `expf` (log2 e split in two parts, `v_rndne`, "
            "`v_exp_f32`, `v_ldexp` rescale, overflow/underflow selects). "
            f"{len(rows)} instructions hold {latency:,} cycles ({share:.1%} of the waves' time); "
            "the transcendental ops among them are quarter rate and their consumers wait."),
        fix=("Where 1–2 ulp is enough (activations such as SiLU/GELU/sigmoid, softmax "
             "normalisation), use the fast forms: a reciprocal and a multiply for the division "
             "(HIP `__frcp_rn`/`__fdividef`, `__builtin_amdgcn_rcpf`; Triton/DSL `fast_dividef`) "
             "and the hardware exp2 of x·log2 e for exp (`__expf`, `__builtin_amdgcn_exp2f`; "
             "Triton `fast_expf`), or build the kernel with fast-math / approximate functions; "
             "for x·sigmoid(x), x·rcp(1 + exp2(−x·log2 e))."),
        schematic=("y = x * __builtin_amdgcn_rcpf(1.0f + __builtin_amdgcn_exp2f(-x * LOG2E))"
                   "   # SiLU: 4 instructions"),
        evidence=evidence,
        effort="low",
    )]
