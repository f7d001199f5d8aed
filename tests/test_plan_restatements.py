"""Line and region findings that restate a barrier cause finding follow every distinct change
(plan/pipeline.py restatements_last), on a small synthetic document (SYNTHETIC numbers)."""

from __future__ import annotations

from plan_synthetic import Ins, hotspot_doc

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Evidence, Gain, make_finding
from kerneltrace.plan.pipeline import restatements_last

PROGRAM = [
    Ins("buffer_load_dwordx4 v[0:3], v4, s[0:3], 0 offen", "VMEM-load", "k.py:5", stall=400),
    Ins("v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]", "MFMA", "k.py:6", stall=40),
    Ins("s_barrier", "barrier", "k.py:7", stall=3000),
    Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:8", stall=900),
]


def _finding(rule: str, rows: list[int], high: float, scope: str = "line"):
    return make_finding(rule, 0.1, id=f"{rule}@{rows}", scope=scope, title=rule, root_cause="",
                        fix="",
                        estimated_gain=Gain(high / 4, high, "test", unit="kernel_time"),
                        evidence=[Evidence(None, row) for row in rows])


def _ordered(findings, barrier_caused: bool | None = None):
    ctx = PlanContext(hotspot_doc(PROGRAM))
    if barrier_caused is not None:  # what the verdict facts say of the barrier stall
        ctx.__dict__["barrier_caused"] = barrier_caused
    return [f.id for f in restatements_last(findings, ctx)]


def test_a_barrier_region_after_its_cause_follows_the_distinct_changes():
    cause = _finding("BAR-ping-pong-phase", [3, 2], 0.3, scope="kernel")
    region = _finding("REGION-hotspot", [1, 2], 0.06)  # MFMA and barrier rows: the barrier waits
    burst = _finding("P2-vmem-queue-burst", [0], 0.02)
    memory = _finding("REGION-hotspot", [0, 3], 0.05)  # memory rows: a distinct change
    assert _ordered([cause, region, memory, burst]) == [cause.id, memory.id, burst.id, region.id]


def test_without_a_cause_finding_the_order_stays():
    barrier = _finding("BAR-dominated", [2], 0.3, scope="kernel")
    region = _finding("REGION-hotspot", [1, 2], 0.06)
    burst = _finding("P2-vmem-queue-burst", [0], 0.02)
    assert _ordered([barrier, region, burst]) == [barrier.id, region.id, burst.id]


def test_a_barrier_line_the_waits_before_it_explain_follows_them():
    # no barrier finding names the cause, but the verdict's facts do (code.json's segments)
    barrier = _finding("LINE-hotspot", [2, 3], 0.14)  # barrier 3000 + its wait 900: barrier stall
    wait = _finding("LINE-hotspot", [3, 0], 0.12)
    assert _ordered([barrier, wait], barrier_caused=True) == [wait.id, barrier.id]
    assert _ordered([barrier, wait], barrier_caused=False) == [barrier.id, wait.id]
