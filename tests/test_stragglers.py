"""Straggler analysis (issue 21.4): at each barrier, which wave arrived last and what made it late.

Synthetic: demo_gemm's workgroups re-timed in lockstep (kerneltrace.synth.barriers) with a known
late wave (SIMD 2) made late by a known instruction; the analysis must name that wave and that
row, the verdict follow the cause when it is a wait, and the barrier finding say so. Shared: the
real MFMA GEMM / flash-attention captures with wave files.
"""

from __future__ import annotations

from functools import cache

import pytest
from conftest import SHARED

from kerneltrace.analysis.waves.stragglers import (
    StragglerTotals,
    _instances,
    straggler_summary,
)
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.summary import build_summary
from kerneltrace.synth.barriers import synchronised
from kerneltrace.synth.simulate import LABEL_ROWS, simulate
from kerneltrace.synth.spec import demo_gemm
from kerneltrace.synth.writers import write_dispatch_dir

LATE_SIMD = 2
SPEC = demo_gemm("gfx942", iterations=8)
ROWS = {i + LABEL_ROWS: ins.asm for i, ins in enumerate(SPEC.instructions)}
BARRIER = next(r for r, asm in ROWS.items() if asm.startswith("s_barrier"))
B_WAIT = next(r for r, asm in ROWS.items() if asm == "s_waitcnt vmcnt(0)")  # after the B burst
VALU = next(r for r, asm in ROWS.items() if asm.startswith("v_add_u32_e32 v4"))


@cache
def synthetic(kind: str, tmp_root: str, with_waves: bool = True):
    from pathlib import Path

    row = B_WAIT if kind == "wait" else VALU
    waves = synchronised(simulate(SPEC), {BARRIER}, {LATE_SIMD: (row, 2500)})
    directory = write_dispatch_dir(Path(tmp_root) / f"{kind}{int(with_waves)}", SPEC, waves=waves,
                                   with_waves=with_waves)
    doc = analyze_dispatch(directory, waves=with_waves)
    return doc, build_summary([doc], [])["kernels"][0]["dispatches"][0]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("stragglers"))


def test_lockstep_waves_leave_each_barrier_together():
    waves = synchronised(simulate(SPEC), {BARRIER}, {LATE_SIMD: (B_WAIT, 2500)})
    group = [w for w in waves if (w.se, w.slot) == (0, 0)]
    releases = [[t + d for t, _, _, d, line in w.instructions if line == BARRIER] for w in group]
    assert len({len(r) for r in releases}) == 1 and len(releases[0]) == 8
    for k in range(8):
        assert len({r[k] for r in releases}) == 1  # one release per barrier instance
    late = next(w for w in group if w.simd == LATE_SIMD)
    least = [d for _, _, _, d, line in late.instructions if line == BARRIER]
    assert max(least) == 8  # the late wave never waits at the barrier: it is the last one


def test_the_planted_late_wave_and_its_wait_are_found(root):
    doc, _ = synthetic("wait", root)
    found = doc["waves"]["stragglers"]
    (barrier,) = found["barriers"]
    assert barrier["index"] == BARRIER and barrier["untraced"] == 0
    assert barrier["instances"] == SPEC.waves.shader_engines * SPEC.waves.slots * 8
    assert barrier["last_simd"] == {"simd": LATE_SIMD, "share": 1.0}
    assert barrier["charged"][0]["index"] == B_WAIT
    causes = doc["structure"]["barriers"]["stragglers"]
    assert causes["causes"][0]["cause"] == "global-load-wait"
    assert causes["causes"][0]["rows"][0] == B_WAIT
    assert causes["families"]["memory"]["share"] > 0.9


def test_verdict_and_finding_follow_a_wait_cause(root):
    _, plan = synthetic("wait", root)
    assert plan["bottleneck"]["kind"] == "memory-latency"
    assert "last-arriving wave" in plan["bottleneck"]["sentence"]
    bar = next(f for f in plan["findings"] if f["rule"].startswith("BAR-"))
    assert bar["rule"] == "BAR-straggler-waits"
    assert bar["evidence"][0]["instruction_index"] == B_WAIT
    assert "Barrier waits here are caused by waits on global loads" in bar["root_cause"]


def test_imbalance_cause_keeps_the_synchronisation_verdict(root):
    doc, plan = synthetic("valu", root)
    causes = doc["structure"]["barriers"]["stragglers"]
    assert causes["causes"][0]["cause"] == "valu" and VALU in causes["causes"][0]["rows"]
    assert plan["bottleneck"]["kind"] == "synchronisation"
    bar = next(f for f in plan["findings"] if f["rule"].startswith("BAR-"))
    assert bar["rule"] == "BAR-dominated"
    assert "caused by dependent VALU work" in bar["root_cause"]
    assert VALU in [e["instruction_index"] for e in bar["evidence"]]


def test_without_wave_files_the_code_json_segments_stay(root):
    doc, plan = synthetic("wait", root, with_waves=False)
    barriers = doc["structure"]["barriers"]
    assert "stragglers" not in barriers
    assert barriers["barriers"][0]["cause_index"] is not None
    assert "last-arriving" not in plan["bottleneck"]["sentence"]
    assert not any(f["rule"] == "BAR-straggler-waits" for f in plan["findings"])


def _event(wave, row, arrival, release, window, lost, rows, cycles, simd=0, scope=(0, 1)):
    return (scope, row, arrival, release, wave, window, lost, rows, cycles, simd)


def test_instances_split_by_release_and_wave():
    events = [_event("a", 5, 100, 210, 90, 10, [], []), _event("b", 5, 200, 212, 190, 100, [], []),
              _event("a", 5, 300, 400, 80, 0, [], []), _event("b", 5, 380, 401, 170, 0, [], []),
              _event("c", 5, 380, 402, 170, 0, [], [], scope=(1, 1))]
    sizes = sorted(len(i) for i in _instances(events))
    assert sizes == [1, 2, 2]


def test_wait_is_charged_to_the_stragglers_excess():
    totals = StragglerTotals(barrier=None)
    # wave a arrives at 100 and waits 108 cycles; b arrives last at 200 (8 cycles) having lost
    # 100 cycles at row 7 more than a did
    totals.events = [_event("a", 5, 100, 208, 90, 20, [7, 9], [10, 10]),
                     _event("b", 5, 200, 208, 190, 120, [7, 9], [110, 10], simd=1)]
    summary = straggler_summary(totals)
    (barrier,) = summary["barriers"]
    assert barrier["wait_cycles"] == 100 and barrier["last_simd"]["simd"] == 1
    assert barrier["charged"] == [{"index": 7, "cycles": 100}]


@pytest.mark.shared
@pytest.mark.parametrize("path", [
    "captures/flydsl-kernel-profiling-lib/examples/flash_attn_func/att_viewer/small/ui_output_agent_32235_dispatch_44",
    "captures/flydsl-kernel-profiling-lib/examples/preshuffle_gemm_v2/att_viewer/big/ui_output_agent_63371_dispatch_15",
])
def test_real_captures_have_stragglers_for_every_barrier(path):
    directory = SHARED / path
    if not directory.is_dir():
        pytest.skip(f"{path} not present")
    doc = analyze_dispatch(directory, waves=True)
    found = doc["waves"]["stragglers"]
    executed = {i["index"] for i in doc["instructions"] if i["asm"].startswith("s_barrier")
                and i.get("hits")}
    assert {b["index"] for b in found["barriers"]} == executed
    for barrier in found["barriers"]:
        assert barrier["single_wave"] == 0 and barrier["untraced"] == 0  # whole workgroups traced
        assert 0 < barrier["wait_cycles"] <= barrier["stall_cycles"]
    causes = doc["structure"]["barriers"]["stragglers"]
    assert causes["families"]["memory"]["share"] >= 0.5  # the last wave waits on its tile loads
