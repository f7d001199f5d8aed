"""compare on changed work per wave: per-hit normalisation or "not-comparable", never a false
"regressed" (issue 11 point 8)."""

from __future__ import annotations

import pytest

from kerneltrace.compare.document import compare
from kerneltrace.compare.work import verdict_for_work, work_per_wave
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.synth import demo_gemm, write_dispatch_dir


def test_more_work_per_wave_is_not_a_regression(tmp_path):
    before = analyze_dispatch(write_dispatch_dir(tmp_path / "b", demo_gemm(iterations=4)), waves=True)
    after = analyze_dispatch(write_dispatch_dir(tmp_path / "a", demo_gemm(iterations=28)), waves=True)
    result = compare(before, after)
    work = result["work_per_wave"]
    assert work["ratio"] > 1.5 and work["comparable_per_wave"] is False
    assert result["verdict"] != "regressed"
    assert result["verdict"] == "not-comparable" or work["per_hit"]["latency_cycles"]["relative"] <= 0.1


def test_same_work_keeps_the_per_wave_verdict(tmp_path):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, demo_gemm()), waves=True)
    work = work_per_wave(doc, doc, 8, 8)
    assert work["comparable_per_wave"] and work["ratio"] == 1
    assert verdict_for_work("regressed", work, 0.05) == ("regressed", None)


def test_per_hit_regression_still_regresses():
    work = {"comparable_per_wave": False, "hits_per_wave_before": 100, "hits_per_wave_after": 700,
            "ratio": 7.0, "per_hit": {"latency_cycles": {"relative": 0.4}}}
    verdict, reason = verdict_for_work("regressed", work, 0.05)
    assert verdict == "regressed" and "+40.0%" in reason


@pytest.mark.shared
def test_shared_gemm_variants_are_not_a_false_regression(captures):
    base = captures / "flydsl-kernel-profiling-lib/examples"
    v1 = base / "preshuffle_gemm/att_viewer/big/ui_output_agent_58177_dispatch_135"
    v2 = base / "preshuffle_gemm_v2/att_viewer/big/ui_output_agent_63371_dispatch_15"
    result = compare(analyze_dispatch(v1, waves=True), analyze_dispatch(v2, waves=True))
    assert result["work_per_wave"]["comparable_per_wave"] is False
    assert result["verdict"] != "regressed"
