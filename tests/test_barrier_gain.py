"""The barrier family's gain from the wave timelines (plan/rules/barrier_gain.py): the barrier
waits during which the SIMD's matrix pipe idled, checked on demo_gemm's lockstep workgroups with a
planted straggler (the synthetic of tests/test_stragglers.py) and on a small document."""

from __future__ import annotations

import pytest
from test_stragglers import B_WAIT, BARRIER, LATE_SIMD, SPEC, synthetic

from kerneltrace.synth.barriers import synchronised
from kerneltrace.synth.simulate import simulate


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("barrier_gain"))


def test_barrier_gain_is_the_partners_wait_with_the_matrix_pipe_idle(root):
    """The barrier finding's gain comes from the wave timelines (docs/calibration.md section 3):
    its high end is the barrier wait during which the SIMD's MFMA pipe idled, a share of the
    waves' lifetime. Re-timing the same waves without the planted late wait measures what fixing
    it gains: the three partners of each workgroup waited for the straggler, the straggler's own
    extra stall is its wait finding's, so the barrier finding claims about 3/4 of that, never more."""
    doc, plan = synthetic("wait", root)
    planted = synchronised(simulate(SPEC), {BARRIER}, {LATE_SIMD: (B_WAIT, 2500)})
    clean = synchronised(simulate(SPEC), {BARRIER}, {})
    measured = 1 - sum(w.end - w.begin for w in clean) / sum(w.end - w.begin for w in planted)
    wait = doc["waves"]["peers"]["barrier_wait"]
    assert 0 < wait["mfma_idle_cycles"] <= wait["window_cycles"]
    lifetime = sum(w.end - w.begin for w in planted)
    bar = next(f for f in plan["findings"] if f["rule"] == "BAR-straggler-waits")
    gain = bar["estimated_gain"]
    assert gain["high"] == pytest.approx(wait["mfma_idle_cycles"] / lifetime, abs=1e-3)
    assert 0.7 * measured <= gain["high"] <= measured
    assert gain["low"] < gain["high"] and "wave timelines" in gain["basis"]
    # without wave files the stall prior stays (nothing says how long the pipe idled)
    _, blind = synthetic("wait", root, with_waves=False)
    assert all("wave timelines" not in (f.get("estimated_gain") or {}).get("basis", "")
               for f in blind["findings"])


def test_exposed_barrier_wait_is_the_idle_bound_pipe_share():
    """With MFMAs the bound pipe is the matrix pipe; without, any issue at all counts as work."""
    from kerneltrace.plan.context import PlanContext
    from kerneltrace.plan.findings import Gain
    from kerneltrace.plan.rules.barrier_gain import barrier_gain, exposed_barrier_wait

    def ctx(mfma_busy, waves=True):
        doc = {"instructions": [], "totals": {"stall_cycles": 1000}}
        if waves:
            doc["waves"] = {"waves": 4, "per_wave": {"duration": {"mean": 1000}},
                            "peers": {"pipe_busy": {"MFMA": mfma_busy},
                                      "barrier_wait": {"window_cycles": 900,
                                                       "mfma_idle_cycles": 800,
                                                       "non_hidden_cycles": 400}}}
        return PlanContext(doc)

    assert exposed_barrier_wait(ctx(0.3)) == (0.2, "the SIMD's matrix pipe was idle")
    assert exposed_barrier_wait(ctx(0.0))[0] == 0.1
    prior = Gain(0.01, 0.03, "stall prior")
    gain = barrier_gain(ctx(0.3), prior, 0.2, "a fix")
    assert (gain.low, gain.high, gain.unit) == (0.04, 0.2, "wave_time")
    assert barrier_gain(ctx(0.3, waves=False), prior, 0.2, "a fix") is prior
