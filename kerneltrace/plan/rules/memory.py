"""Memory-bound findings from the L2 document (the L2 decision tree) for VMEM-bound kernels."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa.classify import VMEM_LOAD, VMEM_WAIT
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, hiding_gain, scoped_title
from kerneltrace.plan.occupancy_check import headroom as occupancy_headroom
from kerneltrace.plan.spec import FindingKind, plan_rule
from kerneltrace.thresholds import L2Thresholds, heuristic


@dataclass(frozen=True)
class MemoryThresholds:
    """MEM-*: what fixing the memory path hides (the decision tree itself: L2Thresholds)."""

    CONCERN = "memory"
    scattered_hideable: tuple[float, float] = heuristic((0.1, 0.4), "share of the vector-memory "
                                                        "stall coalescing the loads hides")
    overfetch_hideable: tuple[float, float] = heuristic((0.2, 0.5), "share of the vector-memory "
                                                        "stall removing re-reads hides")
    parallelism_hideable: tuple[float, float] = heuristic((0.1, 0.4), "share of the "
                                                          "vector-memory stall more loads in "
                                                          "flight hide")


def _metric(metrics: dict, *names: str) -> float | None:
    for name in names:
        if isinstance(metrics.get(name), int | float):
            return float(metrics[name])
    return None


@plan_rule(id="MEM-scattered-access", lever="memory-bytes", requires=("counters", "hotspots"),
           order=140, thresholds=(L2Thresholds, MemoryThresholds),
           variants=(FindingKind("MEM-overfetch", "memory-bytes"), FindingKind("MEM-low-parallelism", "memory-latency"), FindingKind("MEM-at-practical-limit", "none")))
def memory_verdict(ctx: PlanContext) -> list[Finding]:
    """VMEM-bound kernel judged by its L2 counters: scattered access, over-fetch, low parallelism,
    or at the practical limit.

    One verdict: scattered access, over-fetch, low achieved bandwidth, or at the practical limit.

    Trigger: VMEM-load + VMEM-wait ≥ 40 % of stall and an L2 document for the kernel; the L2
        decision tree: 32-byte fraction ≥ 25 %; over-fetch > 1.5; clean but < 50 % of peak
        (heuristic); clean and ≥ 50 % of peak → "loads are already at the practical limit"
    Evidence: L2 metrics in the text
    Gain: 10–50 % of VMEM stall, or none at the limit
    Fix: coalesce/align loads; reuse tiles instead of re-reading; more loads in flight; at the
        limit: leave the memory path"""
    tree = ctx.thresholds.of(L2Thresholds)
    limits = ctx.thresholds.of(MemoryThresholds)
    share = ctx.type_share(VMEM_LOAD, VMEM_WAIT)
    metrics = ctx.l2_metrics
    if share < tree.vmem_bound_share or not metrics:
        return []
    hit = _metric(metrics, "l2_hit_rate")
    frac32 = _metric(metrics, "read_32b_fraction")
    overfetch = _metric(metrics, "overfetch")
    peak = _metric(metrics, "fraction_of_peak")
    facts = ", ".join(
        f"{label} {value:.{digits}}"
        for label, value, digits in (
            ("L2 hit rate", hit, "1%"),
            ("32-byte request fraction", frac32, "1%"),
            ("over-fetch", overfetch, "2f"),
            ("achieved/peak HBM", peak, "0%"),
        )
        if value is not None
    )
    common = dict(share=share, evidence=[])
    if frac32 is not None and frac32 >= tree.frac32_scattered:
        return [
            _finding(
                ctx,
                "MEM-scattered-access",
                "Scattered or misaligned loads fetch partial lines",
                "MED",
                f"{facts}: many 32-byte requests mean partial-line fetches.",
                "Make each wave read contiguous, aligned 64/128-byte segments (vectorised "
                "dwordx4 loads, coalesced lane-to-address mapping, aligned base pointers).",
                hiding_gain(share, *limits.scattered_hideable, "the vector-memory stall"),
                "medium",
                common,
            )
        ]
    if overfetch is not None and overfetch > tree.overfetch_high:
        return [
            _finding(
                ctx,
                "MEM-overfetch",
                f"Kernel reads {overfetch:.1f}× the bytes it needs",
                "MED",
                f"{facts}: data is fetched more than once from memory.",
                "Reuse tiles through LDS/registers instead of re-reading, or reorder the "
                "grid so blocks sharing data run together (L2 reuse).",
                hiding_gain(share, *limits.overfetch_hideable, "the vector-memory stall"),
                "high",
                common,
            )
        ]
    clean = (frac32 is None or frac32 < tree.frac32_clean) and (
        overfetch is None or tree.overfetch_clean_low <= overfetch <= tree.overfetch_clean_high
    )
    if clean and peak is not None and peak >= tree.peak_practical:
        streaming = hit is not None and hit < tree.hit_streaming
        return [
            _finding(
                ctx,
                "MEM-at-practical-limit",
                "Loads are already at the practical limit: stop looking for memory-path fixes",
                "LOW",
                f"{facts}. "
                + (
                    "Pure streaming (every byte read once): a low L2 hit rate is expected and "
                    "raising it is not a goal. "
                    if streaming
                    else ""
                )
                + "Full lines, no redundant fetches and ≥50 % of peak is the practical ceiling.",
                "Leave the memory path; spend effort on overlap (issue loads earlier) or on "
                "reducing bytes (narrower data types, fusion).",
                Gain(
                    low=0.0, high=0.0, basis="no memory-path gain expected at the practical limit"
                ),
                "none",
                common,
            )
        ]
    if clean and peak is not None:
        return [
            _finding(
                ctx,
                "MEM-low-parallelism",
                f"VMEM-bound at only {peak:.0%} of peak HBM bandwidth",
                "MED",
                f"{facts}. Access is clean but bandwidth is far below ~50 % of peak "
                "(heuristic): probably too few loads in flight.",
                "Raise memory-level parallelism: more outstanding loads per wave (unroll, "
                "prefetch)"
                + (", more waves (occupancy)," if occupancy_headroom(ctx.hotspots)[0] else "")
                + " or a grid that fills every CU.",
                hiding_gain(share, *limits.parallelism_hideable, "the vector-memory stall"),
                "medium",
                common,
            )
        ]
    return []


def _finding(
    ctx: PlanContext, rule: str, title: str, priority: str, root: str, fix: str, gain: Gain,
    effort: str, common: dict
) -> Finding:
    return ctx.finding(
        rule,
        title=scoped_title(title, "kernel", "all vector-memory load and wait stall"),
        priority=priority,
        scope="kernel",
        estimated_gain=gain,
        root_cause=root,
        fix=fix,
        effort=effort,
        **common,
    )
