"""Kernel-wide rules: occupancy limiter, barrier-dominated kernels, missing source mapping."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.barrier_stragglers import memory_share
from kerneltrace.isa.classify import BARRIER, LDS_SMEM_WAIT, VMEM_LOAD, VMEM_WAIT
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, finding_id, hiding_gain, scoped_title
from kerneltrace.plan.occupancy_check import observed as observed_occupancy
from kerneltrace.plan.rules.barrier_gain import barrier_gain
from kerneltrace.plan.rules.stragglers import (
    RULE_STRAGGLER_WAITS,
    cause_evidence,
    straggler_note,
    straggler_waits_finding,
    stragglers_of,
)
from kerneltrace.plan.spec import FindingKind, plan_rule
from kerneltrace.thresholds import VerdictThresholds, heuristic


@dataclass(frozen=True)
class KernelWideThresholds:
    """OCC (occupancy limiter), BAR (barrier-dominated), SRC (no source mapping)."""

    CONCERN = "kernel_wide"
    occupancy_max_waves: int = heuristic(4, "waves per SIMD up to which a register/LDS "
                                         "limiter is worth an OCC finding")
    occupancy_med_waves: int = heuristic(2, "waves per SIMD up to which OCC is MED (else LOW)")
    occupancy_latency_share: float = heuristic(0.2, "stall share of memory waits and barriers "
                                               "from which more waves would help (OCC)")
    occupancy_shared_bandwidth: float = heuristic(0.5, "factor on the 1/(N+1) of the waits one "
                                                  "more wave overlaps: it shares the bandwidth")
    barrier_min_share: float = heuristic(0.2, "barrier stall share from which BAR-dominated is "
                                         "reported (the synchronisation verdict needs "
                                         "verdict.barrier_share)")
    barrier_hideable: tuple[float, float] = heuristic((0.2, 0.6), "share of the barrier stall "
                                                      "balancing and fewer barriers remove "
                                                      "(without wave files; with them the low "
                                                      "end × the exposed barrier wait, "
                                                      "plan/rules/barrier_gain.py)")
    min_unmapped: float = heuristic(0.5, "unmapped instruction fraction from which the plan "
                                    "asks for line tables (SRC)")
    ping_pong_hideable: tuple[float, float] = heuristic((0.1, 0.4), "share of a ping-pong "
                                                        "schedule's barrier stall a shorter "
                                                        "partner load/LDS phase removes "
                                                        "(without wave files; with them the low "
                                                        "end × the exposed barrier wait)")
    straggler_evidence_share: float = heuristic(0.05, "share of the barrier wait below which a "
                                                "straggler cause gives the barrier finding no "
                                                "evidence rows")

MAXNREG_WARNING = (
    "Never force a register cap with `maxnreg`: the compiler spills MFMA operands to scratch "
    "memory; the FlyDSL skill reports a kernel whose occupancy doubled that way running 4.5× slower."
)
_KNOB = (
    "Ask the compiler for the next occupancy level with `waves_per_eu` (FlyDSL compile option / "
    "`__attribute__((amdgpu_waves_per_eu(N)))`) or `__launch_bounds__(threads, min_blocks)` in HIP, "
    "and check that it fits without spills."
)
_SAVE = {
    "vgpr": "vector registers (VGPR + AGPR, one pool per lane)",
    "agpr": "accumulation registers (AGPR)",
    "lds": "LDS bytes per workgroup",
    "sgpr": "scalar registers",
}


def _next_level_text(occupancy: dict) -> str:
    """What must be saved for one more wave per SIMD, from the document's `next_level`."""
    nxt = occupancy.get("next_level") or {}
    if not nxt:
        return ""
    parts = [
        f"{key.replace('_', ' ')} {value}"
        for key, value in nxt.items()
        if value is not None and not isinstance(value, dict | list)
    ]
    return "Next level: " + ", ".join(parts) + "." if parts else ""


def occupancy_gain(latency_share: float, waves: int, shared_bandwidth: float) -> Gain:
    """Upper bound for one more wave per SIMD: it can overlap at most 1/(N+1) of the waits,
    × `shared_bandwidth` (the added wave shares the memory bandwidth and LDS)."""
    bound = latency_share / (waves + 1) * shared_bandwidth
    return Gain(
        low=0.0,
        high=round(bound, 4),
        basis=(
            f"one more wave per SIMD ({waves}→{waves + 1}) can overlap at most 1/{waves + 1} of "
            f"the memory-wait and barrier stall ({latency_share:.1%} of all stall cycles), halved "
            "because the added wave shares the same memory bandwidth and LDS; 0 when the kernel "
            "is bandwidth-bound or the next level needs spills. Overlaps the line findings"
        ),
    )


def cuts_a_round(launch: dict, occupancy: dict, agent: dict) -> bool:
    """True unless the launch facts show that the next occupancy level needs as many rounds of
    resident workgroups as this one: the grid's workgroups come in whole rounds, so room for one
    more wave per SIMD only shortens the run when it removes a round (pa_decode: 1,024
    workgroups on 256 CUs need 2 rounds at 2 and at 3 waves per SIMD). Unknown facts: True."""
    import math

    workgroups, cus = launch.get("workgroups"), launch.get("cu_count")
    per_group, resident = launch.get("waves_per_workgroup"), launch.get("resident_workgroups_per_cu")
    simds = agent.get("simd_per_cu")
    nxt = (occupancy.get("next_level") or {}).get("waves_per_simd")
    if not all(isinstance(v, int) and v > 0 for v in (workgroups, cus, per_group, resident, simds, nxt)):
        return True
    limit = (occupancy.get("limits") or {}).get("workgroup")
    more = max(1, nxt * simds // per_group)
    if isinstance(limit, int) and limit > 0:
        more = min(more, limit)
    return math.ceil(workgroups / (cus * more)) < math.ceil(workgroups / (cus * resident))


@plan_rule(id="OCC-limited", lever="occupancy", order=110, thresholds=(KernelWideThresholds,))
def occupancy_limited(ctx: PlanContext) -> list[Finding]:
    """Occupancy limited by registers or LDS while waits dominate.

    Occupancy limited by VGPR/AGPR/LDS/SGPR while waits dominate: more waves would hide them.

    Trigger: occupancy ≤ 4 waves/SIMD, limited by VGPR/AGPR/LDS/SGPR, below the hardware cap, and ≥
        20 % of stall is memory waits/barriers; scope kernel. Names every tied limiter (lifting
        one alone adds no wave); none when the grid supplies no more waves per SIMD than the CU
        holds (`structure.launch`), when the next occupancy level leaves the grid as many rounds
        of resident workgroups (the grid's rounds, not the CU, cap it), when the LDS/workgroup
        limits are unknown, or when the wave files show the traced CUs below the computed limit
        (plan/occupancy_check.py)
    Evidence: occupancy `limits`, `next_level`
    Gain: 0 to ½ × 1/(N+1) of wait+barrier stall (one more wave overlaps at most 1/(N+1); halved for
        shared bandwidth)
    Fix: knob `waves_per_eu` / `__launch_bounds__`, never `maxnreg` (spills; 4.5× slower example)"""
    limits = ctx.thresholds.of(KernelWideThresholds)
    occ = ctx.hotspots.get("occupancy") or {}
    limiter = (occ.get("limited_by") or "").lower()
    waves = occ.get("waves_per_simd")
    hardware = (occ.get("limits") or {}).get("hardware")
    if limiter not in _SAVE or waves is None or (hardware is not None and waves >= hardware):
        return []
    latency_share = ctx.type_share(VMEM_WAIT, VMEM_LOAD, LDS_SMEM_WAIT, BARRIER)
    if waves > limits.occupancy_max_waves or latency_share < limits.occupancy_latency_share:
        return []
    if any((occ.get("limits") or {}).get(key) is None for key in ("lds", "workgroup")):
        return []  # no kernel-trace row: LDS and workgroup limits unknown, the limiter may be either
    launch = ctx.structure.get("launch") or {}
    grid = launch.get("waves_per_simd_grid")
    if isinstance(grid, int | float) and grid <= waves:
        return []  # the grid, not the CU, caps the waves per SIMD: more room per CU adds none
    seen = observed_occupancy(ctx.hotspots)
    if seen is not None and seen["status"] != "reached":
        return []  # the traced CUs never held the computed limit: its limiter is not the cap
    if not cuts_a_round(launch, occ, ((ctx.hotspots.get("metadata") or {}).get("agent") or {})):
        return []  # the grid's rounds, not the CU: one more wave per SIMD leaves as many rounds
    tied = [t.upper() for t in occ.get("tied_limiters") or [limiter] if t]
    limiters = " and ".join(tied) if tied else limiter.upper()
    saves = " and ".join(_SAVE.get(t.lower(), t) for t in tied) or _SAVE[limiter]
    return [
        ctx.finding(
            "OCC-limited", latency_share, id=finding_id(f"OCC-{limiter}-limited", None),
            title=scoped_title(
                f"Occupancy {waves} wave(s)/SIMD, limited by {limiters}",
                "kernel",
                "all memory-wait and barrier stall",
            ),
            priority="MED" if waves <= limits.occupancy_med_waves else "LOW",
            estimated_gain=occupancy_gain(latency_share, waves, limits.occupancy_shared_bandwidth),
            scope="kernel",
            root_cause=(
                f"Only {waves} wave(s) per SIMD fit because of {saves}"
                + (" (tied: lifting one alone adds no wave)" if len(tied) > 1 else "") + "; with "
                f"{latency_share:.0%} of stall on memory waits and barriers there are too few other "
                f"waves to switch to while one waits. {_next_level_text(occ)}"
            ).strip(),
            fix=f"Reduce {saves} to the next-level target. {_KNOB} {MAXNREG_WARNING}",
            schematic="@flyc.kernel(waves_per_eu=N+1)    # or __launch_bounds__(256, N+1) in HIP",
            evidence=[],
            location=None,
            effort="high",
        )
    ]


RULE_PING_PONG = "BAR-ping-pong-phase"


@plan_rule(id="BAR-dominated", lever="sync", serves=("synchronisation",), order=120,
           thresholds=(KernelWideThresholds,),
           variants=(FindingKind(RULE_PING_PONG, "memory-pipeline",
                                 serves=("synchronisation",)),
                     FindingKind(RULE_STRAGGLER_WAITS, "memory-pipeline")))
def barrier_dominated(ctx: PlanContext) -> list[Finding]:
    """Barriers hold a large share of stall.

    Barrier stall is a large part of the kernel: waves wait for the slowest one.

    Trigger: barrier stall ≥ 20 % of all stall; in a ping-pong schedule (`structure.barriers.
        ping_pong`: a conditional barrier before the hot loop staggers two wave groups) it is
        `BAR-ping-pong-phase` instead: the barrier wait is the partner group's load/LDS phase
        (fix: shorten that phase, never remove the barriers); with wave files, when the
        last-arriving wave's memory/LDS/scratch waits explain ≥ verdict.barrier_explained of the
        barrier wait (`structure.barriers.stragglers`) it is `BAR-straggler-waits`: the barrier
        is the symptom, the straggler's waits the cause
    Evidence: top barrier instructions (ping-pong: the waits before the pairing barriers first;
        straggler waits: the instructions the last wave waited at first)
    Gain: with wave files 20 % (ping-pong 10 %) to 100 % of the barrier waits during which the
        SIMD's matrix pipe idled (no MFMA kernel: no wave issued), a share of the waves' lifetime
        (plan/rules/barrier_gain.py); without, 20–60 % (ping-pong 10–40 %) of barrier stall
    Fix: double-buffer LDS (one barrier per iteration), balance work between waves"""
    limits = ctx.thresholds.of(KernelWideThresholds)
    share = ctx.type_share(BARRIER)
    if share < limits.barrier_min_share:
        return []
    barriers = sorted(
        (
            ins
            for ins in ctx.program_order
            if ins.get("type") == BARRIER and (ins.get("stall_cycles") or 0)
        ),
        key=lambda ins: -(ins.get("stall_cycles") or 0),
    )
    evidence = [ctx.evidence(ins, "barrier") for ins in barriers[:5]]
    location = ctx.user_location(evidence)
    structure = ctx.structure.get("barriers") or {}
    if structure.get("ping_pong"):
        return [ping_pong_phase(ctx, share, barriers, structure, location)]
    stragglers = stragglers_of(ctx)
    if (stragglers is not None and memory_share(stragglers)
            >= ctx.thresholds.of(VerdictThresholds).barrier_explained):
        return [straggler_waits_finding(ctx, share, barriers, stragglers, location,
                                        limits.barrier_hideable, limits.straggler_evidence_share)]
    evidence += cause_evidence(ctx, stragglers, limits.straggler_evidence_share)
    return [
        ctx.finding(
            "BAR-dominated", share, location=location,
            title=f"Barriers take {share:.0%} of stall cycles",
            estimated_gain=barrier_gain(
                ctx, hiding_gain(share, *limits.barrier_hideable, "the barrier stall"),
                limits.barrier_hideable[0], "balancing the waves or overlapping two wave groups"),
            scope="kernel",
            root_cause=(
                f"{len(barriers)} `s_barrier` instruction(s) stall: waves of a workgroup wait for the "
                "slowest one, usually because work between barriers is unbalanced or because one "
                "barrier per LDS stage serialises load and compute."
                + straggler_note(stragglers)
            ),
            fix=(
                "Remove barriers per iteration (double-buffer LDS so one barrier covers both "
                "write and read phases), balance work between waves, and keep loads issued before "
                "the barrier rather than after it."
            ),
            schematic="for k: write(lds[k%2]); barrier(); compute(lds[(k-1)%2])   # one barrier/iter",
            evidence=evidence,
            effort="high",
        )
    ]


PING_PONG_BARRIER = (
    "one wave group waits at the pairing barrier for its partner's load/LDS phase (a ping-pong "
    "schedule)",
    "shorten the partner's load/LDS phase (spread its global loads, split its LDS reads and "
    "their waits); keep the barriers, they are the schedule",
)


def barrier_remedy(ctx: PlanContext, kind: str, remedy: tuple[str, str, float, float]
                   ) -> tuple[str, str, float, float]:
    """A line's or region's (cause, fix, hideable low, high) for its dominant stall type, with a
    barrier in a ping-pong schedule read as BAR-ping-pong-phase reads it (its cause, fix and
    hideable share): the same waits, never "fewer barriers"."""
    if kind != BARRIER or not (ctx.structure.get("barriers") or {}).get("ping_pong"):
        return remedy
    low, high = ctx.thresholds.of(KernelWideThresholds).ping_pong_hideable
    return (*PING_PONG_BARRIER, low, high)


def ping_pong_phase(ctx: PlanContext, share: float, barriers: list[dict], structure: dict,
                    location: str | None) -> Finding:
    """BAR-ping-pong-phase: in a ping-pong schedule a loop barrier pairs the two wave groups; its
    wait is one group waiting for the other's load/LDS phase (issue 21.4): shorten that phase."""
    causes = sorted((c for c in structure.get("barriers") or [] if c.get("cause_index") is not None),
                    key=lambda c: -(c.get("stall") or 0))
    cause_rows = [c["cause_index"] for c in causes[:4] if c["cause_index"] in ctx.instructions]
    hideable = ctx.thresholds.of(KernelWideThresholds).ping_pong_hideable
    evidence = [ctx.evidence(ctx.instructions[i], "wait before a pairing barrier") for i in cause_rows]
    evidence += [ctx.evidence(ins, "pairing barrier") for ins in barriers[:3]]
    return ctx.finding(
        RULE_PING_PONG, share, location=location,
        title=(f"Ping-pong: the barrier waits ({share:.0%} of stall) are one wave group waiting for "
               "its partner's load/LDS phase"),
        estimated_gain=barrier_gain(
            ctx, hiding_gain(share, *hideable, "the barrier stall (a shorter partner phase)"),
            hideable[0], "a partner load/LDS phase no longer than the MFMA phase"),
        scope="kernel",
        root_cause=(f"A conditional barrier before the loop (row(s) "
                    f"{', '.join(map(str, structure.get('staggering_barriers') or []))}) staggers "
                    "two wave groups, so each loop barrier pairs one group's memory/LDS phase with "
                    "the other's MFMA phase. A wait there means the memory/LDS phase is longer than "
                    "the MFMA phase it should hide behind."),
        fix=("Shorten the load/LDS phase: issue the burst of global loads earlier (right after the "
             "previous async wait), split the LDS reads and their waits across the phase, move "
             "address arithmetic out of it. Do not remove the barriers: they are the schedule."),
        schematic="group A: wait(buf0); load(buf1) | group B: mfma(buf0)   # balance the phases",
        evidence=evidence, effort="medium",
    )


@plan_rule(id="SRC-no-source-mapping", lever="none", order=150, thresholds=(KernelWideThresholds,))
def no_source_mapping(ctx: PlanContext) -> list[Finding]:
    """Most instructions map to no source line.

    Most instructions have no source line: the plan cannot point at code until that is fixed.

    Trigger: mapped fraction ≤ 50 %; not ranked: a capture-quality note (`capture_quality` in
        summary.json, its own section before the findings)
    Evidence: —
    Gain: none (enables the other findings)
    Fix: re-capture with line tables (debug info, JIT cache bypassed)"""
    min_unmapped = ctx.thresholds.of(KernelWideThresholds).min_unmapped
    mapping = ctx.hotspots.get("source_mapping") or {}
    mapped = mapping.get("mapped_fraction")
    if mapped is None or mapped > 1 - min_unmapped:
        return []
    hint = mapping.get("hint") or ""
    return [
        ctx.finding(
            "SRC-no-source-mapping", 1 - mapped,
            title=("No instruction maps to a source line" if mapped == 0
                   else f"Only {mapped:.0%} of instructions map to a source line"),
            priority="LOW",
            ranked=False,  # a note about the capture (issue 21.2), never a change to rank
            estimated_gain=Gain(
                low=0.0,
                high=0.0,
                basis="no direct gain: it makes every other finding point at code",
            ),
            root_cause=(
                "The code object has no line tables, so stall cannot be attributed to source lines; "
                "a JIT cache serving a non-debug binary is the usual cause. " + hint
            ).strip(),
            fix=(
                "Re-capture with line info: FlyDSL `FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1` and a cleared "
                "or bypassed JIT cache; HIP/C++ `-g` or `-gline-tables-only` with `-O3`; Triton "
                "with line info enabled. Instruction-level findings below still hold."
            ),
            schematic="FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1 snakemake -c all --config cmd='python bench.py'",
            scope="kernel",
            evidence=[],
            location=None,
            effort="low",
        )
    ]
