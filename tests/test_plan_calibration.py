"""Calibrated gains: wait findings state a kernel-time range that covers the re-timed outcomes.

Unit part: small synthetic documents. Shared part (../shared/calibration, skipped when absent):
for every published pair whose change addressed a before-plan finding, that finding's gain
range covers the measured change.
"""

from __future__ import annotations

import pytest
from calibration_pairs import PAIRS, dispatch_dir

from kerneltrace.compare.inputs import load_side
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.gains import CALIBRATED
from kerneltrace.plan.pipeline import run_all
from tests.plan_synthetic import Ins, hotspot_doc

WAIT = Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:12", stall=6000, latency=6000, hits=8)
BARRIER = Ins("s_barrier", "barrier", "k.py:14", stall=2000, latency=2000, hits=8)
WORK = Ins("v_add_f32 v1, v2, v3", "VALU", "k.py:13", stall=0, latency=2000, hits=8)


def findings_by_location(program, **kwargs):
    doc = hotspot_doc(program, **kwargs)
    doc["costs"] = {"total_cycles": sum(i["latency_cycles"] + i["idle_cycles"]
                                        for i in doc["instructions"])}
    return {f.location: f for f in run_all(PlanContext(doc))}


def test_wait_finding_gets_a_kernel_time_range_naming_its_evidence():
    found = findings_by_location([WAIT, WORK, BARRIER])
    wait, barrier = found["k.py:12"], found["k.py:14"]
    gain = wait.estimated_gain
    assert gain.unit == "kernel_time"
    # 6000 of 8000 stall cycles; the waves' time is the cost (latency + idle) = 10000 cycles.
    time_share = 0.75 * 8000 / 10000
    cal = CALIBRATED["VMEM-wait"]
    assert gain.low == pytest.approx(time_share * cal.low, abs=1e-4)
    assert gain.high == pytest.approx(time_share * cal.high, abs=1e-4)
    assert "AL BN64 nS2 orig→hack0" in gain.basis and "docs/calibration.md" in gain.basis
    assert gain.status.startswith("calibrated")
    # Uncalibrated findings are hypotheses, restated in the same unit (one currency, 21.1).
    assert barrier.estimated_gain.unit == "kernel_time"
    assert barrier.estimated_gain.status.startswith("hypothesis")
    assert "in kernel time" in barrier.estimated_gain.basis


def test_rank_and_priority_come_from_the_kernel_time_gain_alone():
    from kerneltrace.plan.findings import rank_score

    findings = run_all(PlanContext(hotspot_doc([WAIT, WORK, BARRIER])))
    ranked = [f for f in findings if f.ranked and not f.contradicts_verdict and not f.verdict_aligned]
    assert all(f.estimated_gain is None or f.estimated_gain.unit == "kernel_time" for f in findings)
    assert all(f.estimated_gain.ranking is None for f in findings if f.estimated_gain)
    scores = [rank_score(f) for f in ranked]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.shared
@pytest.mark.parametrize("pair", [p for p in PAIRS if p.addressed], ids=lambda p: p.name)
def test_calibrated_range_covers_the_measured_change(calibration, pair):
    doc = load_side(dispatch_dir(calibration, pair.before)).single
    findings = run_all(PlanContext(doc))
    finding = next(f for f in findings if (f.location or "").endswith(pair.addressed))
    gain = finding.estimated_gain
    assert gain.unit == "kernel_time"
    assert gain.low - 1e-4 <= -pair.measured_time_change <= gain.high + 1e-4
