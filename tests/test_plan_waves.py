"""Wave-level plan rules (hotspots/2 `waves`): fire when they should, stay silent otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from plan_synthetic import MFMA, Ins, hotspot_doc, mfma_loop_with_load

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.pipeline import run_all, run_rules
from kerneltrace.plan.rules import RULES, WAVE_RULES
from kerneltrace.plan.rules.waves import entry_waits_on_user_loads, wave_tail
from kerneltrace.plan.rules.waves_loop import hot_loop_mfma_busy

REPO = Path(__file__).resolve().parents[1]
ENTRY = "k.py:1"
LOAD = "global_load_dwordx4 v[20:23], v[2:3], off"


def _ref(index: int, program: list[Ins], **extra) -> dict:
    return {"index": index, "asm": program[index].asm, "source": program[index].source, **extra}


def _wait_entry(program, wait: int, producers: list[tuple[int, int]]) -> dict:
    stall = program[wait].stall
    refs = [
        _ref(i, program, cycles=c, share=c / stall if stall else 0, waits=4) for i, c in producers
    ]
    refs.sort(key=lambda r: -r["cycles"])
    return {
        **_ref(wait, program),
        "stall_cycles": stall,
        "hits": 4,
        "unattributed_cycles": stall - sum(c for _, c in producers),
        "producers": refs,
        "dominant_producer": refs[0] if refs and refs[0]["cycles"] else None,
    }


def _waves(waitcnt=(), loops=(), timing=None, duration=None, count=8) -> dict:
    return {
        "waves": count,
        "waitcnt": list(waitcnt),
        "loops": list(loops),
        "timing": timing,
        "per_wave": {"duration": duration} if duration else None,
        "longest_waves": [],
    }


def _glue_program() -> list[Ins]:
    """User line k.py:20 issues a load; the wait for it is charged to the entry line k.py:1."""
    return [
        Ins("s_load_dwordx2 s[0:1], s[4:5], 0x0", "SMEM", ENTRY, 0, 10),
        Ins("v_add_u32 v1, v2, v3", "VALU", ENTRY, 0, 4),
        Ins("s_mov_b32 s2, 0", "SALU", ENTRY, 0, 4),
        Ins(LOAD, "VMEM-load", "k.py:20", 50, 60),
        Ins("v_mul_f32 v4, v5, v6", "VALU", "k.py:30", 10, 14),
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", ENTRY, 900, 910),
        Ins("v_add_f32 v7, v20, v21", "VALU", "k.py:30", 40, 44),
    ]


def test_w1_attributes_glue_waits_to_the_user_load_line():
    program = _glue_program()
    waves = _waves([_wait_entry(program, 5, [(3, 800)])])
    ctx = PlanContext(hotspot_doc(program, entry=ENTRY, waves=waves))
    findings = entry_waits_on_user_loads(ctx)
    assert [f.location for f in findings] == ["k.py:20"]
    finding = findings[0]
    assert finding.stall_share == pytest.approx(800 / 1000, abs=1e-4)
    assert finding.priority == "HIGH"
    assert {e.instruction_index for e in finding.evidence} == {3, 5}
    assert "800" in finding.root_cause and "vector-memory load" in finding.title
    # the line's own stall is still explained by the fallback rule, and ranks after
    ids = [f.id for f in run_all(ctx)]
    assert "W1-entry-waits-on-loads@k.py:20" in ids


def test_w1_silent_without_waves_or_when_the_wait_is_on_a_user_line():
    program = _glue_program()
    # without a `waves` section the rules that require it do not run
    found = run_rules(PlanContext(hotspot_doc(program, entry=ENTRY)), RULES)
    assert not [f for f in found if f.rule in WAVE_RULES]
    # same trace, but the wait sits on a user line: nothing to re-attribute from glue
    program[5] = Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:30", 900, 910)
    waves = _waves([_wait_entry(program, 5, [(3, 800)])])
    assert (
        entry_waits_on_user_loads(PlanContext(hotspot_doc(program, entry=ENTRY, waves=waves))) == []
    )


def test_w1_ignores_producers_below_one_percent_and_glue_producers():
    program = _glue_program()
    waves = _waves([_wait_entry(program, 5, [(3, 5), (0, 895)])])  # mostly the glue s_load
    ctx = PlanContext(hotspot_doc(program, entry=ENTRY, waves=waves))
    assert entry_waits_on_user_loads(ctx) == []


def test_findings_on_a_wait_name_its_producer_and_gain_its_evidence():
    program = mfma_loop_with_load()
    plain = {f.id: f for f in run_all(PlanContext(hotspot_doc(program)))}
    waves = _waves([_wait_entry(program, 5, [(3, 850)])])
    sharpened = {f.id: f for f in run_all(PlanContext(hotspot_doc(program, waves=waves)))}
    p1 = sharpened["P1-loads-in-mfma-loop@k.py:20"]
    assert "wait #5" in p1.root_cause and "(#3, k.py:20)" in p1.root_cause
    assert "850 of its 900 stall cycles" in p1.root_cause
    assert "#5" not in plain["P1-loads-in-mfma-loop@k.py:20"].root_cause
    # producer already in the evidence: not duplicated
    assert [e.instruction_index for e in p1.evidence].count(3) == 1


def test_producer_on_another_line_is_added_as_evidence_and_flagged():
    program = mfma_loop_with_load()
    program.insert(0, Ins("global_load_dwordx4 v[40:43], v[2:3], off", "VMEM-load", "k.py:8", 0, 8))
    waves = _waves([_wait_entry(program, 6, [(0, 880)])])
    findings = {f.id: f for f in run_all(PlanContext(hotspot_doc(program, waves=waves)))}
    # the wait is on another line's load, so P1 does not claim it for k.py:20 ...
    assert "P1-loads-in-mfma-loop@k.py:20" not in findings
    # ... and the line's finding says where the wait's producer really is
    line = findings["LINE-hotspot@k.py:20"]
    assert "(#0, k.py:8, not this line)" in line.root_cause
    added = [e for e in line.evidence if e.instruction_index == 0]
    assert added and "producer of wait #6" in added[0].note


def test_entry_artifact_finding_lists_where_its_waits_come_from():
    program = _glue_program()
    waves = _waves([_wait_entry(program, 5, [(3, 800)])])
    findings = run_all(PlanContext(hotspot_doc(program, entry=ENTRY, waves=waves)))
    p5 = next(f for f in findings if f.rule == "P5-entry-line-artifact")
    assert "loads issued at k.py:20 (800 cycles)" in p5.root_cause
    assert not p5.ranked


def _loop_program() -> list[Ins]:
    body = [Ins(MFMA, "MFMA", "k.py:50", 0, 16) for _ in range(4)]
    body.insert(2, Ins(LOAD, "VMEM-load", "k.py:40", 100, 120))
    body.append(Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:41", 700, 710))
    body.append(Ins("s_cbranch_scc1 -6", "branch", "k.py:42", 0, 4))
    return [Ins("s_load_dword s2, s[0:1], 0x0", "SMEM", "k.py:2", 10, 20), *body]


def _loop(busy, loop_share=0.8, mfma_cycles=4096) -> dict:
    return {
        "first_index": 1,
        "last_index": 7,
        "first_source": "k.py:50",
        "last_asm": "s_cbranch_scc1 -6",
        "iterations": 64,
        "iterations_per_wave": 16.0,
        "entries": 4,
        "waves": 4,
        "cycles_per_iteration": 250.0,
        "cycles": 16000,
        "mfma_pass_cycles": mfma_cycles,
        "mfma_unknown_rows": [],
        "mfma_busy_fraction": busy,
        "split": {"loop_share": loop_share},
        "contains": [],
    }


def _loop_ctx(loop: dict) -> PlanContext:
    return PlanContext(hotspot_doc(_loop_program(), waves=_waves(loops=[loop])))


def test_w2_low_mfma_busy_with_dominant_waits_is_a_capped_kernel_wide_finding():
    findings = hot_loop_mfma_busy(_loop_ctx(_loop(0.3)))
    assert [f.rule for f in findings] == ["W2-hot-loop-mfma-underused"]
    finding = findings[0]
    assert finding.priority == "MED"  # umbrella: line findings rank first
    assert finding.location is None
    assert finding.stall_share == pytest.approx(800 / 810, abs=1e-4)
    assert "30%" in finding.title and "64 iterations" in finding.root_cause
    assert "250 cycles/iteration" in finding.root_cause
    assert "MFMA pipe bounds it" in finding.estimated_gain.basis


@pytest.mark.parametrize(
    "loop",
    [_loop(0.6), _loop(None), _loop(0.3, loop_share=0.1), _loop(0.3, mfma_cycles=0)],
    ids=["busy-enough", "busy-unknown", "cold-loop", "no-mfma"],
)
def test_w2_silent_when_it_should_be(loop):
    assert hot_loop_mfma_busy(_loop_ctx(loop)) == []


def test_w2_saturated_pipe_says_compute_bound():
    findings = hot_loop_mfma_busy(_loop_ctx(_loop(0.9)))
    assert [(f.rule, f.priority) for f in findings] == [("W2-hot-loop-mfma-bound", "LOW")]
    gain = findings[0].estimated_gain  # issue 21.1: no ranked finding without a gain
    assert gain.unit == "wave_time" and 0 < gain.low < gain.high
    # what the pipe's idle 10 % of the loop (80 % of the waves' time) offers: 30-70 % of 8 %
    assert (gain.low, gain.high) == (0.024, 0.056) and "idles 10% of it" in gain.basis
    busier = hot_loop_mfma_busy(_loop_ctx(_loop(0.97)))[0].estimated_gain
    assert busier.high < gain.high  # a fuller pipe leaves less in the loop


def test_line_findings_inside_the_loop_mention_it():
    ctx = _loop_ctx(_loop(0.3))
    findings = {f.location: f for f in run_all(ctx) if f.location}
    assert "inside the hot loop (rows 1–7, 250 cycles/iteration, MFMA busy 30%)" in (
        findings["k.py:41"].root_cause
    )


def _tail(p50, longest, tail, span=10_000, count=16) -> PlanContext:
    waves = _waves(
        timing={"span_cycles": span, "tail_cycles": tail, "begin_spread": 10},
        duration={"min": 100, "p50": p50, "p90": longest, "max": longest, "mean": p50},
        count=count,
    )
    return PlanContext(hotspot_doc(mfma_loop_with_load(), waves=waves))


def test_w3_tail_fires_on_uneven_waves():
    findings = wave_tail(_tail(p50=2000, longest=9000, tail=7000))
    assert [(f.rule, f.priority) for f in findings] == [("W3-wave-tail", "MED")]
    assert "70%" in findings[0].title and "2,000" in findings[0].root_cause
    gain = findings[0].estimated_gain  # the tail is CU time: a kernel-time range
    assert gain.unit == "kernel_time" and (gain.low, gain.high) == (0.0, 0.07)
    assert wave_tail(_tail(p50=2000, longest=9000, tail=3000))[0].priority == "LOW"


@pytest.mark.parametrize(
    "ctx",
    [
        _tail(p50=8000, longest=9000, tail=7000),  # balanced durations: waves started late
        _tail(p50=2000, longest=9000, tail=1000),  # short tail
        _tail(p50=2000, longest=9000, tail=7000, count=2),  # too few waves to judge
    ],
    ids=["balanced", "short-tail", "few-waves"],
)
def test_w3_silent_otherwise(ctx):
    assert wave_tail(ctx) == []


def _with_counts(ctx: PlanContext, longest: list[int], shortest: list[int]) -> PlanContext:
    waves = ctx.hotspots["waves"]
    waves["longest_waves"] = [{"file": f"w{k}.json", "duration": 9000, "instructions": n}
                              for k, n in enumerate(longest)]
    waves["shortest_waves"] = [{"file": f"s{k}.json", "duration": 500, "instructions": n}
                               for k, n in enumerate(shortest)]
    return PlanContext(ctx.hotspots)


def test_w3_needs_the_slow_waves_to_have_more_work():
    # every wave ran the same instructions (an RNG, a fill): the spread is contention, not a
    # work split's tail
    same = _with_counts(_tail(p50=2000, longest=9000, tail=7000), [7984, 7984], [7984, 7984])
    assert wave_tail(same) == []
    more = _with_counts(_tail(p50=2000, longest=9000, tail=7000), [19616, 17250], [1871, 4237])
    assert [f.rule for f in wave_tail(more)] == ["W3-wave-tail"]


GEMM = "flydsl-kernel-profiling-lib/examples/blockscale_preshuffle_gemm/att_viewer/big/ui_output_agent_14065_dispatch_120"


@pytest.mark.shared
def test_real_waves_document_attribution_matches_the_wave_analysis(captures):
    dispatch_dir = captures / GEMM
    if not dispatch_dir.is_dir():
        pytest.skip("capture not present")
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "hotspot_analyzer.py"),
            str(dispatch_dir),
            "--waves",
            "--json",
            "-",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert doc["schema"] == "kerneltrace.hotspots/2"
    ctx = PlanContext(doc)
    findings = run_all(ctx)
    # independent recomputation from the waves JSON: glue-line waits, by producer line
    lines = {i: line for line in doc["source_lines"] for i in line["instructions"]}
    expected: dict[str, int] = {}
    for wait in doc["waves"]["waitcnt"]:
        if not lines[wait["index"]]["artifact"]:
            continue
        for producer in wait["producers"]:
            line = lines[producer["index"]]
            if producer["cycles"] and not line["artifact"]:
                expected[line["location"]] = expected.get(line["location"], 0) + producer["cycles"]
    total = doc["totals"]["stall_cycles"]
    w1 = {f.location: f for f in findings if f.rule == "W1-entry-waits-on-loads"}
    assert w1, "this capture's entry line waits on user loads"
    assert set(w1) == {loc for loc, c in expected.items() if c / total >= 0.01}
    instructions = {ins["index"]: ins for ins in doc["instructions"]}
    for location, finding in w1.items():
        assert finding.stall_share == pytest.approx(expected[location] / total, abs=1e-4)
        for evidence in finding.evidence:
            assert evidence.asm == instructions[evidence.instruction_index]["asm"]
    # the hottest wait on a user line: its finding names the wait's dominant producer
    hot = next(w for w in doc["waves"]["waitcnt"] if not lines[w["index"]]["artifact"])
    owner = next(f for f in findings if f.location == lines[hot["index"]]["location"])
    assert f"#{hot['dominant_producer']['index']}" in owner.root_cause
    first_high = next(f for f in findings if f.priority == "HIGH" and f.scope == "line")
    assert first_high.location and not ctx.is_artifact(first_high.location)


def test_w2_low_busy_without_dominant_waits_names_the_stall_mix():
    program = _loop_program()
    program[6] = Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:41", 50, 60)
    program[3] = Ins("v_exp_f32 v9, v9", "VALU", "k.py:40", 600, 610)
    ctx = PlanContext(hotspot_doc(program, waves=_waves(loops=[_loop(0.3)])))
    findings = hot_loop_mfma_busy(ctx)
    assert [f.rule for f in findings] == ["W2-hot-loop-mfma-underused"]
    assert "other work" in findings[0].title and "VALU 92%" in findings[0].root_cause


def test_fallback_finding_waiting_on_a_scalar_load_gets_the_start_up_fix():
    program = [
        Ins("s_load_dwordx2 s[4:5], s[0:1], 0x10", "SMEM", ENTRY, 0, 8),
        Ins("v_add_u32 v1, v2, v3", "VALU", ENTRY, 0, 4),
        Ins("s_mov_b32 s2, 0", "SALU", ENTRY, 0, 4),
        Ins("s_nop 0", "nop", ENTRY, 0, 4),
        Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:12", 700, 710),
        Ins("v_mov_b32 v1, s4", "VALU", "k.py:12", 10, 14),
    ]
    waves = _waves([_wait_entry(program, 4, [(0, 700)])])
    findings = run_all(PlanContext(hotspot_doc(program, entry=ENTRY, waves=waves)))
    line = next(f for f in findings if f.id == "LINE-hotspot@k.py:12")
    assert "scalar load" in line.root_cause and "kernel-entry glue" in line.root_cause
    assert "paid once per wave" in line.fix
