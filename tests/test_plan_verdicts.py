"""Bottleneck verdicts on synthetic captures with one known bottleneck each (issue 11).

Each capture comes from kerneltrace.synth (SYNTHETIC numbers); the test asserts the verdict, the
first finding and that every gain respects the verdict's bound.
"""

from __future__ import annotations

import plan_verdict_specs as specs
import pytest

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.gains import group_gain
from kerneltrace.plan.summary import build_summary
from kerneltrace.render.plan import render_markdown
from kerneltrace.synth import demo_gemm, demo_vec_add, write_dispatch_dir


def plan_of(tmp_path, spec, variant="v3"):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, spec, variant=variant), waves=True)
    summary = build_summary([doc], [])
    return doc, summary, summary["kernels"][0]["dispatches"][0]


def ranked(entry):
    return [f for f in entry["findings"] if f["ranked"]]


def assert_consistent(entry):
    """No finding ruled out by the verdict ranks above one that is not; gains within the bound."""
    findings = ranked(entry)
    flags = [f["contradicts_verdict"] for f in findings]
    assert flags == sorted(flags), "a finding the verdict rules out ranks above a valid one"
    ceiling = entry["bottleneck"]["ceiling"]
    for f in findings:
        gain = f["estimated_gain"]
        if gain and not f["verdict_aligned"] and f["rule"] not in ("MFMA-dependency-chain",):
            assert gain["high"] <= ceiling + 1e-9, f["id"]
        if gain:
            assert gain["low"] <= gain["high"]
    assert entry["gain_bound"] <= 1


def test_mfma_bound_loop(tmp_path):
    _, _, entry = plan_of(tmp_path, specs.mfma_bound())
    verdict = entry["bottleneck"]
    assert verdict["kind"] == "compute-mfma"
    assert verdict["ceiling"] < 0.2  # MFMA busy > 80 %: at most 1 - busy for anything else
    first = ranked(entry)[0]
    assert first["rule"] == "W2-hot-loop-mfma-bound" and first["priority"] == "HIGH"
    assert all(f["priority"] != "HIGH" for f in ranked(entry)[1:])
    assert_consistent(entry)


def test_streaming_kernel(tmp_path):
    _, summary, entry = plan_of(tmp_path, demo_vec_add())
    assert entry["bottleneck"]["kind"] == "memory-streaming"
    first = ranked(entry)[0]
    assert first["rule"] == "STREAM-memory-bound"
    assert "bytes in flight" in first["estimated_gain"]["basis"]
    # the kernel-argument wait is once per wave: never HIGH
    kernarg = [f for f in ranked(entry) if f["once_per_wave"]]
    assert kernarg and all(f["priority"] != "HIGH" for f in kernarg)
    assert not [f for f in entry["findings"] if f["rule"] == "P4-scale-load-late"]
    assert_consistent(entry)


def test_barrier_bound(tmp_path):
    doc, _, entry = plan_of(tmp_path, specs.barrier_bound())
    assert entry["bottleneck"]["kind"] == "synchronisation"
    assert "imbalance" in " ".join(entry["bottleneck"]["evidence"])
    assert doc["waves"]["peers"]["barriers"]
    assert ranked(entry)[0]["rule"] == "BAR-dominated"
    assert_consistent(entry)


def test_prologue_dominated_short_kernel(tmp_path):
    doc, default, _ = plan_of(tmp_path, specs.prologue_bound())
    # a kernel this short (its waves span ~1 µs) is launch-bound by overhead, its setup first
    short = default["kernels"][0]["dispatches"][0]
    assert short["bottleneck"]["kind"] == "launch-bound" and "overhead" in short["bottleneck"]["sentence"]
    assert ranked(short)[0]["rule"] in ("PRO-once-per-wave-setup", "SETUP-serial-kernarg-round-trips")
    # as long as a real kernel (the overhead check off), the setup share decides
    summary = build_summary([doc], [], thresholds={"verdict": {"launch_overhead_us": 0.0}})
    entry = summary["kernels"][0]["dispatches"][0]
    assert entry["bottleneck"]["kind"] == "prologue"
    # the once-per-wave setup leads, as the prologue finding or as its serialized round trips,
    # whichever claims more kernel time (one currency)
    first = ranked(entry)[0]
    assert first["rule"] in ("PRO-once-per-wave-setup", "SETUP-serial-kernarg-round-trips")
    assert first["priority"] == "HIGH"
    assert any(f["rule"] == "PRO-once-per-wave-setup" for f in ranked(entry))
    # line findings on the same setup waits say "issue earlier": ruled out, ranked last, LOW
    # (the SETUP finding's round-trip structure is the prologue's own first help: not ruled out)
    others = [f for f in ranked(entry) if f["rule"] not in ("SETUP-serial-kernarg-round-trips",
                                                            "PRO-once-per-wave-setup")]
    assert others and all(f["contradicts_verdict"] and f["priority"] == "LOW" for f in others)
    assert all(not f["contradicts_verdict"] for f in ranked(entry)
               if f["rule"] == "SETUP-serial-kernarg-round-trips")
    assert_consistent(entry)


def test_loads_on_the_decorator_line(tmp_path):
    doc, _, entry = plan_of(tmp_path, specs.loads_on_decorator_line())
    entry_line = [line for line in doc["source_lines"] if line["artifact"] == "kernel-entry"]
    assert entry_line and entry_line[0]["share"] > 0.5
    first = ranked(entry)[0]
    assert first["rule"] == "GLUE-line-loads" and first["priority"] == "HIGH"
    cited = {e["asm"].split()[0] for e in first["evidence"]}
    assert {"s_waitcnt", "buffer_load_dword"} <= cited  # the glue-line loads, not kernel arguments
    assert "straight to LDS" in first["root_cause"]
    # the region view of the same waits is in its overlap group, not a second HIGH
    twins = [f for f in ranked(entry) if f["overlap_group"] == first["overlap_group"]]
    assert len(twins) >= 2 and all(f["priority"] != "HIGH" for f in twins[1:])
    assert_consistent(entry)


def test_no_line_tables_ranks_instruction_regions(tmp_path):
    doc, summary, entry = plan_of(tmp_path, demo_gemm(), variant="no-source")
    assert doc["source_mapping"]["mapped_fraction"] == 0
    regions = [f for f in ranked(entry) if f["rule"] == "REGION-hotspot"]
    # instruction regions rank among the first two (the loop umbrella W2 may claim more time)
    assert regions and "REGION-hotspot" in [f["rule"] for f in ranked(entry)[:3]]
    assert regions[0]["priority"] in ("HIGH", "MED")
    # the missing line tables are a capture-quality note, never a ranked change
    assert not [f for f in ranked(entry) if f["rule"] == "SRC-no-source-mapping"]
    assert "SRC-no-source-mapping" in [q["kind"] for q in entry["capture_quality"]]
    assert "rows" in regions[0]["title"]
    text = render_markdown(summary, [doc])
    assert "Nothing to rank" not in text and "nothing to rank" not in text


def test_hazard_nop_heavy(tmp_path):
    _, _, entry = plan_of(tmp_path, specs.hazard_bound())
    assert entry["bottleneck"]["kind"] == "issue-dependency"
    first = ranked(entry)[0]
    assert first["rule"] == "NOP-hazard-stall" and "transcendental" in first["title"]
    assert any(e["asm"].startswith("v_exp_f32") for e in first["evidence"])
    assert_consistent(entry)


def test_verdict_is_first_in_the_plan(tmp_path):
    doc, summary, entry = plan_of(tmp_path, demo_vec_add())
    text = render_markdown(summary, [doc])
    assert text.index("**Bottleneck: memory-streaming**") < text.index("### Stall Summary")
    assert set(entry["bottleneck"]) >= {"kind", "evidence", "confidence"}


def _finding(fid, cited, high, scope="line"):
    from kerneltrace.plan.findings import Evidence, Finding, Gain

    return Finding(id=fid, rule="LINE-hotspot", title=fid, priority="HIGH", stall_share=high,
                   estimated_gain=Gain(high / 2, high, "test"), root_cause="", fix="",
                   evidence=[Evidence("k.py:1", i) for i in cited], location="k.py:1", scope=scope)


def test_overlapping_findings_are_grouped_not_added():
    from kerneltrace.plan.gains import overlap_groups

    a, b, c = _finding("a", {1, 2}, 0.3), _finding("b", {2, 3}, 0.2), _finding("c", {9}, 0.1)
    umbrella = _finding("loop", {1, 2, 3, 9}, 0.35, scope="loop")
    findings = [a, b, c, umbrella]
    overlap_groups(findings)
    assert a.overlap_group == b.overlap_group == "a" and c.overlap_group is None
    assert umbrella.overlap_group is None  # umbrellas do not link groups
    assert group_gain(findings) == pytest.approx(0.4)  # max(a, b) + c, not a + b + c
    assert group_gain([umbrella, c]) == pytest.approx(0.35)  # the umbrella covers c's stall too


def test_compare_select_hazard_is_named():
    from kerneltrace.plan.rules.hazards import hazard_cause

    cmp = {"asm": "v_cmp_gt_f32_e32 vcc, s23, v172", "type": "VALU"}
    sel = {"asm": "v_cndmask_b32_e32 v174, 0, v233, vcc", "type": "VALU"}
    assert hazard_cause([cmp], [sel]) == ("compare/select", cmp)
    lane = {"asm": "v_permlane32_swap_b32_e32 v174, v176", "type": "VALU"}
    assert hazard_cause([{"asm": "v_mov_b32_e32 v176, v172", "type": "VALU"}], [lane])[0] == "lane/sgpr"


def test_issue_bound_mfma_loop(tmp_path):
    """MFMA idle behind dependent VALU work: the issue verdict, led by the loop finding."""
    _, _, entry = plan_of(tmp_path, specs.vector_issue_bound())
    assert entry["bottleneck"]["kind"] == "issue-dependency"
    first = ranked(entry)[0]
    assert first["rule"] in ("W2-hot-loop-mfma-underused", "NOP-hazard-stall")
    assert first["verdict_aligned"] and first["priority"] == "HIGH"
    assert_consistent(entry)


def test_narrow_loads_are_named():
    from plan_synthetic import Ins, hotspot_doc

    from kerneltrace.plan.context import PlanContext
    from kerneltrace.plan.rules.verdict_rules import narrow_loads

    program = [Ins("buffer_load_ushort v2, v1, s[12:15], 0 offen", "VMEM-load", "k.py:5", 800, 900),
               Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:6", 200, 210),
               Ins("v_add_f32_e32 v3, v2, v2", "VALU", "k.py:7", 0, 4)]
    (finding,) = narrow_loads(PlanContext(hotspot_doc(program)))
    assert finding.rule == "MEM-narrow-loads" and finding.location == "k.py:5"
    assert "dwordx4" in finding.fix
    wide = [Ins("buffer_load_dwordx4 v[2:5], v1, s[12:15], 0 offen", "VMEM-load", "k.py:5", 800, 900)]
    assert narrow_loads(PlanContext(hotspot_doc(wide))) == []


def test_bytes_per_wave_follow_the_wave_size():
    """A wave32 RDNA kernel moves half the bytes per load of a wave64 one: the lanes come from the
    document's occupancy (its compile mode), else the arch table, never a fixed 64."""
    from plan_synthetic import Ins, hotspot_doc

    from kerneltrace.plan.context import PlanContext
    from kerneltrace.plan.rules.verdict_rules import narrow_loads

    program = [Ins("buffer_load_ushort v2, v1, s[12:15], 0 offen", "VMEM-load", "k.py:5", 800, 900)]
    wave64 = hotspot_doc(program)
    rdna = {**hotspot_doc(program), "arch": {"name": "gfx1100"}}
    compiled_wave64 = {**rdna, "occupancy": {"wave_size": 64}}
    (cdna,) = narrow_loads(PlanContext(wave64))
    (wave32,) = narrow_loads(PlanContext(rdna))
    (rdna64,) = narrow_loads(PlanContext(compiled_wave64))
    assert "move 128 bytes per wave" in cdna.root_cause
    assert "move 64 bytes per wave" in wave32.root_cause
    assert "move 128 bytes per wave" in rdna64.root_cause


def test_legacy_capture_ranks_by_latency_and_says_so(tmp_path):
    doc, summary, entry = plan_of(tmp_path, demo_gemm(), variant="legacy")
    assert doc["totals"]["stall_cycles"] is None
    # no stall column: the bound is named from estimated stall (latency − issue), low confidence
    assert entry["bottleneck"]["kind"] != "latency-only"
    assert entry["bottleneck"]["confidence"] == "low"
    assert any("estimated" in fact for fact in entry["bottleneck"]["evidence"])
    assert "no-stall-column" in [q["kind"] for q in entry["capture_quality"]]
    text = render_markdown(summary, [doc])
    assert "### Latency Summary" in text and "### Stall Summary" not in text
    assert "of latency" in text and "Nothing to rank" not in text
    assert "legacy" in text
    assert ranked(entry)


def test_occupancy_candidates_and_measured(tmp_path):
    from kerneltrace.render.plan import occupancy_view

    doc, summary, entry = plan_of(tmp_path, demo_gemm())
    view = occupancy_view(entry, doc)
    assert view["measured"] and view["measured"]["max_waves"] >= 1
    assert "Measured on the traced CU" in render_markdown(summary, [doc])
    unknown = {**entry, "arch": {"name": None, "certain": False, "source": "unknown",
                                  "candidates": ["gfx940", "gfx942"]},
               "occupancy": {"waves_per_simd": None, "per_candidate": {
                   "gfx940": {"waves_per_simd": 4, "limited_by": "vgpr"},
                   "gfx942": {"waves_per_simd": 4, "limited_by": "vgpr"}}}}
    view = occupancy_view(unknown, doc)
    assert view["agreed_waves_per_simd"] == 4 and view["candidates"] == ["gfx940", "gfx942"]
    summary["kernels"][0]["dispatches"][0] = unknown
    assert "every candidate gives **4 wave(s)/SIMD**" in render_markdown(summary, [doc])


def test_html_shows_the_verdict_first(tmp_path):
    from kerneltrace.render.plan import render_html

    doc, summary, _ = plan_of(tmp_path, demo_vec_add())
    html = render_html(summary, [doc], [])
    assert html.index("Bottleneck: memory-streaming") < html.index("Stall Summary")


def test_no_stall_capture_ranks_by_latency():
    """A v3 capture whose stall is all zero: latency verdict, regions ranked, never 'nothing'."""
    from plan_synthetic import Ins, hotspot_doc

    program = [Ins("global_load_dwordx4 v[0:3], v0, s[0:1]", "VMEM-load", "k.py:5", 0, 900),
               Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:6", 0, 700),
               Ins("v_add_f32_e32 v3, v2, v2", "VALU", "k.py:7", 0, 4)]
    doc = hotspot_doc(program)
    doc["totals"]["stall_cycles"] = 0
    summary = build_summary([doc], [])
    entry = summary["kernels"][0]["dispatches"][0]
    assert entry["bottleneck"]["confidence"] == "low"  # named from latency − issue, not stall
    assert ranked(entry) and "REGION-hotspot" in [f["rule"] for f in ranked(entry)]
    text = render_markdown(summary, [doc])
    assert "No stall recorded" in text and "Nothing to rank" not in text


def test_bandwidth_bound_with_pmc(tmp_path):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, demo_vec_add()), waves=True)
    l2 = {"schema": "kerneltrace.l2/1", "kernel": doc["kernel"],
          "aggregate": {"fraction_of_peak": 0.72, "l2_hit_rate": 0.1}}
    entry = build_summary([doc], [l2])["kernels"][0]["dispatches"][0]
    verdict = entry["bottleneck"]
    assert verdict["kind"] == "memory-bandwidth" and "72%" in verdict["sentence"]
    assert_consistent(entry)


def _gather_loop(issue_stall: int, latency: int) -> tuple:
    loads = tuple(specs.I(f"global_load_ushort v{32 + k}, v[{2 * k}:{2 * k + 1}], off", 30,
                          stall_cycles=issue_stall, latency_cycles=latency) for k in range(8))
    stores = tuple(specs.I(f"global_store_short v[{2 * k}:{2 * k + 1}], v{32 + k}, off", 31,
                           stall_cycles=issue_stall // 4) for k in range(8))
    return (*loads, specs.I("s_waitcnt vmcnt(0)", 30), *stores, specs.I("s_cbranch_scc1", 32))


def test_a_full_request_queue_is_a_request_bound_not_latency(tmp_path):
    # a transpose-like gather: the loads cannot issue (the queue is full) far more than they wait
    body = _gather_loop(issue_stall=400, latency=120)
    _, _, entry = plan_of(tmp_path / "queue", specs._spec("gather", body, loop=(0, len(body) - 1, 16)))
    verdict = entry["bottleneck"]
    assert verdict["kind"] == "memory-bandwidth", verdict["sentence"]
    assert "request queue is full" in verdict["sentence"]
    assert_consistent(entry)
    # the same loads with the stall on the wait for their results: latency, not requests
    body = _gather_loop(issue_stall=0, latency=3000)
    _, _, entry = plan_of(tmp_path / "wait", specs._spec("gather", body, loop=(0, len(body) - 1, 16)))
    assert entry["bottleneck"]["kind"] == "memory-latency", entry["bottleneck"]["sentence"]
