"""Kernel-wide rules: occupancy limiter, barrier-dominated kernels, missing source mapping."""

from __future__ import annotations

from kerneltrace.isa.classify import BARRIER, LDS_SMEM_WAIT, VMEM_LOAD, VMEM_WAIT
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import (
    Finding,
    Gain,
    finding_id,
    hiding_gain,
    scoped_title,
)

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


def occupancy_gain(latency_share: float, waves: int) -> Gain:
    """Upper bound for one more wave per SIMD: it can overlap at most 1/(N+1) of the waits."""
    bound = latency_share / (waves + 1) * 0.5
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


def occupancy_limited(ctx: PlanContext) -> list[Finding]:
    """Occupancy limited by VGPR/AGPR/LDS/SGPR while waits dominate: more waves would hide them."""
    occ = ctx.hotspots.get("occupancy") or {}
    limiter = (occ.get("limited_by") or "").lower()
    waves = occ.get("waves_per_simd")
    hardware = (occ.get("limits") or {}).get("hardware")
    if limiter not in _SAVE or waves is None or (hardware is not None and waves >= hardware):
        return []
    latency_share = ctx.type_share(VMEM_WAIT, VMEM_LOAD, LDS_SMEM_WAIT, BARRIER)
    if waves > 4 or latency_share < 0.2:
        return []
    return [
        Finding(
            id=finding_id(f"OCC-{limiter}-limited", None),
            rule="OCC-limited",
            title=scoped_title(
                f"Occupancy {waves} wave(s)/SIMD, limited by {limiter.upper()}",
                "kernel",
                "all memory-wait and barrier stall",
            ),
            priority="MED" if waves <= 2 else "LOW",
            stall_share=round(latency_share, 4),
            estimated_gain=occupancy_gain(latency_share, waves),
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


def barrier_dominated(ctx: PlanContext, min_share: float = 0.2) -> list[Finding]:
    """Barrier stall is a large part of the kernel: waves wait for the slowest one."""
    share = ctx.type_share(BARRIER)
    if share < min_share:
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
        Finding.for_share(
            "BAR-dominated", location, share,
            title=f"Barriers take {share:.0%} of stall cycles",
            estimated_gain=hiding_gain(share, 0.2, 0.6, "the barrier stall"),
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


def no_source_mapping(ctx: PlanContext, min_unmapped: float = 0.5) -> list[Finding]:
    """Most instructions have no source line: the plan cannot point at code until that is fixed."""
    mapping = ctx.hotspots.get("source_mapping") or {}
    mapped = mapping.get("mapped_fraction")
    if mapped is None or mapped > 1 - min_unmapped:
        return []
    hint = mapping.get("hint") or ""
    return [
        Finding(
            id="SRC-no-source-mapping",
            rule="SRC-no-source-mapping",
            title=f"Only {mapped:.0%} of instructions map to a source line",
            priority="MED",
            stall_share=round(1 - mapped, 4),
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
