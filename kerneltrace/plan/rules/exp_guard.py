"""EXP-denormal-guard: `v_exp_f32` wrapped in the compiler's denormal range guard (removable work)."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class ExpGuardThresholds:
    """EXP-denormal-guard: when the guard code around `v_exp_f32` is worth removing."""

    CONCERN = "exp_guard"
    min_share: float = heuristic(0.02, "share of the waves' time (latency + idle cycles) the guard "
                                 "instructions take from which they are a finding")
    removable: tuple[float, float] = heuristic((0.3, 0.8), "share of the guard instructions' "
                                               "cycles the waves get back when they go: the "
                                               "issue cycles leave, a later wait may absorb part")


@plan_rule(id="EXP-denormal-guard", lever="compute", serves=("compute-valu", "issue-dependency"),
           order=158, thresholds=(ExpGuardThresholds,))
def exp_denormal_guard(ctx: PlanContext) -> list[Finding]:
    """`v_exp_f32` wrapped in a denormal range guard: compare, selects, add and rescale per exp.

    The exp2 lowering that keeps denormal results adds, per `v_exp_f32`, a `v_cmp` of the input
    against -126, a `v_cndmask` bias and `v_add_f32` before the exp, a `v_cndmask` scale and
    `v_ldexp_f32`/`v_mul_f32` after it, and `s_nop` wait states between the compare and its
    first select. Found by register def-use in the instruction table alone.

    Trigger: the guard instructions (every guarded exp's compare, selects, add, rescale and the
        `s_nop`s after the compare) take ≥ 2 % of the waves' time (latency + idle cycles)
    Evidence: the first guarded exp and the costliest ones, with their compare and rescale rows
    Gain: 30–80 % of the guard instructions' share of the waves' time
    Fix: let exp results below 2^-126 flush to zero: use the hardware exp2 directly"""
    limits = ctx.thresholds.of(ExpGuardThresholds)
    guards = [guard for guard in ctx.exp_guards
              if (ctx.instructions[guard.exp_index].get("hits") or 0) > 0]
    total = ctx.waves_time
    if not guards or not total:
        return []
    rows = sorted({index for guard in guards for index in guard.guard_indices})
    latency = sum(ctx.instructions[index].get("latency_cycles") or 0 for index in rows)
    stall = sum(ctx.instructions[index].get("stall_cycles") or 0 for index in rows)
    share = latency / total
    if share < limits.min_share:
        return []

    def guard_cost(guard) -> int:
        return sum(ctx.instructions[i].get("latency_cycles") or 0 for i in guard.guard_indices)

    # the first guarded exp in program order (where a reader starts), then the costliest
    first = min(guards, key=lambda guard: guard.exp_index)
    costly = [first, *(g for g in sorted(guards, key=lambda guard: -guard_cost(guard))
                       if g is not first)][:3]
    evidence = []
    for guard in sorted(costly, key=lambda guard: guard.exp_index):
        evidence.append(ctx.evidence(ctx.instructions[guard.compare_index],
                                     "range test of the exp's input (the guard starts here)"))
        evidence.append(ctx.evidence(ctx.instructions[guard.exp_index], "the guarded exp"))
        evidence.append(ctx.evidence(ctx.instructions[guard.guard_indices[-1]],
                                     "rescale of the exp's result"))
    low_part, high_part = limits.removable
    gain = Gain(
        round(share * low_part, 4), round(share * high_part, 4),
        f"{low_part:.0%}–{high_part:.0%} of the guard instructions' cycles ({len(rows)} "
        f"instructions, {share:.1%} of the waves' time) come back when they go",
        unit="wave_time",
    )
    per_exp = len(rows) / len(guards)
    return [ctx.finding(
        "EXP-denormal-guard", ctx.share(stall), location=ctx.user_location(evidence),
        title=(f"{len(guards)} `v_exp_f32` carry a denormal range guard (~{per_exp:.0f} extra "
               f"instructions each): {share:.0%} of the waves' time"),
        estimated_gain=gain,
        root_cause=(
            f"{len(guards)} exps are each wrapped in a compare against -126, a bias select and "
            "add before the exp and a scale select and `v_ldexp`/`v_mul` after it, plus `s_nop` "
            f"wait states between the compare and its select: {len(rows)} instructions holding "
            f"{latency:,} cycles ({share:.1%} of the waves' time, {ctx.share(stall):.1%} of "
            "stall). The compiler emits this when exp results below 2^-126 must stay denormal "
            "instead of flushing to zero."
        ),
        fix=(
            "Let denormal exp results flush to zero and call the hardware exp2 directly: HIP "
            "`__builtin_amdgcn_exp2f(x)` (or build with `-fgpu-flush-denormals-to-zero` / "
            "approximate functions on the exp), in an MLIR/Triton-style DSL lower exp2 to the "
            "`llvm.amdgcn.exp2` intrinsic (what Triton's AMD backend emits with ftz on); fold "
            "log2(e) and the softmax scale into one multiply or FMA before it. Safe where the "
            "exp's input is x − max ≤ 0 summed with a term of 1 (softmax, attention): results "
            "below 2^-126 do not change the sum."
        ),
        schematic=("x = (s - m) * (scale * log2e)   # one FMA\n"
                   "p = __builtin_amdgcn_exp2f(x)   # v_exp_f32 only, no guard"),
        evidence=evidence,
        effort="low",
    )]
