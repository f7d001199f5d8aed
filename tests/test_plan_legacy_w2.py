"""W2 on a capture without a stall column: stall estimated per row, never "0 stall cycles"."""

from __future__ import annotations

import pytest

from kerneltrace.plan.summary import build_summary


@pytest.mark.shared
def test_w2_of_a_legacy_capture_reads_estimated_stall(calibration):
    from kerneltrace.document.hotspot_report import analyze_dispatch

    (dispatch,) = (calibration / "aiter-glog-fork-calibration/skinny_M128/att_hack0").glob(
        "ui_output_agent_*")
    doc = analyze_dispatch(dispatch, waves=True)
    findings = build_summary([doc], [])["kernels"][0]["dispatches"][0]["findings"]
    (w2,) = [f for f in findings if f["rule"].startswith("W2-")]
    assert "estimated stall cycles (latency − issue; no stall column)" in w2["root_cause"]
    assert " 0 stall cycles" not in w2["root_cause"] and "()" not in w2["root_cause"]
    assert w2["estimated_gain"]["high"] > 0  # a loop of real waits, not a zero-gain umbrella
    assert all(e["stall_cycles"] is None for e in w2["evidence"])  # nothing measured is claimed
