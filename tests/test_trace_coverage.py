"""Trace coverage (traced span vs kernel duration, early exit) and the observed residency vs the
occupancy model: analysis/coverage.py, analysis/waves/residency.py, plan/coverage.py,
plan/occupancy_check.py, readers/realtime.py."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from kerneltrace.analysis.coverage import trace_coverage
from kerneltrace.analysis.launch import launch_context
from kerneltrace.analysis.waves.residency import residency_summary
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.coverage import capture_notes, gain_factors, judged
from kerneltrace.plan.occupancy_check import headroom, observed, without_occupancy_advice
from kerneltrace.plan.pipeline import run_all
from kerneltrace.plan.summary import build_summary
from kerneltrace.readers.realtime import realtime_mhz
from kerneltrace.render.plan import render_markdown
from kerneltrace.synth import demo_gemm, write_dispatch_dir


@pytest.fixture(scope="module")
def gemm_doc(tmp_path_factory):
    directory = write_dispatch_dir(tmp_path_factory.mktemp("cov"), demo_gemm(arch="gfx942"))
    return analyze_dispatch(directory, waves=True), directory


def _with_row(doc: dict, duration_ns: int, workgroups: int, *, executed: float | None = None) -> dict:
    """The document with a kernel-trace row (grid of `workgroups` 4-wave workgroups on 4 CUs)
    and its structure recomputed; `executed` rewrites the executed-instruction fraction."""
    doc = copy.deepcopy(doc)
    doc["metadata"] = {**(doc.get("metadata") or {}),
                       "kernel_trace": {"grid_size": [256 * workgroups, 1, 1],
                                        "workgroup_size": [256, 1, 1], "duration_ns": duration_ns},
                       "kernel_trace_join": "kernel_name",
                       "agent": {"cu_count": 4, "simd_per_cu": 4}}
    if executed is not None:
        doc["totals"] = {**doc["totals"],
                         "executed_instructions": round(executed * doc["totals"]["instructions"])}
    launch = launch_context(doc["metadata"]["kernel_trace"], doc["metadata"]["agent"],
                            doc.get("occupancy"), 64)
    launch = launch.to_dict() if launch else None
    doc["structure"] = {**doc["structure"], "launch": launch,
                        "trace_coverage": trace_coverage(doc, launch)}
    return doc


def _verdict(helps: list[str]):
    """A verdict (Bottleneck) with these helps."""
    from plan_synthetic import Ins, hotspot_doc

    verdict = PlanContext(hotspot_doc([Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:2", 9, 9)])).verdict
    return replace(verdict, helps=helps, does_not_help=[])


def test_realtime_clock_is_read_from_the_capture(gemm_doc):
    doc, directory = gemm_doc
    measured = realtime_mhz(directory)
    assert measured is not None and 1000 < measured < 3000
    assert doc["waves"]["clock_mhz"] == measured
    (directory / "realtime.json").rename(directory / "realtime.moved")
    try:
        assert realtime_mhz(directory) is None
    finally:
        (directory / "realtime.moved").rename(directory / "realtime.json")


def test_residency_counts_waves_alive_at_once_and_refills():
    # SE 0: two waves on SIMD 0 one after the other (a refill), one on SIMD 1 overlapping both
    per_wave = [("a", 0, 0, 0, 0, 100), ("b", 0, 0, 0, 100, 200), ("c", 0, 1, 0, 50, 150),
                ("d", 1, 0, 0, 0, 300), ("e", 1, 0, 1, 10, 290)]
    summary = residency_summary(per_wave)
    assert summary["max_waves_per_simd"] == 2  # SE 1 SIMD 0 holds d and e at once
    assert summary["max_waves_per_cu"] == 2
    assert summary["cus"] == 2 and summary["waves_per_cu"] == 2.5
    assert summary["refilled"] is True  # b began on SE 0 when a had ended
    overlapping = [("a", 0, 0, 0, 0, 100), ("c", 0, 1, 0, 50, 150)]
    assert residency_summary(overlapping)["refilled"] is False
    assert residency_summary([]) is None


def test_coverage_is_the_traced_span_over_the_kernel_duration(gemm_doc):
    doc, _ = gemm_doc
    facts = _with_row(doc, 4 * 12994, workgroups=8)["structure"]["trace_coverage"]
    assert facts["clock_source"].startswith("realtime.json")
    assert facts["span_ns"] == pytest.approx(doc["waves"]["timing"]["span_cycles"] * 1000
                                             / doc["waves"]["clock_mhz"], abs=0.1)
    assert facts["coverage"] == pytest.approx(0.25, abs=0.01)
    assert facts["expected_waves_per_cu"] == 8 and facts["waves_per_cu"] == 8
    assert trace_coverage({"waves": {}}, None) is None


def test_low_end_scaled_by_coverage_high_end_kept(gemm_doc):
    doc, _ = gemm_doc
    base = PlanContext(doc)
    covered = PlanContext(_with_row(doc, 2 * 12994, workgroups=8))
    assert covered.coverage.factor == pytest.approx(0.5, abs=0.01) and not covered.coverage.early_exit
    assert gain_factors(covered.coverage)[:2] == (covered.coverage.factor, 1.0)
    before = {f.id: f.estimated_gain for f in run_all(base) if f.ranked and f.estimated_gain}
    after = {f.id: f.estimated_gain for f in run_all(covered) if f.ranked and f.estimated_gain}
    shared = [key for key in before if key in after and before[key].low > 0
              and not key.startswith("LAUNCH")]
    assert shared
    for key in shared:
        assert after[key].low == pytest.approx(before[key].low * covered.coverage.factor, abs=2e-4)
        assert after[key].high == pytest.approx(before[key].high, abs=1e-4)
        assert "trace coverage" in after[key].basis


def test_a_row_of_another_dispatch_does_not_bound_gains(gemm_doc):
    doc, _ = gemm_doc
    # the row's grid gives each CU 32 waves, the trace shows 8: another dispatch's duration
    cov = judged(_with_row(doc, 8 * 12994, workgroups=32))
    assert cov is not None and not cov.row_matches and cov.factor is None
    assert gain_factors(cov) == (1.0, 1.0, "")
    (note,) = capture_notes(cov)
    assert note["kind"] == "kernel-trace-other-dispatch" and "32" in note["note"]


def test_early_exit_scales_both_ends_and_asks_for_a_recapture(gemm_doc):
    doc, _ = gemm_doc
    early = _with_row(doc, 10 * 12994, workgroups=8, executed=0.01)
    ctx = PlanContext(early)
    cov = ctx.coverage
    assert cov.early_exit and cov.factor == pytest.approx(0.1, abs=0.01)
    assert gain_factors(cov)[:2] == (cov.factor, cov.factor)
    assert ctx.verdict.confidence == "low" and ctx.verdict.helps[0].startswith("re-capture")
    normal = PlanContext(_with_row(doc, 10 * 12994, workgroups=8))
    assert not normal.coverage.early_exit and not normal.verdict.helps[0].startswith("re-capture")
    highs = {f.id: f.estimated_gain.high for f in run_all(normal) if f.ranked and f.estimated_gain}
    for finding in run_all(ctx):
        if finding.ranked and finding.estimated_gain and finding.id in highs:
            assert finding.estimated_gain.high == pytest.approx(highs[finding.id] * cov.factor,
                                                                abs=2e-4)
    summary = build_summary([early], [])
    entry = summary["kernels"][0]["dispatches"][0]
    assert entry["capture_quality"][0]["kind"] == "early-exit"
    assert entry["trace_coverage"]["early_exit"] is True
    text = render_markdown(summary, [early])
    assert "did no work: early exit" in text and "Re-capture targeting another CU/SE" in text
    assert "100.0% of the CUs get work" not in text


def _occupancy(waves: int, lds: int | None, workgroup: int | None = 8) -> dict:
    return {"waves_per_simd": waves, "limited_by": "vgpr", "tied_limiters": ["vgpr"],
            "limits": {"vgpr": waves, "sgpr": 8, "lds": lds, "workgroup": workgroup,
                       "hardware": 8}, "next_level": {}}


def _residency(per_simd: int, refilled: bool) -> dict:
    return {"waves": {"residency": {"max_waves_per_simd": per_simd, "max_waves_per_cu": 4 * per_simd,
                                    "cus": 3, "simds": 12, "waves_per_cu": 4.0,
                                    "refilled": refilled}}}


def test_observed_below_the_computed_limit_names_another_resource():
    doc = {"occupancy": _occupancy(4, None, None), **_residency(1, refilled=True), "structure": {}}
    seen = observed(doc)
    assert seen["status"] == "other-resource" and seen["observed"] == 1
    assert "likely LDS" in seen["text"]
    shown, why = headroom(doc)
    assert not shown and "1 wave(s)/SIMD" in why
    verdict = _verdict(["issue loads earlier", "more waves to overlap waits (occupancy)"])
    adjusted = without_occupancy_advice(verdict, doc)
    assert adjusted.helps == ["issue loads earlier"]
    assert adjusted.does_not_help[-1].startswith("more waves per SIMD (occupancy)")
    # no refill and no grid: the trace cannot tell the grid from a resource
    assert observed({**doc, **_residency(1, refilled=False)})["status"] == "unexplained"


def test_more_waves_advised_only_with_headroom():
    launch = {"launch": {"waves_per_simd_grid": 16.0}}
    doc = {"occupancy": _occupancy(2, 5), **_residency(2, refilled=True), "structure": launch}
    assert observed(doc)["status"] == "reached" and headroom(doc) == (True, "")
    verdict = _verdict(["more waves to overlap waits (occupancy)"])
    assert without_occupancy_advice(verdict, doc) == verdict
    # the grid supplies what the CU holds: no headroom
    capped = {**doc, "structure": {"launch": {"waves_per_simd_grid": 2.0}}}
    assert headroom(capped)[0] is False and "grid" in headroom(capped)[1]
    # LDS unknown (no kernel-trace row): no headroom shown
    assert headroom({**doc, "occupancy": _occupancy(2, None)})[0] is False


def test_occupancy_finding_yields_to_the_observed_residency():
    from plan_synthetic import Ins, hotspot_doc

    from kerneltrace.plan.rules.kernel_wide import occupancy_limited

    program = [Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:20", 900, 910)]
    occupancy = _occupancy(2, 5)
    doc = hotspot_doc(program, occupancy=occupancy)
    assert len(occupancy_limited(PlanContext(doc))) == 1
    doc["waves"] = {**(doc.get("waves") or {}), **_residency(1, refilled=True)["waves"]}
    assert occupancy_limited(PlanContext(doc)) == []


def test_summary_carries_the_observation(gemm_doc):
    doc, _ = gemm_doc
    entry = build_summary([doc], [])["kernels"][0]["dispatches"][0]
    json.dumps(entry)
    assert "occupancy_observed" in entry and "trace_coverage" in entry
