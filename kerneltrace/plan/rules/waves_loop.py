"""Wave rule W2: how busy the hottest MFMA loop keeps the matrix pipe, and what idles it."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, hiding_gain, scoped_title
from kerneltrace.plan.rules.waves_refs import wave_loops
from kerneltrace.plan.spec import FindingKind, plan_rule
from kerneltrace.plan.verdict import WAIT_TYPES, total_stall
from kerneltrace.sourceloc import short_location
from kerneltrace.thresholds import VerdictThresholds, heuristic


@dataclass(frozen=True)
class HotLoopThresholds:
    """W2: what idles the matrix pipe of the hot loop (busy bounds: the verdict's concern)."""

    CONCERN = "hot_loop"
    wait_majority: float = heuristic(0.5, "share of the loop's stall on `s_waitcnt` from which "
                                     "the waits, not other work, idle the matrix pipe")
    other_hideable: tuple[float, float] = heuristic((0.1, 0.4), "share of the loop's non-wait "
                                                    "stall overlapping it with MFMAs hides")
    wait_hideable: tuple[float, float] = heuristic((0.1, 0.3), "share of the loop's wait stall "
                                                   "a deeper software pipeline hides")
    mfma_removable: tuple[float, float] = heuristic((0.05, 0.25), "share of an MFMA-bound loop's "
                                                    "MFMA pass cycles a faster MFMA shape, lower "
                                                    "precision or less redundant compute removes "
                                                    "(W2-hot-loop-mfma-bound)")


def mfma_bound_gain(loop_share: float, busy: float, removable: tuple[float, float]) -> Gain:
    """W2-hot-loop-mfma-bound: the part of the waves' time the loop's matrix pipe is busy, times
    the share of its pass cycles a cheaper MFMA formulation removes (a share of wave time)."""
    base = loop_share * busy
    low, high = removable
    return Gain(round(base * low, 4), round(base * high, 4),
                f"the loop holds {loop_share:.0%} of the waves' time with the matrix pipe busy "
                f"{busy:.0%} of it; fewer MFMA pass cycles remove {low:.0%}–{high:.0%} of that",
                unit="wave_time")


def _loop_stall(ctx: PlanContext, loop: dict) -> tuple[int, int, list[dict]]:
    """(stall cycles inside the loop rows, of which waits, the loop's instructions by stall)."""
    inside = [
        ins
        for index, ins in ctx.instructions.items()
        if loop["first_index"] <= index <= loop["last_index"]
    ]
    stall = total_stall(inside)
    waits = total_stall([ins for ins in inside if ins.get("type") in WAIT_TYPES])
    return stall, waits, sorted(inside, key=lambda ins: -(ins.get("stall_cycles") or 0))


def _umbrella_gain(share: float, low: float, high: float, what: str) -> Gain:
    """A loop-wide gain: the line findings inside the loop claim the same cycles."""
    gain = hiding_gain(share, low, high, what)
    return Gain(
        gain.low,
        gain.high,
        gain.basis + "; overlaps the line findings inside the loop, so do not add it to theirs",
    )


@plan_rule(id="W2-hot-loop-mfma-underused", lever="memory-pipeline", serves=("issue-dependency",),
           requires=("hotspots", "waves"), order=200,
           thresholds=(VerdictThresholds, HotLoopThresholds),
           variants=(FindingKind("W2-hot-loop-mfma-bound", "compute", serves=("compute-mfma",)),))
def hot_loop_mfma_busy(ctx: PlanContext) -> list[Finding]:
    """The hot loop keeps the matrix pipe idle (waits or other work between MFMAs).

    W2: the hottest MFMA loop keeps its matrix pipe busy < 50 % while waits dominate (or ≥ 80 %).

    Trigger: hotspots/2 only: the hottest loop with a known `mfma_busy_fraction` < 50 % holding ≥ 25
        % of the waves' time; the title says whether `s_waitcnt` waits hold ≥ 50 % of the loop's
        stall (then: deepen the software pipeline) or other work does (then: overlap it with MFMAs).
        Kernel-wide, capped at MED; its share (stall inside the loop rows) overlaps the line
        findings in the loop; the same loop with MFMA busy ≥ 80 % is `W2-hot-loop-mfma-bound`
        instead (compute-bound, do not chase load latency there)
    Evidence: the loop's top stalled instructions; iterations, cycles/iteration, MFMA pass cycles in
        the text
    Gain: 10–30 % of the loop's wait stall (waits) or 10–40 % of its non-wait stall (other);
        overlaps the line findings (not to be added); bounded by the MFMA work; mfma-bound: 5–25 %
        of the loop's MFMA-busy share of the waves' time
    Fix: deepen the software pipeline (waits) or overlap the non-MFMA work with MFMAs"""
    bounds = ctx.thresholds.of(VerdictThresholds)
    limits = ctx.thresholds.of(HotLoopThresholds)
    hot = _hot_mfma_loop(ctx, bounds.min_loop_share)
    if hot is None:
        return []
    if hot.busy < bounds.low_mfma_busy and hot.wait_fraction < limits.wait_majority:
        return [_other_work_finding(ctx, hot, limits)]
    if hot.busy < bounds.low_mfma_busy:
        return [_waits_finding(ctx, hot, limits)]
    if hot.busy >= bounds.mfma_bound:
        return [_mfma_bound_finding(ctx, hot, limits)]
    return []


@dataclass(frozen=True)
class _HotLoop:
    """The hottest MFMA loop of the wave files and what W2 says about it."""

    loop: dict
    busy: float  # MFMA busy fraction of the time a wave is in the loop
    stall: int  # stall inside the loop rows
    wait_stall: int  # of which `s_waitcnt` waits
    ranked: list[dict]  # the loop's instructions by stall
    share: float  # the loop's stall as a share of all stall
    facts: str  # the sentence every W2 root cause starts with
    evidence: list

    @property
    def wait_fraction(self) -> float:
        return self.wait_stall / self.stall if self.stall else 0.0


def _hot_mfma_loop(ctx: PlanContext, min_loop_share: float) -> _HotLoop | None:
    """The hottest wave-file loop with MFMA work, when it holds most of the waves' time."""
    loop = next(
        (
            loop
            for loop in wave_loops(ctx)
            if isinstance(loop.get("mfma_busy_fraction"), int | float)
            and (loop.get("mfma_pass_cycles") or 0) > 0
        ),
        None,
    )
    if loop is None or ((loop.get("split") or {}).get("loop_share") or 0) < min_loop_share:
        return None
    busy = loop["mfma_busy_fraction"]
    stall, wait_stall, ranked = _loop_stall(ctx, loop)
    loop_share = loop["split"]["loop_share"]
    facts = (
        f"The loop at rows {loop['first_index']}–{loop['last_index']} (starts at "
        f"{short_location(loop.get('first_source'))}) runs {loop['iterations']:,} iterations "
        f"({loop['iterations_per_wave']:g} per wave over {loop['waves']} waves) at "
        f"{loop['cycles_per_iteration']:,.0f} cycles/iteration and holds {loop_share:.0%} of the "
        f"waves' time; its MFMAs keep the SIMD's matrix pipe busy {busy:.0%} of the time a wave is "
        f"in it ({loop['mfma_pass_cycles']:,} MFMA pass cycles)"
    )
    evidence = [
        ctx.evidence(ins, "stall inside the loop")
        for ins in ranked[:5]
        if (ins.get("stall_cycles") or 0) > 0
    ]
    return _HotLoop(loop, busy, stall, wait_stall, ranked, ctx.share(stall), facts, evidence)


def _other_work_finding(ctx: PlanContext, hot: _HotLoop, limits: HotLoopThresholds) -> Finding:
    """MFMA busy low and the loop's stall mostly not waits: other work idles the matrix pipe."""
    busy, stall = hot.busy, hot.stall
    by_type: dict[str, int] = {}
    for ins in hot.ranked:
        by_type[ins.get("type") or isa.OTHER] = by_type.get(ins.get("type") or isa.OTHER, 0) + (
            ins.get("stall_cycles") or 0
        )
    top = sorted(by_type.items(), key=lambda item: -item[1])[:3]
    mix = ", ".join(f"{kind} {cycles / stall:.0%}" for kind, cycles in top if stall and cycles)
    return ctx.finding(
        "W2-hot-loop-mfma-underused", hot.share,
        title=scoped_title(
            f"MFMA busy only {busy:.0%} of the hot loop: other work holds the pipe idle",
            "loop",
            "all stall inside the loop",
        ),
        cap="MED",
        estimated_gain=_umbrella_gain(
            ctx.share(stall - hot.wait_stall), *limits.other_hideable,
            "the loop's non-wait stall"
        ),
        scope="loop",
        root_cause=hot.facts
        + f". The loop's {stall:,} stall cycles are mostly not memory waits ({mix}): "
        "non-matrix work and its dependencies sit between the MFMAs. This overlaps the "
        "line findings inside the loop.",
        fix=(
            "Overlap the non-MFMA work with matrix work: interleave independent VALU/"
            "transcendental work of tile k with the MFMAs of tile k+1 (or ping-pong two "
            "waves per SIMD), and fix the line findings inside the loop first."
        ),
        evidence=hot.evidence,
        effort="high",
    )


def _waits_finding(ctx: PlanContext, hot: _HotLoop, limits: HotLoopThresholds) -> Finding:
    """MFMA busy low and waits hold most of the loop's stall: deepen the software pipeline."""
    busy, stall, wait_stall = hot.busy, hot.stall, hot.wait_stall
    gain = _umbrella_gain(ctx.share(wait_stall), *limits.wait_hideable,
                          "the loop's `s_waitcnt` stall")
    gain = Gain(
        gain.low,
        gain.high,
        gain.basis + f"; the MFMA pipe bounds it: the loop cannot run faster than its MFMA "
        f"work, {busy:.0%} of its time now",
    )
    return ctx.finding(
        "W2-hot-loop-mfma-underused", hot.share,
        title=scoped_title(
            f"MFMA busy only {busy:.0%} of the hot loop: waits hold "
            f"{hot.wait_fraction:.0%} of its stall",
            "loop",
            "all stall inside the loop",
        ),
        scope="loop",
        # kernel-wide umbrella: the line findings that make it up rank first
        cap="MED",
        estimated_gain=gain,
        root_cause=hot.facts
        + f". {wait_stall:,} of the loop's {stall:,} stall cycles are `s_waitcnt` waits: "
        "the matrix pipe idles while loads return. This overlaps the line findings inside "
        "the loop.",
        fix=(
            "Deepen the software pipeline: load tile k+1 (or k+2) into registers/LDS while "
            "the MFMAs of tile k run, interleave the loads and LDS reads between MFMAs "
            "instead of bunching them, and wait only right before the consumer; if "
            "occupancy allows, more waves per SIMD overlap one wave's waits with another's "
            "MFMAs."
        ),
        schematic=(
            "prefetch(tile[0]); prefetch(tile[1])\n"
            "for k: wait(tile[k]); mfma(tile[k]) interleaved with prefetch(tile[k+2])"
        ),
        evidence=hot.evidence,
        effort="high",
    )


def _mfma_bound_finding(ctx: PlanContext, hot: _HotLoop, limits: HotLoopThresholds) -> Finding:
    """MFMA busy high: compute-bound in the loop; do not chase load latency there."""
    return ctx.finding(
        "W2-hot-loop-mfma-bound", hot.share,
        title=scoped_title(
            f"MFMA pipe busy {hot.busy:.0%} of the hot loop: compute-bound there",
            "loop",
            "all stall inside the loop",
        ),
        scope="loop",
        priority="LOW",
        estimated_gain=mfma_bound_gain(hot.loop["split"]["loop_share"], hot.busy,
                                       limits.mfma_removable),
        root_cause=hot.facts + ": memory latency is already hidden behind matrix work.",
        fix=(
            "Do not chase load latency in this loop. Speed-ups need fewer MFMA pass "
            "cycles (a faster MFMA variant or lower precision, less redundant compute)."
        ),
        evidence=hot.evidence,
        effort="high",
    )
