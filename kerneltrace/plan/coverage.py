"""Whether the traced waves stand for the dispatch: the coverage factor on gains and the early-exit note.

From `structure.trace_coverage` (analysis/coverage.py: the traced span against the kernel
duration) judged with CoverageThresholds:

* the kernel-trace row describes this trace when the traced waves per CU agree with what its
  grid gives a CU (`row_match`); only then its duration bounds anything;
* the coverage factor c = min(1, span / duration): the kernel time outside the traced span (launch,
  ramp, other CUs' longer work) does not shrink when the traced waves do, so every kernel-time
  gain derived from the traced waves has its low end × c; its high end stays (other CUs may run
  the same waves for longer) unless the waves took an early-exit path;
* early exit: at most `early_exit_executed` of the code ran and c ≤ `early_exit_coverage` — the
  traced CUs' workgroups did no work, the kernel's time went to waves the trace did not see; both
  ends × c, a capture-quality note says to re-capture, and the verdict says so first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kerneltrace.plan.verdict import Bottleneck, doc_structure
from kerneltrace.thresholds import DEFAULT_COVERAGE, CoverageThresholds


@dataclass(frozen=True)
class Coverage:
    """The judged trace coverage of one dispatch."""

    facts: dict
    row_matches: bool
    factor: float | None  # min(1, coverage) when the row describes this trace, else None
    early_exit: bool

    def to_dict(self) -> dict:
        return {**self.facts, "row_matches": self.row_matches, "factor": self.factor,
                "early_exit": self.early_exit}

    @property
    def duration_us(self) -> float:
        return self.facts["duration_ns"] / 1000


def judged(doc: dict, limits: CoverageThresholds = DEFAULT_COVERAGE) -> Coverage | None:
    """The coverage of a hotspot document (None without wave timing or a kernel duration)."""
    facts = doc_structure(doc).get("trace_coverage")
    if not facts or facts.get("coverage") is None:
        return None
    traced, expected = facts.get("waves_per_cu"), facts.get("expected_waves_per_cu")
    matches = bool(traced and expected) and min(traced, expected) / max(traced, expected) >= limits.row_match
    factor = round(min(1.0, facts["coverage"]), 4) if matches else None
    executed = facts.get("executed_fraction")
    early = (factor is not None and executed is not None and executed <= limits.early_exit_executed
             and factor <= limits.early_exit_coverage)
    return Coverage(facts, matches, factor, early)


def gain_factors(cov: Coverage | None) -> tuple[float, float, str]:
    """(factor on the low end, on the high end, the clause every converted basis states)."""
    if cov is None or cov.factor is None or cov.factor >= 1:
        return 1.0, 1.0, ""
    span = f"the traced waves span {cov.factor:.0%} of the kernel's {cov.duration_us:.1f} µs"
    if cov.early_exit:
        return cov.factor, cov.factor, (
            f"; × {cov.factor:.2f} (trace coverage): {span} and ran an early-exit path "
            f"({cov.facts['executed_fraction']:.1%} of the code), so they do not stand for the dispatch")
    return cov.factor, 1.0, (
        f"; low end × {cov.factor:.2f} (trace coverage: {span}; the rest does not shrink unless "
        "other CUs run the same waves for longer)")


def capture_notes(cov: Coverage | None) -> list[dict]:
    """Capture-quality notes (never ranked): early exit, a kernel-trace row of another dispatch."""
    if cov is None:
        return []
    facts = cov.facts
    if cov.early_exit:
        return [{"kind": "early-exit", "note": (
            f"no work on the traced CUs: the traced waves ran {facts['executed_fraction']:.1%} of "
            f"the code and lived ~{facts['wave_duration_cycles']:,.0f} cycles each; their span "
            f"({facts['span_ns'] / 1000:.1f} µs) is {cov.factor:.0%} of the kernel's "
            f"{cov.duration_us:.1f} µs, so the kernel's work ran on workgroups the trace did not "
            "see. Re-capture targeting another CU/SE (or a dispatch whose traced workgroups get "
            "work) and check how the work is split across workgroups; gains below are scaled by "
            "the coverage")}]
    if not cov.row_matches and facts.get("waves_per_cu") and facts.get("expected_waves_per_cu"):
        return [{"kind": "kernel-trace-other-dispatch", "note": (
            f"the kernel-trace row (joined by {facts.get('kernel_trace_join') or 'name'}) gives "
            f"a CU {facts['expected_waves_per_cu']:g} waves, the trace shows "
            f"{facts['waves_per_cu']:g} per traced CU: its duration ({cov.duration_us:.1f} µs) is "
            "probably another dispatch's, so gains are not bounded by the trace coverage")}]
    return []


def with_early_exit(verdict: Bottleneck, cov: Coverage | None) -> Bottleneck:
    """The verdict, led by the re-capture when the traced waves took an early-exit path."""
    if cov is None or not cov.early_exit:
        return verdict
    facts = cov.facts
    return replace(
        verdict, confidence="low",
        sentence=(f"The traced waves did no work (early exit: {facts['executed_fraction']:.1%} of "
                  f"the code ran, {cov.factor:.0%} of the kernel's time is traced); of what they "
                  f"did: {verdict.sentence}"),
        evidence=[f"trace coverage {cov.factor:.0%} of {cov.duration_us:.1f} µs",
                  f"{facts['executed_fraction']:.1%} of the code executed", *verdict.evidence],
        helps=["re-capture targeting another CU/SE (or a dispatch whose traced workgroups get "
               "work) and check the work split across workgroups", *verdict.helps])


def work_split_notes(hotspot_doc: dict, limits: CoverageThresholds = DEFAULT_COVERAGE) -> list[dict]:
    """A capture-quality note (never ranked) when many traced waves did no work: the code.json
    totals then mix their prologue waits with the busy waves' work, and the kernel time is the
    busy waves' (waves.work_split; analysis/waves/work_split.py)."""
    split = (hotspot_doc.get("waves") or {}).get("work_split")
    if not split or split["empty_share"] < limits.empty_waves_note:
        return []
    return [{"kind": "empty-waves", "note": (
        f"{split['empty_waves']} of {split['waves']} traced waves ({split['empty_share']:.0%}) did no "
        f"work: each ran at most {split['empty_max_instructions']} instructions (~"
        f"{split['empty_mean_cycles']:,.0f} cycles) against the busiest wave's "
        f"{split['busiest_instructions']:,} (busy waves ~{split['busy_mean_cycles']:,.0f} cycles), "
        "leaving at the work-range check. "
        + ("The stall summary and the findings below are costed on the "
           f"{split['busy_waves']} busy waves alone (the empty waves' per-row cost subtracted), "
           if split.get("cost_basis") else
           "The per-row totals below mix their prologue waits with the busy waves' work, ")
        + "and the kernel's time is the busy waves': check how the work is split across workgroups "
        "(the metadata/partition that feeds that check) before tuning the prologue")}]

