"""The gain model: every estimate bounded by the verdict, overlap groups, priority from the bound.

Its thresholds are kerneltrace.thresholds.GainThresholds (the calibrated ranges included: issue
17 tuned them against measured before/after pairs). The rules state a raw hypothesis (stall share × hideable fraction,
`findings.hiding_gain`); `bound_findings` then applies, in order:

1. **Lever vs verdict.** Each rule pulls one lever (its PlanRule's `lever`, plan/spec.py): memory latency, synchronisation,
   compute, issue, prologue, tail, occupancy, or none (information). A lever the verdict rules out
   (`CONTRADICTS`: e.g. hiding load latency in an MFMA-bound loop, or software pipelining in a
   streaming kernel without a loop) is marked `contradicts_verdict`, priority LOW.
2. **Ceiling.** Nothing that does not attack the bound claims more than the verdict's `ceiling`
   (compute-bound: 1 − hot-loop pipe busy, the time the bound pipe leaves free).
3. **Once per wave.** A finding citing only once-per-wave scalar loads and their waits (kernel
   arguments) pulls the `setup-latency` lever: at most MED (ruled out under `prologue`, whose own
   finding says to give each wave more work). A finding whose evidence instructions all run at most once per wave (kernel
   arguments, setup) is weighed against the wave's lifetime: its gain is bounded by the cost share
   (latency + idle) of those instructions times `once_per_wave_hideable`, and it is at most MED
   unless the verdict is `prologue` (then the fix is more work per wave, not the load).
4. **Overlap groups.** Ranked findings whose evidence instructions intersect claim the same stall
   cycles: they share `overlap_group` (the id of the group's first finding) and the group's gain
   is its largest member's, never the sum (`group_gain`).
5. **The verdict's finding leads its group**: other members of its overlap group are at most MED
   (`defer_to_verdict`), and every overlap group has one HIGH at most (`one_high_per_line`).
6. **Priority from the bounded gain** (`gain.high`): HIGH ≥ `high_gain`, MED ≥ `med_gain`, LOW
   below, never above the rule's own cap; findings without an estimate keep their priority (at
   most MED) except the verdict's own finding (a PlanRule `serves` the verdict), which is HIGH.
7. **Calibration** (`CALIBRATED`, issue 17): a finding that asks to hide a VMEM or LDS wait gets
   its gain stated as a range of *kernel time* — its share of the waves' time × the fraction
   that re-timed fixes of such waits removed, the pairs named in the basis (docs/calibration.md).
   It keeps the rank and priority of the stall hypothesis it replaces (`Gain.ranking`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kerneltrace.analysis.issue_mix import row_stall
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.coverage import gain_factors
from kerneltrace.plan.findings import PRIORITIES, Finding, Gain
from kerneltrace.plan.rules import CALIBRATED_RULES, VERDICT_RULES, spec_for
from kerneltrace.plan.rules.launch import RULE_SETUP
from kerneltrace.plan.verdict import (
    SETUP_TYPES,
    Bottleneck,
    cost_cycles,
    once_per_wave,
    total_stall,
    work_distribution_bound,
)
from kerneltrace.thresholds import DEFAULT_GAINS, GainThresholds, VerdictThresholds

# verdict kind -> levers it rules out (each rule's lever: its PlanRule spec, plan/rules/)
CONTRADICTS: dict[str, frozenset[str]] = {
    "compute-mfma": frozenset({"memory-pipeline", "memory-latency", "occupancy", "memory-bytes"}),
    "compute-valu": frozenset({"memory-pipeline", "memory-latency", "occupancy"}),
    "memory-streaming": frozenset({"memory-pipeline", "compute"}),
    "memory-bandwidth": frozenset({"memory-pipeline", "memory-latency", "occupancy", "compute"}),
    "prologue": frozenset({"memory-pipeline", "setup-latency"}),
}
MEMORY_LINE_TYPES = frozenset({"VMEM-wait", "VMEM-load", "LDS/SMEM-wait", "SMEM", "LDS"})


@dataclass(frozen=True)
class Calibration:
    """Fraction of a finding's share of the waves' time that re-timed fixes of it removed."""

    low: float
    high: float
    evidence: str  # the re-timed pairs (docs/calibration.md), named in every gain's basis


# Findings that ask to hide a wait (levers below) whose evidence is dominated by this wait type
# get a kernel-time gain: their share of the waves' time × [low, high] (GainThresholds
# vmem_wait_removed / lds_wait_removed). Ranges chosen to cover every re-timed change that
# addressed such a finding (docs/calibration.md; bench/bench_calibration.py prints the
# residuals); anything not calibrated stays a stall hypothesis.
CALIBRATION_EVIDENCE: dict[str, str] = {
    "VMEM-wait": (
        "gfx950 MXFP4 GEMM pairs re-timed by their authors: AL BN64 nS2 orig→hack0 (wait line "
        "50 % of wave time, kernel −9.2 %), AL BN64 nS3 orig→hack1 (48 %, −10.8 %), AL BN128 nS2 "
        "orig→hack2 (51 %, −8.3 %), M128 hack2→hack3 (21 %, −2.6 %)"),
    "LDS/SMEM-wait": (
        "one gfx950 MXFP4 GEMM pair re-timed by its authors: M128 hack1→hack2 prefetched every "
        "ds_read for a wait line holding 25 % of wave time and gained 0 % (the extra live "
        "registers halved the occupancy limit); upper end as for VMEM waits"),
}


def calibrations(limits: GainThresholds = DEFAULT_GAINS) -> dict[str, Calibration]:
    """The calibrated ranges per wait type, from the thresholds table."""
    return {"VMEM-wait": Calibration(*limits.vmem_wait_removed, CALIBRATION_EVIDENCE["VMEM-wait"]),
            "LDS/SMEM-wait": Calibration(*limits.lds_wait_removed,
                                         CALIBRATION_EVIDENCE["LDS/SMEM-wait"])}


CALIBRATED = calibrations()
CALIBRATED_LEVERS = frozenset({"memory-latency", "memory-pipeline"})
# Calibrated rules (their PlanRule says `calibrated=True`): line-level findings whose fix is what
# the re-timed changes did (issue the load earlier / wait later, for a wait that holds the line).
# Not calibrated: issue stalls of load bursts (P2), scalar metadata loads (P4), loop-wide
# umbrellas (W2) — no re-timed pair measured those.


def wait_type(finding: Finding, ctx: PlanContext) -> str | None:
    """The wait type holding most of the finding's evidence cycles (stall, else latency)."""
    cycles: dict[str, int] = {}
    for e in finding.evidence:
        ins = ctx.instructions.get(e.instruction_index)
        if ins is None:
            continue
        value = ins.get("stall_cycles")
        value = ins.get("latency_cycles") if value is None else value
        cycles[ins.get("type")] = cycles.get(ins.get("type"), 0) + int(value or 0)
    if cycles and max(cycles.values()) > 0:
        return max(cycles, key=cycles.get)
    # no evidence cycles (e.g. a legacy capture without a stall column): the located line's type
    line = next((entry for entry in ctx.hotspots.get("source_lines") or []
                 if finding.location and entry.get("location") == finding.location), None)
    return line.get("dominant_type") if line else None


def time_share(share: float, ctx: PlanContext) -> float:
    """A share of the ranking metric (stall, or latency in legacy captures) as a share of the
    traced waves' time (Σ wave lifetimes, else code.json cost = latency + idle)."""
    doc = ctx.hotspots
    _, metric = ctx.ranking_basis
    waves = doc.get("waves") or {}
    mean = ((waves.get("per_wave") or {}).get("duration") or {}).get("mean")
    lifetime = mean * waves["waves"] if mean and waves.get("waves") else None
    total = lifetime or (doc.get("costs") or {}).get("total_cycles") or metric
    if not metric or not total:
        return share
    return min(1.0, share * metric / total)


def calibrated_gain(finding: Finding, kind: str, ctx: PlanContext) -> Gain | None:
    """The kernel-time gain of a finding whose fix re-timed pairs measured, else None."""
    if (finding.rule not in CALIBRATED_RULES or finding.scope != "line" or not finding.ranked
            or kind not in CALIBRATED_LEVERS | {"line"} or finding.estimated_gain is None):
        return None
    cal = calibrations(ctx.thresholds.of(GainThresholds)).get(wait_type(finding, ctx) or "")
    if cal is None:
        return None
    share = time_share(finding.stall_share, ctx)
    return Gain(
        round(share * cal.low, 4), round(share * cal.high, 4),
        f"{cal.low:.0%}–{cal.high:.0%} of this finding's {share:.1%} of the waves' time, the "
        f"part that re-timed fixes of such waits removed (calibrated: {cal.evidence}; "
        "docs/calibration.md)",
        status="calibrated range — verify by re-timing",
        unit="kernel_time",
    )


def _cited(finding: Finding, ctx: PlanContext) -> list[dict]:
    """The instructions a finding's evidence cites, in evidence order."""
    return [ctx.instructions[e.instruction_index] for e in finding.evidence
            if e.instruction_index in ctx.instructions]


def setup_only(finding: Finding, ctx: PlanContext) -> bool:
    """True when (almost) all the stall a finding cites is once-per-wave scalar loads and their
    waits (kernel arguments): ≥ GainThresholds.setup_stall_share of it, weighted by stall."""
    cited = _cited(finding, ctx)
    total = total_stall(cited)
    setup = total_stall([ins for ins in cited
                         if ins.get("type") in SETUP_TYPES and once_per_wave(ctx.wave_count, ins)])
    share = ctx.thresholds.of(GainThresholds).setup_stall_share
    return bool(total) and setup >= share * total


def lever(finding: Finding, ctx: PlanContext) -> str:
    """The lever a finding pulls; LINE/REGION findings by the dominant type of their evidence;
    any finding citing only once-per-wave setup (kernel arguments) pulls `setup-latency`."""
    kind = spec_for(finding.rule).lever
    # the round-trip structure (SETUP) is a fix of the setup, not of one trip's latency: never
    # ruled out under the prologue verdict, whose first help it is
    if kind not in ("none", "prologue", "setup-round-trips") and setup_only(finding, ctx):
        return "setup-latency"
    if kind not in ("line", "region"):
        return kind
    types = {(ctx.instructions.get(e.instruction_index) or {}).get("type") for e in finding.evidence}
    if types & MEMORY_LINE_TYPES:
        return "memory-latency"
    if "barrier" in types:
        return "sync"
    if "nop" in types:
        return "issue"
    return "compute" if types & {"MFMA", "VALU"} else "line"


def stall_mostly(finding: Finding, ctx: PlanContext, kind: str) -> bool:
    """A line or region finding whose cited stall (the stall column, else latency beyond issue)
    is mostly on rows of instruction type `kind`."""
    if spec_for(finding.rule).lever not in ("line", "region"):
        return False
    cited = _cited(finding, ctx)
    stall = sum(map(row_stall, cited))
    return stall > 0 and 2 * sum(row_stall(ins) for ins in cited if ins.get("type") == kind) >= stall


def mfma_stall_only(finding: Finding, ctx: PlanContext) -> bool:
    """A line or region finding whose cited stall is mostly on MFMA rows."""
    return stall_mostly(finding, ctx, "MFMA")


def _cap(priority: str, cap: str) -> str:
    return max(priority, cap, key=PRIORITIES.index)


def priority_for_gain(high: float, limits: GainThresholds = DEFAULT_GAINS) -> str:
    return "HIGH" if high >= limits.high_gain else "MED" if high >= limits.med_gain else "LOW"


def _bounded(gain: Gain, high: float, why: str) -> Gain:
    if gain.high <= high:
        return gain
    return replace(gain, low=round(min(gain.low, high), 4), high=round(high, 4),
                   basis=f"{gain.basis}; bounded to {high:.1%} by {why}")


def _once_per_wave_cost(finding: Finding, ctx: PlanContext) -> float | None:
    """Cost share (latency + idle) of the finding's evidence when all of it runs once per wave."""
    cited = _cited(finding, ctx)
    if not cited or not all(once_per_wave(ctx.wave_count, ins) for ins in cited):
        return None
    if not has_repeats(ctx):
        return None  # straight-line kernel: everything runs once per wave, nothing to weigh
    total = (ctx.hotspots.get("costs") or {}).get("total_cycles") or 0
    cost = sum(cost_cycles(ins) for ins in cited)
    return cost / total if total else None


def has_repeats(ctx: PlanContext) -> bool:
    """True when some instruction runs more than once per wave (the kernel loops)."""
    waves = ctx.wave_count
    return bool(waves) and any((ins.get("hits") or 0) > waves
                               for ins in ctx.hotspots.get("instructions") or [])


def overlap_groups(findings: list[Finding]) -> None:
    """Give ranked line findings that cite a common instruction one `overlap_group` (the first
    one's id). Loop- and kernel-scope findings are umbrellas over the line findings inside them
    (their titles say so); they do not link groups."""
    groups: list[tuple[set[int], list[Finding]]] = []
    for finding in findings:
        finding.overlap_group = None
        if not finding.ranked or finding.scope != "line":
            continue
        cited = {e.instruction_index for e in finding.evidence if e.instruction_index is not None}
        if not cited:
            continue
        joined = [g for g in groups if g[0] & cited]
        merged_set = set(cited).union(*(g[0] for g in joined))
        members = [m for g in joined for m in g[1]] + [finding]
        groups = [g for g in groups if g not in joined] + [(merged_set, members)]
    for _, members in groups:
        if len(members) < 2:
            continue
        members.sort(key=lambda f: findings.index(f))
        lead = members[0].id
        for member in members:
            member.overlap_group = lead


def group_gain(findings: list[Finding], unit: str = "stall_cycles") -> float:
    """Upper bound of what the findings whose gain is in `unit` claim together: per overlap group
    of line findings its largest member; an umbrella (loop/kernel scope) covers the same stall as
    the lines inside it, so the total is the larger of the line groups' sum and the largest
    umbrella. Calibrated kernel-time gains and stall-cycle hypotheses are never added together."""
    best: dict[str, float] = {}
    umbrella = 0.0
    for finding in findings:
        gain = finding.estimated_gain
        if gain is None or not finding.ranked or gain.unit != unit:
            continue
        if finding.scope != "line":
            umbrella = max(umbrella, gain.high)
            continue
        key = finding.overlap_group or finding.id
        best[key] = max(best.get(key, 0.0), gain.high)
    return max(sum(best.values()), umbrella)


def bound_findings(findings: list[Finding], verdict: Bottleneck, ctx: PlanContext) -> list[Finding]:
    """Apply the verdict's bounds to every finding (in place) and return them."""
    limits = ctx.thresholds.of(GainThresholds)
    hideable = limits.once_per_wave_hideable
    ruled_out = CONTRADICTS.get(verdict.kind, frozenset())
    own = VERDICT_RULES.get(verdict.kind, frozenset())
    for finding in findings:
        kind = lever(finding, ctx)
        gain = finding.estimated_gain
        if finding.rule in own:
            finding.priority = "HIGH" if finding.ranked else finding.priority
            finding.verdict_aligned = True
            continue
        if kind in ruled_out:
            finding.contradicts_verdict = True
        # compute and launch fixes attack the bound (a launch fix puts idle CUs to work whatever
        # bounds each wave), but MFMA rows waiting for a matrix pipe the loop keeps full are
        # back-pressure: what the bound leaves is all a fix of them can take (issue 21.8)
        back_pressure = (kind == "compute" and verdict.kind == "compute-mfma"
                         and mfma_stall_only(finding, ctx))
        inside_ceiling = kind not in ("compute", "launch") or back_pressure
        if gain is not None and inside_ceiling and verdict.ceiling < 1:
            gain = _bounded(gain, verdict.ceiling, f"the {verdict.kind} verdict (what the bound "
                            f"leaves: {verdict.ceiling:.1%} of stall)")
        once = _once_per_wave_cost(finding, ctx) if finding.location else None
        if kind == "setup-latency" and verdict.kind != "prologue":
            finding.once_per_wave = True
            finding.priority = _cap(finding.priority, "MED")
            serial = (ctx.structure.get("setup") or {}).get("serialized_round_trips")
            finding.fix = (f"{finding.fix} These are once-per-wave kernel-argument/setup loads"
                           + (": several serialized round trips — hoist the late batches into the "
                              "first (SETUP finding)." if serial else
                              ": one round trip, its latency is fixed; it matters less when each "
                              "wave does more work."))
        if once is not None:
            finding.once_per_wave = True
            if gain is not None:
                gain = _bounded(gain, once * hideable,
                                "a cost paid once per wave (its share of the waves' lifetime × "
                                f"{hideable:.0%} overlappable)")
            if verdict.kind != "prologue":
                finding.priority = _cap(finding.priority, "MED")
                finding.fix = (f"{finding.fix} This cost is paid once per wave: it shrinks "
                               "relative to the wave's work when each wave does more (several "
                               "tiles per wave, persistent waves).")
        finding.estimated_gain = gain
        if gain is not None and gain.high > 0:
            finding.priority = _cap(priority_for_gain(gain.high, limits), finding.priority)
        elif gain is None:
            finding.priority = _cap(finding.priority, "MED")
        if finding.contradicts_verdict:
            finding.priority = "LOW"
        elif gain is not None:
            calibrated = calibrated_gain(finding, kind, ctx)
            if calibrated is not None:
                # stated in kernel time, ranked (and prioritised) as the hypothesis it replaces
                finding.estimated_gain = replace(_bounded(calibrated, gain.high, "the stall "
                                                          "hypothesis' bound"), ranking=gain.high)
    return findings


# One currency (issue 21.1): every ranked finding's gain is a fraction of kernel time; the
# thresholds (HIGH/MED, the no-wave-files prior) are GainThresholds fields.


def kernel_time_factor(ctx: PlanContext) -> tuple[float, float, str]:
    """(factor for the low end, for the high end, why) turning a share of the ranking metric
    (stall, or latency without a stall column) into a share of the traced waves' time: metric /
    the waves' lifetime × the part not hidden by other waves (wave files). How far the traced
    waves stand for the dispatch is `coverage_factors` (the same for every finding)."""
    doc = ctx.hotspots
    _, metric = ctx.ranking_basis
    lifetime_share = time_share(1.0, ctx) if metric else 1.0
    peers = (doc.get("waves") or {}).get("peers") or {}
    hidden = peers.get("non_hidden_share")
    if isinstance(hidden, int | float):
        factor = lifetime_share * hidden
        why = (f"× {lifetime_share:.2f} (cycles / the waves' lifetime) × {hidden:.2f} (not hidden by "
               "other waves)")
        return factor, factor, why
    return lifetime_share * ctx.thresholds.of(GainThresholds).no_waves_low, lifetime_share, (
        f"× {lifetime_share:.2f} (cycles / the waves' lifetime); no wave files: the low end halved "
        "(how much other waves hid is unknown)")


# levers whose cycles every wave pays however the work is split (kernel arguments, the launch)
PAID_PER_WAVE = frozenset({"setup-latency", "setup-round-trips", "launch", "prologue"})


def after_repartition(ctx: PlanContext) -> float | None:
    """Under a work-distribution verdict, the share of an in-work finding's cycles that stays on
    the critical path once the verdict's fix spreads the work over every wave (its `spread`);
    None under any other verdict (docs/calibration.md §Work distribution)."""
    if ctx.verdict.kind != "launch-bound":
        return None
    bound = work_distribution_bound(ctx.hotspots, ctx.thresholds.of(VerdictThresholds))
    return bound.spread if bound is not None else None


def in_kernel_time(findings: list[Finding], ctx: PlanContext) -> None:
    """Restate every ranked gain as a fraction of kernel time (calibrated and launch gains
    already are) and set the priority from it alone. Under a work-distribution verdict the
    gains of in-work findings are those left once the work is spread (`after_repartition`)."""
    low_f, high_f, why = kernel_time_factor(ctx)
    cover_low, cover_high, covered = gain_factors(ctx.coverage)
    spread = after_repartition(ctx)
    limits = ctx.thresholds.of(GainThresholds)
    for finding in findings:
        gain = finding.estimated_gain
        if gain is None or not finding.ranked:
            if finding.ranked and not finding.verdict_aligned:
                finding.priority = "LOW"  # no kernel-time gain: not a change to make first
            continue
        if gain.unit != "kernel_time":
            if gain.unit == "wave_time":
                low, high = gain.low * (low_f / high_f if high_f else 1), gain.high
                note = "a share of the waves' time"
            else:
                low, high = gain.low * low_f, gain.high * high_f
                note = why
            gain = Gain(round(low, 4), round(min(1.0, high), 4),
                        f"{gain.basis}; in kernel time {note}", status=gain.status,
                        unit="kernel_time")
        else:
            gain = replace(gain, ranking=None)
        if covered and spec_for(finding.rule).lever != "launch":
            # a share of the traced waves' time is a share of kernel time only as far as they
            # span the kernel (the grid's idle share, a launch gain, is not theirs)
            gain = replace(gain, low=round(gain.low * cover_low, 4),
                           high=round(gain.high * cover_high, 4), basis=gain.basis + covered)
        if spread is not None and not finding.verdict_aligned and lever(finding, ctx) not in PAID_PER_WAVE:
            gain = replace(gain, low=round(gain.low * spread, 4), high=round(gain.high * spread, 4),
                           basis=(f"{gain.basis}; × {spread:.2f} once the work is spread over "
                                  "every wave (the verdict's fix: this work's cycles on the "
                                  "critical path shrink with it, the once-per-wave setup's do "
                                  "not)"))
        ceiling = ctx.verdict.time_ceiling
        if finding.contradicts_verdict and (gain.high > ceiling or gain.low > 0):
            # what re-timed fixes of such a kernel gained: from nothing up to the ceiling
            why = (f"the {ctx.verdict.kind} verdict, which rules this lever out (what re-timed "
                   "fixes of such a kernel gained)")
            bounded = _bounded(gain, ceiling, why)
            gain = replace(bounded, low=0.0, basis=bounded.basis if bounded is not gain
                           else f"{gain.basis}; from 0: {why}")
        finding.estimated_gain = gain
        level = ("HIGH" if gain.high >= limits.kernel_time_high
                 else "MED" if gain.high >= limits.kernel_time_med else "LOW")
        if finding.once_per_wave and ctx.verdict.kind != "prologue":
            level = _cap(level, "MED")  # paid once per wave: more work per wave is the fix
        if finding.location and ctx.is_artifact(finding.location):
            level = _cap(level, "MED")  # a glue bucket is never the thing to fix first
        finding.priority = "LOW" if finding.contradicts_verdict else level
    setup_waits_defer(findings, ctx)


def setup_waits_defer(findings: list[Finding], ctx: PlanContext) -> None:
    """With serialized kernel-argument round trips (the SETUP finding), a finding on the round
    trips' waits (lever `setup-latency`: a line or region of once-per-wave scalar loads) is the
    SETUP change seen from one line: what changing the round trips removes is the late trips'
    waits (the first trip's latency stays), so it claims no more than the SETUP finding and
    follows it."""
    setup = next((f for f in findings if f.rule == RULE_SETUP and f.ranked
                  and f.estimated_gain is not None), None)
    if setup is None:
        return
    limits = ctx.thresholds.of(GainThresholds)
    for finding in findings:
        gain = finding.estimated_gain
        if (finding is setup or not finding.ranked or gain is None
                or lever(finding, ctx) != "setup-latency" or gain.high <= setup.estimated_gain.high):
            continue
        finding.estimated_gain = _bounded(
            gain, setup.estimated_gain.high, "the SETUP finding (what changing the kernel-"
            "argument round trips removes: the late trips' waits; the first trip's latency stays)")
        level = ("HIGH" if finding.estimated_gain.high >= limits.kernel_time_high
                 else "MED" if finding.estimated_gain.high >= limits.kernel_time_med else "LOW")
        finding.priority = _cap(finding.priority, level)


def defer_to_verdict(findings: list[Finding]) -> None:
    """Findings citing an instruction the verdict's own finding cites (or in its overlap group)
    claim its cycles: at most MED (the verdict's finding says what to do with that stall)."""
    own = [f for f in findings if f.verdict_aligned]
    cited = {e.instruction_index for f in own for e in f.evidence if e.instruction_index is not None}
    led = {f.overlap_group for f in own if f.overlap_group}
    # one currency: a finding claiming more kernel time than the verdict's own is the better
    # statement of the change (it ranks above it) and keeps its priority
    own_high = max((f.estimated_gain.high for f in own if f.estimated_gain), default=0.0)
    for finding in findings:
        if finding.verdict_aligned or not finding.ranked:
            continue
        if finding.estimated_gain is not None and finding.estimated_gain.high > own_high:
            continue
        mine = {e.instruction_index for e in finding.evidence}
        if finding.overlap_group in led or mine & cited:
            finding.priority = _cap(finding.priority, "MED")


def one_high_per_line(findings: list[Finding]) -> None:
    """Findings in one overlap group explain the same stall cycles (on one line, or a line and
    the region or glue-line view of the same waits): only the first of them (in priority order)
    stays HIGH, the rest are at most MED."""
    seen: set[str] = set()
    for finding in findings:
        if not (finding.ranked and finding.overlap_group):
            continue
        if finding.overlap_group in seen:
            finding.priority = _cap(finding.priority, "MED")
        seen.add(finding.overlap_group)
