"""WATERFALL-nonuniform-operand: loads wrapped in waterfall loops because their descriptor is not provably uniform."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.waterfall import WaterfallLoop, waterfall_loops
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import cost_cycles
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class WaterfallThresholds:
    """WATERFALL-nonuniform-operand: when the waterfall loops are worth a finding."""

    CONCERN = "waterfall"
    min_share: float = heuristic(0.02, "share of the waves' time the waterfall loops' overhead "
                                 "rows take from which they are a finding")
    uniform_passes: float = heuristic(1.5, "passes per entry up to which the operand was uniform "
                                      "at run time (the loop is pure overhead)")
    removable: tuple[float, float] = heuristic(
        (0.6, 0.9), "share of the overhead rows' time an operand kept in SGPRs removes (one "
        "`v_readfirstlane` per operand may stay, outside the loop)")
    varying_removable: tuple[float, float] = heuristic(
        (0.2, 0.5), "the same when the operand varies across lanes at run time (the passes are "
        "real work: grouping lanes by operand, or one operand per wave, removes part)")


@plan_rule(id="WATERFALL-nonuniform-operand", lever="issue", order=127,
           serves=("issue-dependency",), thresholds=(WaterfallThresholds,))
def waterfall_nonuniform_operand(ctx: PlanContext) -> list[Finding]:
    """Memory instructions wrapped in waterfall loops (a scalar operand the compiler could not prove uniform).

    Trigger: loops ending in `s_cbranch_execnz` that `v_readfirstlane` an operand, compare it with
        every lane and narrow EXEC (`s_and_saveexec`) around a buffer/global/scalar memory
        instruction (code.json control flow), their rows but the guarded instructions ≥ 2 % of
        the waves' time
    Evidence: the guarded instruction and back edge of the first loop and of the costliest two
    Gain: 60–90 % of the overhead rows' time when each loop ran one pass per entry (the operand
        was uniform), 20–50 % when it ran more (hypothesis)
    Fix: build the buffer resource from kernel arguments or scalar values (SGPRs), or make it
        uniform once with `__builtin_amdgcn_readfirstlane` outside the loop, so the compiler
        emits the plain instruction"""
    limits = ctx.thresholds.of(WaterfallThresholds)
    program = [ins for ins in ctx.program_order if isinstance(ins.get("index"), int)]
    loops = (ctx.structure.get("control_flow") or {}).get("loops") or []
    found = waterfall_loops(program, loops)
    total = ctx.waves_time
    if not found or not total:
        return []
    by_index = {ins["index"]: ins for ins in program}

    def overhead(loop: WaterfallLoop) -> float:
        return sum(cost_cycles(by_index[i]) for i in loop.overhead if i in by_index)

    share = sum(overhead(loop) for loop in found) / total
    if share < limits.min_share:
        return []
    uniform = all(loop.passes_per_entry <= limits.uniform_passes for loop in found)
    parts = limits.removable if uniform else limits.varying_removable
    chosen = [found[0], *sorted(found[1:], key=lambda loop: -overhead(loop))[:2]]
    evidence = []
    for loop in sorted(chosen, key=lambda loop: loop.first_index):
        evidence.extend(ctx.evidence(by_index[i], "instruction guarded by the waterfall loop")
                        for i in loop.guarded[:1] if i in by_index)
        if loop.last_index in by_index:
            evidence.append(ctx.evidence(by_index[loop.last_index], "waterfall back edge "
                                         f"({loop.passes_per_entry:g} passes per entry)"))
    guarded = sum(len(loop.guarded) for loop in found)
    reads = sum(loop.uniform_reads for loop in found)
    stall = sum(by_index[i].get("stall_cycles") or 0 for loop in found for i in loop.overhead
                if i in by_index)
    passes = ("one pass each: the operand was uniform at run time, so all of it is overhead"
              if uniform else "more than one pass per entry: the operand does vary across lanes")
    return [ctx.finding(
        "WATERFALL-nonuniform-operand", ctx.share(stall), location=ctx.user_location(evidence),
        title=(f"{len(found)} waterfall loops around {guarded} memory instruction(s): "
               f"{share:.0%} of the waves' time in EXEC juggling and `v_readfirstlane` ({passes})"),
        estimated_gain=Gain.of_wave_time(share, parts, "the waterfall loops' rows but the "
                                         "guarded instructions are", "a scalar operand"),
        root_cause=(f"The compiler could not prove an operand the instruction takes in SGPRs (a "
                    f"buffer resource, base or offset held in VGPRs) the same in every lane, so "
                    f"it wraps each use in a waterfall: save EXEC, `v_readfirstlane` the operand "
                    f"({reads} reads in all), compare it with every lane, narrow EXEC, run the "
                    f"instruction, repeat while lanes remain, restore EXEC; {passes}."),
        fix=("Keep the operand scalar: build the buffer resource from kernel arguments or SGPR "
             "values (not from a per-lane pointer), or make it uniform once, outside the loop, with "
             "`__builtin_amdgcn_readfirstlane` (HIP) so the compiler emits the plain instruction; "
             "a per-lane address belongs in the instruction's VGPR offset, not in the resource."),
        evidence=evidence, scope="loop", effort="low",
    )]
