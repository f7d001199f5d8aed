"""Most waves exit at the work-range gate: the plan costs the work on the busy waves and leads with
the work distribution (document/busy_view.py, plan/verdict.py `work_distribution`, plan/rules/work_split.py)."""

from __future__ import annotations

import copy
from functools import cache

import pytest

from kerneltrace.analysis.exit_gate import exit_gate
from kerneltrace.document.busy_view import busy_view
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.rules.work_split import RULE
from kerneltrace.plan.summary import build_summary
from kerneltrace.plan.verdict import work_split_gain
from kerneltrace.synth import simulate, write_dispatch_dir
from kerneltrace.synth.simulate import LABEL_ROWS, aggregate
from kerneltrace.synth.work_split import demo_work_split
from kerneltrace.thresholds import DEFAULT_COVERAGE

GATE, LATE_LOAD, LOOP_WAIT = 7, 8, 13  # instruction indexes of demo_work_split


@cache
def _doc(busy_slots: int, tmp_root: str) -> dict:
    from pathlib import Path

    directory = write_dispatch_dir(Path(tmp_root) / f"busy{busy_slots}", demo_work_split(busy_slots=busy_slots))
    return analyze_dispatch(directory, waves=True)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("work_split"))


def _entry(doc: dict, thresholds: dict | None = None) -> dict:
    return build_summary([doc], [], thresholds=thresholds)["kernels"][0]["dispatches"][0]


def _ranked(entry: dict) -> list[dict]:
    return [f for f in entry["findings"] if f.get("ranked", True)]


def _row(asm_start: str, doc: dict) -> int:
    return next(i["index"] for i in doc["instructions"] if i["asm"].startswith(asm_start))


def test_the_empty_waves_own_rows_are_their_wave_files_sums(root):
    doc = _doc(1, root)
    split = doc["waves"]["work_split"]
    assert (split["empty_waves"], split["busy_waves"]) == (28, 4)
    spec = demo_work_split(busy_slots=1)
    waves = simulate(spec)
    rows = len(spec.instructions) + LABEL_ROWS
    empty = aggregate([w for w in waves if spec.exit_gate.exits(w.slot, w.wv)], rows)
    got = {row["index"]: row for row in split["empty_rows"]}
    expected = {i for i in range(rows) if empty.hit[i]}
    assert set(got) == expected
    for index in expected:
        assert got[index]["hits"] == empty.hit[index]
        assert got[index]["stall_cycles"] == empty.stall[index]
        assert got[index]["latency_cycles"] == empty.latency[index]
        assert got[index]["idle_cycles"] == empty.idle[index]
    # the empty waves jump from the gate's branch to s_endpgm: nothing in between
    assert max(got) == len(spec.instructions) - 1 + LABEL_ROWS  # s_endpgm
    assert not set(got) & set(range(GATE + 1 + LABEL_ROWS, len(spec.instructions) - 1 + LABEL_ROWS))


def test_the_busy_view_is_code_json_minus_the_empty_waves(root):
    doc = _doc(1, root)
    view = busy_view(doc, DEFAULT_COVERAGE.empty_waves_note)
    assert view is not None and view["waves"]["waves"] == 4
    spec = demo_work_split(busy_slots=1)
    busy = aggregate([w for w in simulate(spec) if not spec.exit_gate.exits(w.slot, w.wv)],
                     len(spec.instructions) + LABEL_ROWS)
    for ins in view["instructions"]:
        assert ins["stall_cycles"] == busy.stall[ins["index"]], ins["asm"]
        assert ins["hits"] == busy.hit[ins["index"]]
    assert view["totals"]["stall_cycles"] == sum(busy.stall)
    assert doc["totals"]["stall_cycles"] > view["totals"]["stall_cycles"]
    # the entry wait is paid by every wave: 32 hits in code.json, 4 in the busy view
    entry_wait = _row("s_waitcnt lgkmcnt(0)", doc)
    assert next(i for i in doc["instructions"] if i["index"] == entry_wait)["hits"] == 32
    # the wait attribution is the busy waves' too
    (wait,) = [w for w in view["waves"]["waitcnt"] if w["index"] == entry_wait]
    assert wait["stall_cycles"] == busy.stall[entry_wait]
    assert sum(p["waits"] for p in wait["producers"]) == 4
    assert sum(p["cycles"] for p in wait["producers"]) + wait["unattributed_cycles"] == busy.stall[entry_wait]
    # the grid's facts stay the whole trace's
    assert view["structure"]["launch"] == doc["structure"]["launch"]
    assert doc["waves"]["work_split"].get("cost_basis") is None  # the input is not changed


def test_an_early_exit_grid_leads_with_the_work_distribution_then_the_busy_setup(root):
    doc = _doc(1, root)
    entry = _entry(doc)
    verdict = entry["bottleneck"]
    assert verdict["kind"] == "launch-bound" and "work distribution: 88%" in verdict["sentence"]
    first, second = _ranked(entry)[:2]
    assert first["rule"] == RULE and first["priority"] == "HIGH"
    gate = {e["instruction_index"]: e["asm"] for e in first["evidence"]}
    assert gate == {GATE + LABEL_ROWS: next(i["asm"] for i in doc["instructions"] if i["index"] == GATE + LABEL_ROWS),
                    GATE - 1 + LABEL_ROWS: "v_cmp_ge_i32_e32 vcc, v2, v3",
                    GATE - 2 + LABEL_ROWS: "s_waitcnt vmcnt(0)",
                    GATE - 3 + LABEL_ROWS: "buffer_load_dwordx2 v[2:3], v0, s[4:7], 0 offen"}
    whole = {i["index"]: i["stall_cycles"] for i in doc["instructions"]}  # every wave runs the gate
    assert all(e["stall_cycles"] == whole[e["instruction_index"]] for e in first["evidence"])
    assert first["estimated_gain"]["unit"] == "kernel_time" and first["estimated_gain"]["high"] > 0.25
    assert second["rule"] == "SETUP-serial-kernarg-round-trips"
    assert LATE_LOAD + LABEL_ROWS in {e["instruction_index"] for e in second["evidence"]}
    # the loop's wait is work: costed once the work is spread
    loop = next(f for f in _ranked(entry)
                if LOOP_WAIT + LABEL_ROWS in {e["instruction_index"] for e in f["evidence"]})
    assert "once the work is spread over every wave" in loop["estimated_gain"]["basis"]
    notes = {n["kind"]: n["note"] for n in entry["capture_quality"]}
    assert "costed on the 4 busy waves alone" in notes["empty-waves"]


def test_without_the_split_the_same_grid_ranks_the_empty_waves_prologue(root):
    """The contrast: with the busy view off (the note threshold above every share), code.json's
    totals rank the prologue every wave pays and no work-distribution verdict exists."""
    entry = _entry(_doc(1, root), {"coverage": {"empty_waves_note": 1.0}})
    assert entry["bottleneck"]["kind"] != "launch-bound"
    assert all(f["rule"] != RULE for f in entry["findings"])


def test_a_small_empty_share_leaves_the_plan_unchanged(root):
    doc = _doc(7, root)
    split = doc["waves"]["work_split"]
    assert 0 < split["empty_share"] < DEFAULT_COVERAGE.empty_waves_note
    entry = _entry(doc)
    without = copy.deepcopy(doc)
    without["waves"]["work_split"] = None
    assert entry["findings"] == _entry(without)["findings"]
    assert entry["bottleneck"] == _entry(without)["bottleneck"]
    assert entry["bottleneck"]["kind"] != "launch-bound"


def test_not_the_bound_when_the_busy_waves_do_not_set_the_time(root):
    view = busy_view(_doc(1, root), DEFAULT_COVERAGE.empty_waves_note)
    assert work_split_gain(view) is not None
    later = copy.deepcopy(view)
    later["waves"]["timing"]["span_cycles"] = later["waves"]["work_split"]["busy_max_cycles"] * 2
    assert work_split_gain(later) is None  # other waves run as long: the split is not the bound
    few = copy.deepcopy(view)
    few["waves"]["work_split"]["empty_share"] = 0.4
    assert work_split_gain(few) is None


def test_no_busy_view_unless_the_wave_files_sum_to_code_json(root):
    doc = copy.deepcopy(_doc(1, root))
    assert busy_view(doc, DEFAULT_COVERAGE.empty_waves_note) is not None
    doc["waves"]["consistency"]["ok"] = False
    assert busy_view(doc, DEFAULT_COVERAGE.empty_waves_note) is None


def test_without_wave_files_the_work_split_cannot_be_judged(root):
    doc = copy.deepcopy(_doc(1, root))
    doc.pop("waves")
    notes = {n["kind"]: n["note"] for n in _entry(doc)["capture_quality"]}
    assert "the work split cannot be judged" in notes["no-wave-files"]
    assert "empty-waves" not in notes


def test_the_exit_gate_follows_the_condition_back_to_its_loads():
    rows = [
        (1, "s_load_dwordx2 s[4:5], s[0:1], 0x0"),
        (2, "s_waitcnt lgkmcnt(0)"),
        (3, "s_load_dword s8, s[4:5], 0x10"),
        (4, "s_waitcnt lgkmcnt(0)"),
        (5, "s_add_u32 s9, s8, 1"),
        (6, "s_cmp_lt_i32 s9, s2"),
        (7, "s_cbranch_scc1 40"),
        (8, "v_mov_b32_e32 v1, 0"),
        (40, "s_endpgm"),
    ]
    instructions = [{"index": i, "asm": a} for i, a in rows]
    gate = exit_gate(instructions, {1, 2, 3, 4, 5, 6, 7, 40})
    assert gate == {"branch": 7, "condition": 6, "producers": [3, 5], "waits": [4],
                    "rows": [3, 4, 5, 6, 7]}
    # every row ran: no branch skipped anything, no gate
    assert exit_gate(instructions, {i for i, _ in rows}) is None
