"""The plan's memory rule and the L2 report agree on when over-fetch is "clean" (one threshold)."""

from __future__ import annotations

import pytest
from plan_synthetic import Ins, hotspot_doc

from kerneltrace.analysis.l2.decision_tree import verdicts
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.rules.memory import memory_verdict
from kerneltrace.thresholds import DEFAULT_L2


def _l2(overfetch: float) -> dict:
    aggregate = {"l2_hit_rate": 0.017, "read_32b_fraction": 0.0, "overfetch": overfetch,
                 "fraction_of_peak": 0.54}
    return {"schema": "kerneltrace.l2/1", "kernel": "gemm_kernel", "aggregate": aggregate,
            "ratio_of_sums": {"fraction_of_peak": 0.54},
            "peak": {"source": "arch table", "reason": None}, "verdicts": []}


def _plan_says_practical_limit(l2: dict) -> bool:
    program = [Ins("global_load_dwordx4 v[4:7], v[2:3], off", "VMEM-load", "k.py:80", 500, 520),
               Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:80", 500, 510)]
    findings = memory_verdict(PlanContext(hotspot_doc(program), l2))
    return [f.rule for f in findings] == ["MEM-at-practical-limit"]


@pytest.mark.parametrize("overfetch", [0.85, 0.95, 1.04, DEFAULT_L2.overfetch_clean_high, 1.15, 1.2, 1.3])
def test_practical_limit_verdict_agrees_with_the_l2_report(overfetch):
    l2 = _l2(overfetch)
    report_says = any("practical limit" in line for line in verdicts(l2))
    assert _plan_says_practical_limit(l2) == report_says


def test_a_15_percent_over_fetch_is_not_clean():
    # 1.15x was "clean" for the plan (≤ 1.2) but not for the L2 report (≤ 1.1)
    assert not _plan_says_practical_limit(_l2(1.15))
    assert _plan_says_practical_limit(_l2(1.05))
