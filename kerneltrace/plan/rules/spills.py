"""Rules S1/S2: registers spilled to scratch (first in a hot loop) and private arrays in scratch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kerneltrace.analysis.spills import Spills, find_spills, private_array_kind, spill_kind
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, finding_id
from kerneltrace.plan.rules.waves_refs import wave_loops
from kerneltrace.plan.spec import FindingKind, plan_rule
from kerneltrace.sourceloc import short_location
from kerneltrace.thresholds import heuristic

RULE = "S1-register-spills"
RULE_HOT = "S1-hot-loop-register-spills"  # the same finding when a spill sits in the hot loop
RULE_ARRAY = "S2-private-array-in-scratch"
FILL_LOOP_TYPES = frozenset({isa.VMEM_STORE, isa.VALU, isa.SALU, isa.BRANCH, isa.NOP})


@dataclass(frozen=True)
class SpillThresholds:
    """S1 (register spills) and S2 (private arrays in scratch)."""

    CONCERN = "spills"
    # Removing the spill removes its scratch traffic and the reload waits; what remains is the
    # latency the reloaded values' other producers still expose.
    removable: tuple[float, float] = heuristic((0.5, 1.0), "share of the spill cost (scratch "
                                               "stall + reload waits) removing the spill removes")
    # A short loop that only stores to a private array and counts (no loads, no matrix work)
    # exists to fill it: a memset / initialisation loop.
    fill_loop_max_instructions: int = heuristic(12, "instructions of a loop that only fills a "
                                                "private array")
    array_removable: tuple[float, float] = heuristic((0.5, 1.0), "share of the scratch (or fill "
                                                     "loop) cost keeping the array in registers "
                                                     "removes")
    in_loop_hits: float = heuristic(0.5, "share of the hot loop header's hits from which a "
                                    "scratch access runs with the iterations (one run 56 times in "
                                    "a loop headed 7,168 times sits on a path they skip)")


# An access belongs to the hot loop only when it runs with the loop's iterations: at least this
# share of the header's hits (a scratch access run 56 times in a loop headed 7,168 times sits on a
# path the iterations skip).


def _hot_loop(ctx: PlanContext) -> tuple[int, int, int] | None:
    """(first row, last row, header hits) of the hottest loop: the one the traced waves spent
    most time in, else the code.json hot loop (`structure.control_flow`)."""
    observed = wave_loops(ctx)
    hot = (ctx.structure.get("control_flow") or {}).get("hot_loop")
    seen = observed[0] if observed and isinstance(observed[0].get("first_index"), int) else None
    seen_share = ((seen or {}).get("split") or {}).get("loop_share") or 0.0
    if seen is not None and (hot is None or seen_share >= hot.get("time_share", 0.0) / 2):
        first = seen["first_index"]
        return first, seen["last_index"], (ctx.instructions.get(first) or {}).get("hits") or 0
    if hot:
        return hot["first_index"], hot["last_index"], hot.get("header_hits") or 0
    return None


def spills_of(ctx: PlanContext, classify: Callable[[str], str | None] = spill_kind) -> Spills | None:
    """Scratch accesses costed by stall, or by latency when the capture has no stall (legacy):
    spills by default, private-array accesses with ``classify=private_array_kind``."""
    hot: list[tuple[int, int] | None] = []  # the hot loop's rows, found at the first access

    def in_hot_loop(index: int) -> bool:
        if not hot:
            hot.append(_hot_loop(ctx))
        loop = hot[0]
        hits = (ctx.instructions.get(index) or {}).get("hits") or 0
        return (loop is not None and loop[0] <= index <= loop[1]
                and hits >= ctx.thresholds.of(SpillThresholds).in_loop_hits * loop[2])

    return find_spills(ctx.hotspots, lambda index: ctx.loop_of(index) is not None, in_hot_loop,
                       ctx.ranking_basis[0], classify, ctx.structure)


def _first_location(ctx: PlanContext, spills: Spills) -> str | None:
    """Source location of the costliest access the document has an instruction for."""
    return next((ctx.evidence(ctx.instructions[a.index]).location for a in spills.accesses
                 if a.index in ctx.instructions), None)


def _share_of(ctx: PlanContext, spills: Spills) -> tuple[float, str]:
    """The accesses' cost as a share of all stall (or all latency without stall), and its name."""
    _, total = ctx.ranking_basis
    metric = "stall" if spills.basis == "stall_cycles" else "latency"
    return (spills.cost / total if total else 0.0), metric


@plan_rule(id=RULE, lever="register-pressure", optional=("waves",), order=10,
           thresholds=(SpillThresholds,),
           variants=(FindingKind("S1-hot-loop-register-spills", "register-pressure"),))
def register_spills(ctx: PlanContext) -> list[Finding]:
    """Registers spilled to scratch (first in the plan when in the hot loop).

    S1: scratch loads/stores; in the hot loop HIGH (and first, see ``spills_first``).

    Trigger: any spill access (`kerneltrace/analysis/spills.py`): `scratch_load_*` /
        `scratch_store_*` at a constant offset (no VGPR address: the compiler's spill slots;
        gfx94x/gfx950), or MUBUF `buffer_load/store_* vN, off, s[0:3], …` on the private segment
        buffer (the gfx90a spill form, a likely spill). Counted (loads, stores, executions) and
        costed as their own stall (latency when the capture has no stall column; gain unit
        `latency_cycles`) plus the `s_waitcnt` cycles the wave analysis attributes to the reloads
        (`waves.waitcnt`, youngest drained producer). Inside the hot loop (`waves.loops[0]`, else
        the static loop with the most stall) it is `S1-hot-loop-register-spills`, HIGH and the
        **first finding** of the plan whatever its share: the scratch round trips distort every
        other finding and its fix changes the register budget the others work within; elsewhere it
        is ranked by its cost share
    Evidence: the scratch instructions by cost (executions, attributed wait cycles) and the waits
        charged to the reloads; scratch bytes per lane from the kernel-trace row
    Gain: 50–100 % of the spill cost (scratch stall + reload waits)
    Fix: cut register pressure until the spill count is 0 (fewer live values, smaller tile, fewer
        stages), or allow more registers per wave"""
    removable = ctx.thresholds.of(SpillThresholds).removable
    spills = spills_of(ctx)
    if spills is None:
        return []
    share, metric = _share_of(ctx, spills)
    where = ("inside the hot loop" if spills.in_hot_loop
             else "inside a loop" if any(a.in_loop for a in spills.accesses) else "outside loops")
    top = spills.accesses[0]
    location = _first_location(ctx, spills)
    scratch = (f"; the kernel-trace row reserves {spills.scratch_bytes} bytes of scratch per lane"
               if spills.scratch_bytes else "")
    waits = (f" and {spills.wait_cycles:,} cycles of `s_waitcnt` at row(s) "
             f"{', '.join(str(w) for w in spills.waits)} attributed to the reloads"
             if spills.wait_cycles else "")
    root_cause = (
        f"The kernel spills registers {where}: {spills.stores} scratch store(s) and "
        f"{spills.loads} scratch load(s), executed {spills.executed:,} times over the traced waves; "
        f"they cost {spills.own_cycles:,} {metric} cycles on the scratch instructions{waits} "
        f"({share:.1%} of all {metric}){scratch}. Scratch goes through the vector-memory path "
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
        round(share * removable[0], 4), round(share * removable[1], 4),
        f"removing {removable[0]:.0%}–{removable[1]:.0%} of the spill cost (scratch {metric} + "
        f"reload waits = {share:.1%} of all {metric} cycles); wall-time gain is at most this",
        unit=f"{metric}_cycles",
    )
    priority = "HIGH" if spills.in_hot_loop else None  # None: from the share
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
    return [ctx.finding(rule, share, id=finding_id(rule, location or None), cap="HIGH",
                        title=title, priority=priority, estimated_gain=gain,
                        root_cause=root_cause, fix=fix, evidence=evidence, location=location,
                        effort="medium", scope="line")]


def _fill_loop(ctx: PlanContext, spills: Spills) -> dict | None:
    """The short observed loop that stores into the array (a fill loop), if the waves ran one."""
    most = ctx.thresholds.of(SpillThresholds).fill_loop_max_instructions
    stores = {a.index for a in spills.accesses if a.kind == "store"}
    for loop in wave_loops(ctx):
        first, last = loop.get("first_index"), loop.get("last_index")
        if not (isinstance(first, int) and isinstance(last, int)
                and last - first + 1 <= most
                and any(first <= index <= last for index in stores)):
            continue
        body = [ctx.instructions[i] for i in range(first, last + 1) if i in ctx.instructions]
        if body and all(ins.get("type") in FILL_LOOP_TYPES for ins in body):
            return loop
    return None


@plan_rule(id=RULE_ARRAY, lever="register-pressure", optional=("waves",), order=20,
           thresholds=(SpillThresholds,))
def private_array_scratch(ctx: PlanContext) -> list[Finding]:
    """A per-lane array indexed at run time lives in scratch.

    S2: a per-lane array indexed at run time lives in scratch (VGPR-addressed scratch access); when
    a short loop fills it, that loop's share of the waves' time is the cost.

    Trigger: a scratch access through a VGPR address (`private_array_kind`): a per-lane array
        indexed at run time lives in scratch (not a spill). Costed like S1 (own stall, or latency in
        captures without stall, plus attributed reload waits); when a short observed loop (≤ 12
        instructions, only stores/VALU/SALU/branches) stores into it, that fill loop's share of the
        waves' time is the cost
    Evidence: the scratch accesses
    Gain: 50–100 % of the cost, unit `wave_time` for a fill loop, else stall (latency) cycles
    Fix: index the array with compile-time constants (or keep it in LDS); initialise it with wide
        stores or not at all"""
    arrays = spills_of(ctx, classify=private_array_kind)
    if arrays is None:
        return []
    share, metric = _share_of(ctx, arrays)
    loop = _fill_loop(ctx, arrays)
    loop_share = ((loop.get("split") or {}).get("loop_share") if loop else None) or 0.0
    top = arrays.accesses[0]
    location = _first_location(ctx, arrays)
    filled = (f" A {loop['last_index'] - loop['first_index'] + 1}-instruction loop (rows "
              f"{loop['first_index']}–{loop['last_index']}, {loop.get('iterations') or 0:,} "
              f"iterations, {loop.get('cycles_per_iteration') or 0:,.0f} cycles each) fills it "
              f"and takes {loop_share:.0%} of the traced waves' time." if loop else "")
    root_cause = (
        f"{arrays.stores} scratch store(s) and {arrays.loads} scratch load(s) go through a VGPR "
        f"address: a per-lane array indexed at run time, which the compiler cannot keep in "
        f"registers, so it lives in scratch memory (executed {arrays.executed:,} times, "
        f"{arrays.cost:,} {metric} cycles = {share:.1%} of all {metric}; costliest row "
        f"{top.index} `{top.asm}`).{filled}"
    )
    fix = ("Index the array with compile-time constants (unrolled loops) so it stays in "
           "registers, keep it in LDS if lanes share it, and initialise it with wide stores or not "
           "at all (a byte-by-byte fill loop is the slowest way to zero memory); then check the "
           "compiler's `private_segment_size` / scratch report drops.")
    low, high = ctx.thresholds.of(SpillThresholds).array_removable
    if loop_share > share:
        gain = Gain(round(loop_share * low, 4), round(loop_share * high, 4),
                    f"removing {low:.0%}–{high:.0%} of the fill loop's {loop_share:.0%} of the "
                    "waves' time (hypothesis — verify by re-timing)", unit="wave_time")
    else:
        gain = Gain(round(share * low, 4), round(share * high, 4),
                    f"removing {low:.0%}–{high:.0%} of the scratch cost ({share:.1%} of all "
                    f"{metric} cycles)", unit=f"{metric}_cycles")
    title = (f"A private array lives in scratch ({arrays.stores} store(s), {arrays.loads} "
             f"load(s) through a VGPR address)"
             + (f"; its fill loop takes {loop_share:.0%} of the waves' time" if loop else "")
             + f" at {short_location(location)}")
    evidence = [ctx.evidence(ctx.instructions[a.index],
                             f"scratch {a.kind} via VGPR address, {a.hits:,} executions")
                for a in arrays.accesses[:6] if a.index in ctx.instructions]
    return [ctx.finding(RULE_ARRAY, max(share, loop_share), id=finding_id(RULE_ARRAY,
                                                                          location or None),
                        cap="HIGH", title=title, estimated_gain=gain, root_cause=root_cause,
                        fix=fix, evidence=evidence, location=location, effort="medium",
                        scope="line")]


def spills_first(findings: list[Finding]) -> list[Finding]:
    """A spill in the hot loop whose own kernel-time gain makes it HIGH is the first finding: it
    distorts every other one (the scratch round trips show up as memory waits elsewhere) and its
    fix changes the register budget the other fixes work within. A cheap one keeps its place by
    gain (one currency: a 1 % spill never leads a 15 % finding)."""
    first = [f for f in findings if f.rule == RULE_HOT and f.ranked and f.priority == "HIGH"]
    return first + [f for f in findings if f not in first]
