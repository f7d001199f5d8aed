"""Kernel-wide rules: occupancy limiter, barrier-dominated kernels, missing source mapping."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa.classify import BARRIER, LDS_SMEM_WAIT, VMEM_LOAD, VMEM_WAIT
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, finding_id, hiding_gain, scoped_title
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic


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
                                                      "balancing and fewer barriers remove")
    min_unmapped: float = heuristic(0.5, "unmapped instruction fraction from which the plan "
                                    "asks for line tables (SRC)")

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


@plan_rule(id="OCC-limited", lever="occupancy", order=110, thresholds=(KernelWideThresholds,))
def occupancy_limited(ctx: PlanContext) -> list[Finding]:
    """Occupancy limited by registers or LDS while waits dominate.

    Occupancy limited by VGPR/AGPR/LDS/SGPR while waits dominate: more waves would hide them.

    Trigger: occupancy ≤ 4 waves/SIMD, limited by VGPR/AGPR/LDS/SGPR, below the hardware cap, and ≥
        20 % of stall is memory waits/barriers; scope kernel
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
    return [
        ctx.finding(
            "OCC-limited", latency_share, id=finding_id(f"OCC-{limiter}-limited", None),
            title=scoped_title(
                f"Occupancy {waves} wave(s)/SIMD, limited by {limiter.upper()}",
                "kernel",
                "all memory-wait and barrier stall",
            ),
            priority="MED" if waves <= limits.occupancy_med_waves else "LOW",
            estimated_gain=occupancy_gain(latency_share, waves, limits.occupancy_shared_bandwidth),
            scope="kernel",
            root_cause=(
                f"Only {waves} wave(s) per SIMD fit because of {_SAVE[limiter]}; with "
                f"{latency_share:.0%} of stall on memory waits and barriers there are too few other "
                f"waves to switch to while one waits. {_next_level_text(occ)}"
            ).strip(),
            fix=f"Reduce {_SAVE[limiter]} to the next-level target. {_KNOB} {MAXNREG_WARNING}",
            schematic="@flyc.kernel(waves_per_eu=N+1)    # or __launch_bounds__(256, N+1) in HIP",
            evidence=[],
            location=None,
            effort="high",
        )
    ]


@plan_rule(id="BAR-dominated", lever="sync", serves=("synchronisation",), order=120,
           thresholds=(KernelWideThresholds,))
def barrier_dominated(ctx: PlanContext) -> list[Finding]:
    """Barriers hold a large share of stall.

    Barrier stall is a large part of the kernel: waves wait for the slowest one.

    Trigger: barrier stall ≥ 20 % of all stall
    Evidence: top barrier instructions
    Gain: 20–60 % of barrier stall
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
    return [
        ctx.finding(
            "BAR-dominated", share, location=location,
            title=f"Barriers take {share:.0%} of stall cycles",
            estimated_gain=hiding_gain(share, *limits.barrier_hideable, "the barrier stall"),
            scope="kernel",
            root_cause=(
                f"{len(barriers)} `s_barrier` instruction(s) stall: waves of a workgroup wait for the "
                "slowest one, usually because work between barriers is unbalanced or because one "
                "barrier per LDS stage serialises load and compute."
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


@plan_rule(id="SRC-no-source-mapping", lever="none", order=150, thresholds=(KernelWideThresholds,))
def no_source_mapping(ctx: PlanContext) -> list[Finding]:
    """Most instructions map to no source line.

    Most instructions have no source line: the plan cannot point at code until that is fixed.

    Trigger: mapped fraction ≤ 50 %
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
            title=f"Only {mapped:.0%} of instructions map to a source line",
            priority="MED",
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
