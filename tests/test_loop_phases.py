"""PHASE-before-hot-loop / PHASE-after-hot-loop (plan/rules/loop_phases.py) on synthetic captures
(SYNTHETIC numbers): once-per-wave code around a short hot loop that holds much of the waves' time."""

from __future__ import annotations

import plan_verdict_specs as specs

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.rules.loop_phases import RULE_AFTER, RULE_BEFORE, LoopPhaseThresholds
from kerneltrace.plan.summary import build_summary
from kerneltrace.synth import SynthInstruction as I
from kerneltrace.synth import write_dispatch_dir

MFMA = "v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]"


def _first_tile(latency: int) -> tuple:
    """The first tile's two loads, each waited before the next is issued."""
    return (I("global_load_dwordx4 v[4:7], v0, s[8:9]", 6, latency_cycles=latency),
            I("s_waitcnt vmcnt(0)", 6),
            I("global_load_dwordx4 v[8:11], v0, s[10:11]", 7, latency_cycles=latency),
            I("s_waitcnt vmcnt(0)", 7))


LOOP = (I("global_load_dwordx4 v[12:15], v1, s[8:9]", 10, latency_cycles=300),
        *(I(MFMA, 11, issue_cycles=16) for _ in range(8)),
        I("s_waitcnt vmcnt(0)", 12),
        I("s_cbranch_scc1", 13))


def _entry(tmp_path, prologue: tuple, trips: int = 3):
    body = (*prologue, *LOOP, I("global_store_dwordx4 v0, a[0:3], s[12:13]", 20))
    start = len(prologue)
    spec = specs._spec("phase_kernel", body, loop=(start, start + len(LOOP) - 1, trips))
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, spec), waves=True)
    return doc, build_summary([doc], [])["kernels"][0]["dispatches"][0]


def test_a_long_prologue_around_a_short_loop_is_named_with_its_waits(tmp_path):
    doc, entry = _entry(tmp_path, _first_tile(500), trips=8)
    (finding,) = [f for f in entry["findings"] if f["rule"] == RULE_BEFORE]
    waits = {i["index"] for i in doc["instructions"]
             if i["asm"] == "s_waitcnt vmcnt(0)" and i["index"] < 6}
    assert waits <= {e["instruction_index"] for e in finding["evidence"]}
    assert "before the hot loop" in finding["title"] and "8 iterations per wave" in finding["title"]
    low, high = LoopPhaseThresholds().removable
    gain = finding["estimated_gain"]
    assert gain["unit"] == "kernel_time" and 0 < gain["low"] < gain["high"]
    share = float(finding["title"].split("holds ")[1].split("%")[0]) / 100
    assert share >= LoopPhaseThresholds().min_share
    assert RULE_AFTER not in [f["rule"] for f in entry["findings"]]  # one store: a short epilogue


def test_a_short_prologue_is_no_finding(tmp_path):
    _, entry = _entry(tmp_path, _first_tile(20), trips=16)
    assert not [f for f in entry["findings"] if f["rule"].startswith("PHASE-")]


def test_a_hot_loop_inside_an_iterating_loop_is_a_tile_loop_not_a_phase():
    from kerneltrace.plan.rules.loop_phases import _in_tile_loop

    hot = {"first_index": 20, "last_index": 40, "iterates": True}
    once = {"first_index": 5, "last_index": 60, "iterates": False}  # a loop run once per wave
    tiles = {"first_index": 5, "last_index": 60, "iterates": True}
    assert not _in_tile_loop({"loops": [once, hot]}, hot)
    assert _in_tile_loop({"loops": [tiles, hot]}, hot)
