"""Register spills (rule S1): scratch accesses found, counted, costed by their waits, ranked first."""

from __future__ import annotations

import dataclasses

import pytest

from kerneltrace.analysis.spills import private_array_kind, spill_kind
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.pipeline import run_all
from kerneltrace.plan.rules.spills import RULE, RULE_ARRAY, RULE_HOT
from kerneltrace.plan.summary import build_summary
from kerneltrace.synth import SPILL_LINES, demo_gemm, demo_spill, write_dispatch_dir
from kerneltrace.synth.simulate import simulate


@pytest.fixture(scope="module")
def spill_doc(tmp_path_factory):
    root = tmp_path_factory.mktemp("spill")
    return analyze_dispatch(write_dispatch_dir(root, demo_spill()), waves=True)


def test_spill_kind():
    assert spill_kind("scratch_load_dwordx4 v[8:11], off, s33 offset:16") == "load"
    assert spill_kind("scratch_store_dword off, v1, s33") == "store"
    assert spill_kind("buffer_store_dword v1, off, s[0:3], 0 offset:4") == "store"  # gfx90a
    assert spill_kind("buffer_load_dword v1, off, s[0:3], s32 offset:8") == "load"
    assert spill_kind("buffer_load_dwordx4 v[4:7], v0, s[8:11], 0 offen") is None
    assert spill_kind("global_load_dword v1, v2, s[0:1]") is None


def expected_reload_wait(spec) -> int:
    """Σ stall of the s_waitcnt right after the reload, straight from the simulation."""
    reload = next(i for i, ins in enumerate(spec.instructions) if ins.asm.startswith("scratch_load"))
    wait_row = reload + 2  # code.json row = instruction + 1 (label row), the wait follows it
    return sum(row[2] for wave in simulate(spec) for row in wave.instructions if row[4] == wait_row)


def test_hot_loop_spill_is_the_first_finding_with_the_wait_cost(spill_doc):
    spec = demo_spill()
    findings = run_all(PlanContext(spill_doc))
    first = findings[0]
    assert first.rule == RULE_HOT
    assert first.priority == "HIGH"
    assert "inside the hot loop" in first.title
    assert "1 reload(s), 1 store(s)" in first.title
    assert first.location.endswith(f"demo_spill.py:{SPILL_LINES['reload']}")
    # The cost the waits show: the reload wait's cycles (youngest drained producer) plus the
    # scratch instructions' own stall, as a share of all stall.
    wait = expected_reload_wait(spec)
    own = sum(ins["stall_cycles"] for ins in spill_doc["instructions"]
              if ins["asm"].startswith("scratch_"))
    total = spill_doc["totals"]["stall_cycles"]
    assert wait > 0 and own > 0
    assert f"{wait:,} cycles of `s_waitcnt`" in first.root_cause
    assert first.stall_share == pytest.approx((wait + own) / total, abs=1e-4)
    # one currency: the stall-share hypothesis restated as a fraction of kernel time
    assert first.estimated_gain.unit == "kernel_time"
    assert 0 < first.estimated_gain.high <= first.stall_share
    assert [e.asm.split()[0] for e in first.evidence[:2]] == ["scratch_load_dwordx4",
                                                              "scratch_store_dwordx4"]
    assert "scratch load, 128 executions" in first.evidence[0].note


def test_spill_first_even_when_another_finding_is_costlier(spill_doc):
    """Make the buffer-load wait dominate: the spill still leads the plan."""
    doc = dict(spill_doc)
    doc["instructions"] = [dict(ins) for ins in spill_doc["instructions"]]
    wait = next(ins for ins in doc["instructions"] if ins["asm"] == "s_waitcnt vmcnt(1)")
    wait["stall_cycles"] *= 20
    wait["latency_cycles"] *= 20
    doc["totals"] = dict(doc["totals"], stall_cycles=sum(i["stall_cycles"]
                                                        for i in doc["instructions"]))
    findings = run_all(PlanContext(doc))
    spill = next(f for f in findings if f.rule == RULE_HOT)
    assert max(f.stall_share for f in findings if f.ranked) > spill.stall_share
    assert findings[0] is spill and spill.priority == "HIGH"


def test_spill_outside_loops_is_ranked_by_its_cost_not_forced_first(tmp_path):
    spec = demo_spill()
    # Move the loop off the spill rows: iterate only the first two loop instructions.
    spec = dataclasses.replace(spec, loop=None)
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, spec), waves=True)
    findings = run_all(PlanContext(doc))
    spill = next(f for f in findings if f.rule == RULE)
    assert "outside loops" in spill.title
    assert spill.priority in ("HIGH", "MED", "LOW")


def test_no_spill_no_finding(tmp_path):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, demo_gemm()), waves=True)
    assert not [f for f in run_all(PlanContext(doc)) if f.rule in (RULE, RULE_HOT)]


def test_summary_lists_the_spill_first(spill_doc):
    summary = build_summary([spill_doc], [])
    (kernel,) = summary["kernels"]
    findings = kernel["dispatches"][0]["findings"]
    assert findings[0]["rule"] == RULE_HOT


def test_vgpr_addressed_scratch_is_a_private_array_not_a_spill():
    assert spill_kind("scratch_store_byte v1, v4, off") is None
    assert private_array_kind("scratch_store_byte v1, v4, off") == "store"
    assert private_array_kind("scratch_load_dword v2, v3, off offset:8") == "load"
    assert private_array_kind("scratch_load_dword v18, off, off offset:2468") is None
    assert spill_kind("scratch_load_dword v18, off, off offset:2468") == "load"
    assert private_array_kind("buffer_load_dword v1, off, s[0:3], s32 offset:8") is None


def _with_asm(doc, old_prefix, new_asm):
    out = dict(doc)
    out["instructions"] = [dict(ins, asm=new_asm) if ins["asm"].startswith(old_prefix)
                           else dict(ins) for ins in doc["instructions"]]
    return out


def test_private_array_in_a_working_loop_is_s2_and_not_a_hot_loop_spill(spill_doc):
    """Both scratch accesses through a VGPR address: no spill finding; S2 costs them by their
    own stall (the loop loads and multiplies, so it is no fill loop)."""
    doc = _with_asm(spill_doc, "scratch_store", "scratch_store_dwordx4 v1, v[8:11], off")
    doc = _with_asm(doc, "scratch_load", "scratch_load_dwordx4 v[8:11], v1, off")
    findings = run_all(PlanContext(doc))
    assert not [f for f in findings if f.rule in (RULE, RULE_HOT)]
    (array,) = [f for f in findings if f.rule == RULE_ARRAY]
    assert "1 store(s), 1 load(s) through a VGPR address" in array.title
    assert "fill loop" not in array.title
    own = sum(i["stall_cycles"] for i in doc["instructions"] if i["asm"].startswith("scratch_"))
    assert array.stall_share >= own / doc["totals"]["stall_cycles"]
    assert array.estimated_gain.unit == "kernel_time"


def test_spills_without_a_stall_column_are_costed_by_latency(spill_doc):
    """Legacy (rocprofv2) captures have no stall: the spill cost is latency, said so."""
    doc = dict(spill_doc, format="legacy")
    doc["instructions"] = [dict(ins, stall_cycles=None) for ins in spill_doc["instructions"]]
    doc["totals"] = dict(spill_doc["totals"], stall_cycles=None)
    (spill,) = [f for f in run_all(PlanContext(doc)) if f.rule in (RULE, RULE_HOT)]
    own = sum(i["latency_cycles"] for i in doc["instructions"] if i["asm"].startswith("scratch_"))
    assert f"{own:,} latency cycles on the scratch instructions" in spill.root_cause
    assert spill.estimated_gain.unit == "kernel_time" and spill.stall_share > 0
    assert "latency" in spill.estimated_gain.basis


def test_legacy_mla_hot_loop_spills_lead_the_fill_loop_is_s2(captures):
    """The legacy MLA capture: the waves observed only the short fill loop (rows 41–46, zeroing a
    private array through scratch), but code.json shows the hot loop (rows 2172–4243, 97 % of
    the waves' time, ≈53 iterations) reloading spilled registers every iteration (issue 21.3):
    the spill leads, the fill loop is an S2 finding."""
    dispatch = captures / "aiter-glog-fork-legacy-att/att/flash_fwd_splitkv_mla_kernel_v1_ui"
    findings = run_all(PlanContext(analyze_dispatch(dispatch, waves=True)))
    assert findings[0].rule == RULE_HOT and "inside the hot loop" in findings[0].title
    array = next(f for f in findings if f.rule == RULE_ARRAY)
    assert "fill loop takes 17%" in array.title
    assert array.estimated_gain.unit == "kernel_time"
