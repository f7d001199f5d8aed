"""Rule S1: registers spill to scratch — counted, ranked, costed by their waits; first in a hot loop."""

from __future__ import annotations

from kerneltrace.analysis.spills import Spills, find_spills
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, priority_for_share, short_location
from kerneltrace.plan.rules.waves_refs import wave_loops

RULE = "S1-register-spills"
RULE_HOT = "S1-hot-loop-register-spills"  # the same finding when a spill sits in the hot loop
# Removing the spill removes its scratch traffic and the reload waits; what remains is the
# latency the reloaded values' other producers still expose (hypothesis — verify by re-timing).
REMOVABLE = (0.5, 1.0)


def _hot_loop_rows(ctx: PlanContext) -> tuple[int, int] | None:
    """Rows of the hottest loop: the one the traced waves spent most time in, else the static
    loop holding the most stall."""
    observed = wave_loops(ctx)
    if observed and isinstance(observed[0].get("first_index"), int):
        return observed[0]["first_index"], observed[0]["last_index"]
    best, best_stall = None, -1
    for loop in ctx.static_loops:
        stall = sum(ins.get("stall_cycles") or 0 for index, ins in ctx.instructions.items()
                    if loop.contains(index))
        if stall > best_stall:
            best, best_stall = (loop.first_index, loop.last_index), stall
    return best


def spills_of(ctx: PlanContext) -> Spills | None:
    hot = _hot_loop_rows(ctx)
    return find_spills(ctx.hotspots, lambda index: ctx.loop_of(index) is not None,
                       lambda index: hot is not None and hot[0] <= index <= hot[1])


def register_spills(ctx: PlanContext) -> list[Finding]:
    """S1: scratch loads/stores; in the hot loop HIGH (and first, see ``spills_first``)."""
    spills = spills_of(ctx)
    if spills is None:
        return []
    share = ctx.share(spills.cost)
    where = ("inside the hot loop" if spills.in_hot_loop
             else "inside a loop" if any(a.in_loop for a in spills.accesses) else "outside loops")
    top = spills.accesses[0]
    location = next((ctx.evidence(ctx.instructions[a.index]).location for a in spills.accesses
                     if a.index in ctx.instructions), None)
    scratch = (f"; the kernel-trace row reserves {spills.scratch_bytes} bytes of scratch per lane"
               if spills.scratch_bytes else "")
    waits = (f" and {spills.wait_cycles:,} cycles of `s_waitcnt` at row(s) "
             f"{', '.join(str(w) for w in spills.waits)} attributed to the reloads"
             if spills.wait_cycles else "")
    root_cause = (
        f"The kernel spills registers {where}: {spills.stores} scratch store(s) and "
        f"{spills.loads} scratch load(s), executed {spills.executed:,} times over the traced waves; "
        f"they cost {spills.stall_cycles:,} stall cycles on the scratch instructions{waits} "
        f"({share:.1%} of all stall){scratch}. Scratch goes through the vector-memory path "
        f"(vmcnt), so every reload is a memory round trip the loop waits for; the costliest is "
        f"row {top.index} `{top.asm}` ({top.cost:,} cycles)."
    )
    fix = (
        "Cut register pressure until the spills disappear: fewer live accumulators or a smaller "
        "tile, fewer pipeline stages / prefetched buffers, release of values dead after the loop; "
        "or allow more registers per wave (launch bounds / `waves_per_eu`, `amdgpu-num-vgpr`) if "
        "the lower occupancy costs less than the spills. Check the compiler's resource report "
        "(`-Rpass-analysis=kernel-resource-usage`, `.vgpr_spill_count` / `.sgpr_spill_count`) "
        "reaches 0, then re-time."
    )
    gain = Gain(
        round(share * REMOVABLE[0], 4), round(share * REMOVABLE[1], 4),
        f"removing {REMOVABLE[0]:.0%}–{REMOVABLE[1]:.0%} of the spill cost (scratch stall + "
        f"reload waits = {share:.1%} of all stall cycles); wall-time gain is at most this",
    )
    priority = "HIGH" if spills.in_hot_loop else priority_for_share(share)
    title = (f"Registers spill to scratch {where} ({spills.loads} reload(s), "
             f"{spills.stores} store(s)) at {short_location(location)}")
    evidence = [ctx.evidence(ctx.instructions[a.index],
                             f"scratch {a.kind}, {a.hits:,} executions"
                             + (f", {a.wait_cycles:,} wait cycles attributed" if a.wait_cycles
                                else ""))
                for a in spills.accesses[:6] if a.index in ctx.instructions]
    evidence += [ctx.evidence(ctx.instructions[w], "s_waitcnt charged to a reload")
                 for w in spills.waits[:3] if w in ctx.instructions]
    rule = RULE_HOT if spills.in_hot_loop else RULE
    return [Finding(id=f"{rule}@{short_location(location)}" if location else rule, rule=rule,
                    title=title, priority=priority, stall_share=round(share, 4),
                    estimated_gain=gain, root_cause=root_cause, fix=fix, evidence=evidence,
                    location=location, effort="medium",
                    scope="line")]


def spills_first(findings: list[Finding]) -> list[Finding]:
    """A spill in the hot loop is the first finding: it distorts every other one (the scratch
    round trips show up as memory waits elsewhere) and its fix changes the register budget the
    other fixes work within."""
    first = [f for f in findings if f.rule == RULE_HOT and f.ranked]
    for finding in first:
        finding.priority = "HIGH"
    return first + [f for f in findings if f not in first]
