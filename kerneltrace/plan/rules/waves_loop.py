"""Wave rule W2: how busy the hottest MFMA loop keeps the matrix pipe, and what idles it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kerneltrace.analysis.issue_mix import estimated_stall
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, hiding_gain, scoped_title
from kerneltrace.plan.rules.waves_refs import wave_loops
from kerneltrace.plan.spec import FindingKind, plan_rule
from kerneltrace.plan.verdict import (
    ISSUE_TYPES,
    MEMORY_ISSUE_TYPES,
    WAIT_TYPES,
    is_no_stall,
    total_stall,
)
from kerneltrace.sourceloc import short_location
from kerneltrace.thresholds import VerdictThresholds, heuristic


@dataclass(frozen=True)
class HotLoopThresholds:
    """W2: what idles the matrix pipe of the hot loop (busy bounds: the verdict's concern)."""

    CONCERN = "hot_loop"
    wait_majority: float = heuristic(0.5, "share of the loop's stall on `s_waitcnt` from which "
                                     "W2's title says the waits hold it (below: memory, the "
                                     "waits and the memory pipes' queue-full issue stalls)")
    other_hideable: tuple[float, float] = heuristic((0.1, 0.4), "share of the loop's dependent "
                                                    "VALU/s_nop/MFMA/SALU issue stall "
                                                    "overlapping it with MFMAs hides")
    wait_hideable: tuple[float, float] = heuristic((0.1, 0.3), "share of the loop's wait stall "
                                                   "a deeper software pipeline hides")
    mfma_gap_fillable: tuple[float, float] = heuristic(
        (0.3, 0.7), "share of an MFMA-bound loop's matrix-pipe idle time that moving the work in "
        "those gaps (LDS reads and their waits, barriers) under the MFMA blocks recovers "
        "(W2-hot-loop-mfma-bound; fewer pass cycles would change the algorithm: not estimated)")


def mfma_bound_gain(loop_share: float, busy: float, fillable: tuple[float, float]) -> Gain:
    """W2-hot-loop-mfma-bound: the part of the waves' time the loop's matrix pipe idles, times
    the share of it work moved under the MFMA blocks recovers (a share of wave time). Fewer
    MFMA pass cycles (lower precision, less redundant compute) change the algorithm, so they
    get no estimate: at 98 % busy the loop itself has little left, and what is outside it
    (a tail, the per-tile code) ranks first."""
    base = loop_share * (1 - busy)
    low, high = fillable
    return Gain(round(base * low, 4), round(base * high, 4),
                f"the loop holds {loop_share:.0%} of the waves' time and its matrix pipe idles "
                f"{1 - busy:.0%} of it; work moved under the MFMA blocks recovers "
                f"{low:.0%}–{high:.0%} of that (fewer MFMA pass cycles would change the "
                "algorithm: not estimated)", unit="wave_time")


@dataclass(frozen=True)
class _LoopStall:
    """The stall inside a loop's rows, split by what holds it."""

    stall: int
    waits: int  # `s_waitcnt` waits
    memory_issue: int  # issue stalls of the memory pipes (a full queue)
    issue: int  # dependent VALU / s_nop / MFMA / SALU issue
    ranked: list[dict]  # the loop's instructions by stall

    def top(self, types: tuple[str, ...], count: int = 5) -> list[dict]:
        """The loop's most stalled rows of these types."""
        return [ins for ins in self.ranked
                if ins.get("type") in types and (ins.get("stall_cycles") or 0) > 0][:count]


def _loop_stall(ctx: PlanContext, loop: dict) -> _LoopStall:
    inside = [
        ins
        for index, ins in ctx.instructions.items()
        if loop["first_index"] <= index <= loop["last_index"]
    ]

    def of(types: tuple[str, ...]) -> int:
        return total_stall([ins for ins in inside if ins.get("type") in types])

    return _LoopStall(total_stall(inside), of(WAIT_TYPES), of(MEMORY_ISSUE_TYPES), of(ISSUE_TYPES),
                      sorted(inside, key=lambda ins: -(ins.get("stall_cycles") or 0)))


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

    W2: the hottest MFMA loop keeps its matrix pipe busy < 50 % while waits dominate (or ≥ 70 %).

    Trigger: hotspots/2 only: the hottest loop with a known `mfma_busy_fraction` < 50 % holding ≥ 25
        % of the waves' time; memory (`s_waitcnt` waits and the memory pipes' queue-full issue
        stalls) holding at least as much of the loop's stall as dependent VALU/s_nop/MFMA/SALU
        issue gives the waits variant (deepen the software pipeline), else the other-work variant
        (overlap that work with MFMAs). An umbrella over the line findings in the loop: a line
        finding claiming half its gain on the same instructions ranks in its place
        (`findings.lines_before_umbrellas`); the same loop with MFMA busy ≥ 70 % (the compute-mfma bar) is
        `W2-hot-loop-mfma-bound` instead (compute-bound, do not chase load latency there)
    Evidence: waits variant: the loop's most stalled waits; other-work variant: its most stalled
        dependent-work rows only (the waits are the load findings'); iterations, cycles/iteration,
        MFMA pass cycles in the text
    Gain: 10–30 % of the loop's wait stall (waits) or 10–40 % of its dependent-work issue stall
        (other); overlaps the line findings (not to be added); bounded by the MFMA work;
        mfma-bound: 30–70 % of the loop's matrix-pipe idle share of the waves' time; without a stall
        column each row's stall is estimated as latency − issue cycles, as a share of latency
    Fix: deepen the software pipeline (waits) or overlap the non-MFMA work with MFMAs; mfma-bound:
        below 90 % busy, move the work in the pipe's idle gaps (its most stalled rows) under the
        MFMA blocks, else fewer MFMA pass cycles"""
    bounds = ctx.thresholds.of(VerdictThresholds)
    limits = ctx.thresholds.of(HotLoopThresholds)
    legacy = is_no_stall(ctx.hotspots)
    if legacy:
        ctx = _estimated_stall_view(ctx)
    hot = _hot_mfma_loop(ctx, bounds.min_loop_share, estimated=legacy)
    if hot is None:
        return []
    findings = _judge(ctx, hot, bounds, limits)
    if legacy:  # estimates, not measurements: the evidence claims no stall
        for finding in findings:
            finding.evidence = [replace(e, stall_cycles=None, stall_rate=None)
                                for e in finding.evidence]
    return findings


def _estimated_stall_view(ctx: PlanContext) -> PlanContext:
    """The context seen with each row's stall estimated as latency − issue cycles (a capture
    without a stall column), as a share of all latency (what such plans rank by)."""
    doc = ctx.hotspots
    rows = [dict(ins, stall_cycles=estimated_stall(ins)) for ins in doc.get("instructions") or []]
    totals = dict(doc.get("totals") or {})
    totals["stall_cycles"] = int(totals.get("latency_cycles") or 0)
    return replace(ctx, hotspots=dict(doc, instructions=rows, totals=totals))


def _judge(ctx: PlanContext, hot: _HotLoop, bounds: VerdictThresholds,
           limits: HotLoopThresholds) -> list[Finding]:
    """The W2 variant the loop's stall mix calls for."""
    if hot.busy < bounds.low_mfma_busy and hot.parts.stall and (
            hot.parts.waits + hot.parts.memory_issue >= hot.parts.issue):
        return [_waits_finding(ctx, hot, limits)]
    if hot.busy < bounds.low_mfma_busy:
        return [_other_work_finding(ctx, hot, limits)]
    if hot.busy >= bounds.mfma_bound:
        return [_mfma_bound_finding(ctx, hot, limits)]
    return []


@dataclass(frozen=True)
class _HotLoop:
    """The hottest MFMA loop of the wave files and what W2 says about it."""

    loop: dict
    busy: float  # MFMA busy fraction of the time a wave is in the loop
    parts: _LoopStall  # the stall inside the loop rows, by what holds it
    share: float  # the loop's stall as a share of all stall
    facts: str  # the sentence every W2 root cause starts with
    stall_text: str = "stall cycles"  # what the root causes call the loop's stall

    @property
    def wait_fraction(self) -> float:
        return self.parts.waits / self.parts.stall if self.parts.stall else 0.0

    @property
    def memory_fraction(self) -> float:
        """Waits and memory-pipe issue stalls (a full queue): the loop waiting on memory."""
        parts = self.parts
        return (parts.waits + parts.memory_issue) / parts.stall if parts.stall else 0.0

    def evidence(self, ctx: PlanContext, types: tuple[str, ...], note: str) -> list:
        return [ctx.evidence(ins, note) for ins in self.parts.top(types)]


def _hot_mfma_loop(ctx: PlanContext, min_loop_share: float, *,
                   estimated: bool = False) -> _HotLoop | None:
    """The hottest wave-file loop with MFMA work, when it holds most of the waves' time
    (`estimated`: the rows' stall is latency − issue, a capture without a stall column)."""
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
    parts = _loop_stall(ctx, loop)
    loop_share = loop["split"]["loop_share"]
    facts = (
        f"The loop at rows {loop['first_index']}–{loop['last_index']} (starts at "
        f"{short_location(loop.get('first_source'))}) runs {loop['iterations']:,} iterations "
        f"({loop['iterations_per_wave']:g} per wave over {loop['waves']} waves) at "
        f"{loop['cycles_per_iteration']:,.0f} cycles/iteration and holds {loop_share:.0%} of the "
        f"waves' time; its MFMAs keep the SIMD's matrix pipe busy {busy:.0%} of the time a wave is "
        f"in it ({loop['mfma_pass_cycles']:,} MFMA pass cycles)"
    )
    stall_text = ("estimated stall cycles (latency − issue; no stall column)" if estimated
                  else "stall cycles")
    return _HotLoop(loop, busy, parts, ctx.share(parts.stall), facts, stall_text)


def _other_work_finding(ctx: PlanContext, hot: _HotLoop, limits: HotLoopThresholds) -> Finding:
    """MFMA busy low and the loop's stall mostly not memory: dependent work idles the matrix
    pipe. Its evidence and gain are that work's issue stall only (VALU, s_nop, MFMA, SALU): the
    waits and full-queue issue stalls inside the loop are the load findings' (GLUE, P1, LINE)."""
    busy, parts = hot.busy, hot.parts
    by_type: dict[str, int] = {}
    for ins in parts.ranked:
        kind = ins.get("type") or isa.OTHER
        by_type[kind] = by_type.get(kind, 0) + (ins.get("stall_cycles") or 0)
    work = sorted(((k, c) for k, c in by_type.items() if k in ISSUE_TYPES and c),
                  key=lambda item: -item[1])
    mix = ", ".join(f"{kind} {cycles / parts.stall:.0%}" for kind, cycles in work)
    memory = (f"; memory waits and queue-full issue stalls hold {hot.memory_fraction:.0%} (the "
              "load findings inside the loop)" if parts.stall else "")
    return ctx.finding(
        "W2-hot-loop-mfma-underused", hot.share,
        title=scoped_title(
            f"MFMA busy only {busy:.0%} of the hot loop: other work holds the pipe idle",
            "loop",
            "all stall inside the loop",
        ),
        cap="MED",
        estimated_gain=_umbrella_gain(
            ctx.share(parts.issue), *limits.other_hideable,
            "the loop's dependent VALU/s_nop/MFMA/SALU issue stall"
        ),
        scope="loop",
        root_cause=hot.facts
        + f". Of the loop's {parts.stall:,} {hot.stall_text}, dependent work waiting to issue holds "
        f"{parts.issue / parts.stall if parts.stall else 0:.0%} ({mix or 'none measured'})"
        f"{memory}: non-matrix work and its dependencies sit between the MFMAs.",
        fix=(
            "Overlap the non-MFMA work with matrix work: interleave independent VALU/"
            "transcendental work of tile k with the MFMAs of tile k+1 (or ping-pong two "
            "waves per SIMD), and fix the load findings inside the loop first."
        ),
        evidence=hot.evidence(ctx, ISSUE_TYPES, "dependent work stalled inside the loop"),
        effort="high",
    )


def _waits_finding(ctx: PlanContext, hot: _HotLoop, limits: HotLoopThresholds) -> Finding:
    """MFMA busy low and memory holds most of the loop's stall: deepen the software pipeline."""
    busy, stall, wait_stall = hot.busy, hot.parts.stall, hot.parts.waits
    gain = _umbrella_gain(ctx.share(wait_stall), *limits.wait_hideable,
                          "the loop's `s_waitcnt` stall")
    gain = Gain(
        gain.low,
        gain.high,
        gain.basis + f"; the MFMA pipe bounds it: the loop cannot run faster than its MFMA "
        f"work, {busy:.0%} of its time now",
    )
    held = (f"waits hold {hot.wait_fraction:.0%} of its stall"
            if hot.wait_fraction >= limits.wait_majority else
            f"memory holds {hot.memory_fraction:.0%} of its stall (waits "
            f"{hot.wait_fraction:.0%}, queue-full issue stalls "
            f"{hot.memory_fraction - hot.wait_fraction:.0%})")
    return ctx.finding(
        "W2-hot-loop-mfma-underused", hot.share,
        title=scoped_title(
            f"MFMA busy only {busy:.0%} of the hot loop: {held}",
            "loop",
            "all stall inside the loop",
        ),
        scope="loop",
        cap="MED",
        estimated_gain=gain,
        root_cause=hot.facts
        + f". {wait_stall:,} of the loop's {stall:,} {hot.stall_text} are `s_waitcnt` waits: "
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
        evidence=hot.evidence(ctx, WAIT_TYPES, "wait inside the loop"),
        # the software-pipelining change P1 / GLUE-line-loads ask for, loop-wide: their effort
        effort="medium",
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
                                       limits.mfma_gap_fillable),
        root_cause=hot.facts + ": memory latency is already hidden behind matrix work.",
        fix=(
            "Do not chase load latency in this loop. "
            + (f"The pipe still idles {1 - hot.busy:.0%} of the loop: the rows below (barriers, "
               "LDS reads and their waits between MFMA blocks) are those gaps; issue that work "
               "under the MFMA blocks (split the LDS reads and their waits across the MFMA "
               "cluster, partner waves' phases in step), then fewer MFMA pass cycles."
               if hot.busy < ctx.thresholds.of(VerdictThresholds).mfma_high_confidence else
               "Speed-ups need fewer MFMA pass cycles (a faster MFMA variant or lower precision, "
               "less redundant compute).")
        ),
        evidence=[ctx.evidence(ins, "stall inside the loop") for ins in hot.parts.ranked[:5]
                  if (ins.get("stall_cycles") or 0) > 0],
        effort="high",
    )
