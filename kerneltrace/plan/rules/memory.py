"""Memory-bound verdicts from the L2 document (counters.md §5 decision tree) for VMEM-bound kernels."""

from __future__ import annotations

from kerneltrace.analysis.l2.verdicts import FRAC32_CLEAN as CLEAN_FRAC32
from kerneltrace.analysis.l2.verdicts import HIT_STREAMING as STREAMING_HIT_RATE
from kerneltrace.analysis.l2.verdicts import OVERFETCH_CLEAN as CLEAN_OVERFETCH
from kerneltrace.analysis.l2.verdicts import OVERFETCH_HIGH as HIGH_OVERFETCH
from kerneltrace.analysis.l2.verdicts import PEAK_PRACTICAL as PRACTICAL_PEAK
from kerneltrace.isa.classify import VMEM_LOAD, VMEM_WAIT
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, hiding_gain, scoped_title

VMEM_BOUND_SHARE = 0.4  # entry condition: most stall on vector loads and their waits


def _metric(metrics: dict, *names: str) -> float | None:
    for name in names:
        if isinstance(metrics.get(name), int | float):
            return float(metrics[name])
    return None


def memory_verdict(ctx: PlanContext) -> list[Finding]:
    """One verdict: scattered access, over-fetch, low achieved bandwidth, or at the practical limit."""
    share = ctx.type_share(VMEM_LOAD, VMEM_WAIT)
    metrics = ctx.l2_metrics
    if share < VMEM_BOUND_SHARE or not metrics:
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
    common = dict(stall_share=round(share, 4), location=None, evidence=[])
    if frac32 is not None and frac32 > 0.2:
        return [
            _finding(
                "MEM-scattered-access",
                "Scattered or misaligned loads fetch partial lines",
                "MED",
                f"{facts}: many 32-byte requests mean partial-line fetches.",
                "Make each wave read contiguous, aligned 64/128-byte segments (vectorised "
                "dwordx4 loads, coalesced lane-to-address mapping, aligned base pointers).",
                hiding_gain(share, 0.1, 0.4, "the vector-memory stall"),
                "medium",
                common,
            )
        ]
    if overfetch is not None and overfetch > HIGH_OVERFETCH:
        return [
            _finding(
                "MEM-overfetch",
                f"Kernel reads {overfetch:.1f}× the bytes it needs",
                "MED",
                f"{facts}: data is fetched more than once from memory.",
                "Reuse tiles through LDS/registers instead of re-reading, or reorder the "
                "grid so blocks sharing data run together (L2 reuse).",
                hiding_gain(share, 0.2, 0.5, "the vector-memory stall"),
                "high",
                common,
            )
        ]
    clean = (frac32 is None or frac32 < CLEAN_FRAC32) and (
        overfetch is None or CLEAN_OVERFETCH[0] <= overfetch <= CLEAN_OVERFETCH[1]
    )
    if clean and peak is not None and peak >= PRACTICAL_PEAK:
        streaming = hit is not None and hit < STREAMING_HIT_RATE
        return [
            _finding(
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
                "MEM-low-parallelism",
                f"VMEM-bound at only {peak:.0%} of peak HBM bandwidth",
                "MED",
                f"{facts}. Access is clean but bandwidth is far below ~50 % of peak "
                "(heuristic): probably too few loads in flight.",
                "Raise memory-level parallelism: more outstanding loads per wave (unroll, "
                "prefetch), more waves (occupancy), or a grid that fills every CU.",
                hiding_gain(share, 0.1, 0.4, "the vector-memory stall"),
                "medium",
                common,
            )
        ]
    return []


def _finding(
    rule: str, title: str, priority: str, root: str, fix: str, gain: Gain, effort: str, common: dict
) -> Finding:
    return Finding(
        id=rule,
        rule=rule,
        title=scoped_title(title, "kernel", "all vector-memory load and wait stall"),
        priority=priority,
        scope="kernel",
        estimated_gain=gain,
        root_cause=root,
        fix=fix,
        effort=effort,
        **common,
    )
