"""Verdicts from the launch and the matrix pipe on the facts a capture may lack (issue 21, held-out check 4).

Synthetic hotspot documents: a kernel of a few µs (by its kernel trace, or by the traced waves'
span without one) is launch-bound by overhead; a code.json MFMA loop without wave files is
MFMA-bound when one wave's own MFMA passes fill most of its loop time (a floor on the pipe's
busy); a kernel-trace row joined by name alone is dropped when the trace contradicts it.
"""

from __future__ import annotations

from plan_synthetic import Ins, hotspot_doc

from kerneltrace.analysis.launch import launch_context
from kerneltrace.analysis.structure import other_launch_reason, structure_of
from kerneltrace.plan.verdict import Facts, decide, mfma_busy_floor
from kerneltrace.thresholds import DEFAULT_STRUCTURE, DEFAULT_VERDICT

AGENT = {"name": "gfx950", "product_name": "AMD Instinct MI350X", "cu_count": 256,
         "simd_per_cu": 4, "max_engine_clock_mhz": 2400}
WAVES = 4


def _arch(doc: dict) -> dict:
    doc["arch"] = {"name": "gfx950", "source": "test", "certain": True, "candidates": ["gfx950"]}
    return doc


def short_kernel(duration_ns: int | None, span_cycles: int | None = None) -> dict:
    """Two kernel-argument round trips, then a little vector work (fused_rope's shape)."""
    program = [
        Ins("s_load_dwordx4 s[4:7], s[0:1], 0x0", "SMEM", "k.py:5", 100, 200, WAVES),
        Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:5", 900, 900, WAVES),
        Ins("s_load_dwordx4 s[8:11], s[0:1], 0x10", "SMEM", "k.py:6", 100, 200, WAVES),
        Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:6", 900, 900, WAVES),
        Ins("v_add_u32_e32 v1, s8, v0", "VALU", "k.py:9", 10, 40, WAVES),
        Ins("global_store_dword v0, v1, s[4:5]", "VMEM-store", "k.py:9", 50, 80, WAVES),
        Ins("s_endpgm", "SALU", "k.py:9", 0, 10, WAVES),
    ]
    doc = _arch(hotspot_doc(program, waves={"waves": WAVES}))
    trace = None if duration_ns is None else {
        "grid_size": [256 * 64, 1, 1], "workgroup_size": [64, 1, 1], "duration_ns": duration_ns}
    doc["metadata"] = {"agent": dict(AGENT), "kernel_trace": trace, "kernel_trace_join": "dispatch_id"}
    doc["waves"] = {"waves": WAVES, "clock_mhz": 2000.0,
                    "timing": {"span_cycles": span_cycles} if span_cycles else {}}
    doc["structure"] = structure_of(doc)
    return doc


def test_a_kernel_of_a_few_microseconds_is_launch_bound_by_overhead():
    bar_ns = DEFAULT_VERDICT.launch_overhead_us * 1000
    verdict = decide(short_kernel(int(bar_ns * 0.8)))
    assert verdict.kind == "launch-bound" and "overhead" in verdict.sentence
    assert any("fuse" in help for help in verdict.helps)
    assert decide(short_kernel(int(bar_ns * 3))).kind != "launch-bound"


def test_without_a_kernel_trace_the_traced_span_stands_for_the_kernel_time():
    bar_cycles = DEFAULT_VERDICT.launch_overhead_us * 2000  # µs × 2000 MHz
    short = decide(short_kernel(None, span_cycles=int(bar_cycles * 0.5)))
    assert short.kind == "launch-bound" and "no kernel trace" in short.sentence
    assert short.confidence == "low"
    assert decide(short_kernel(None, span_cycles=int(bar_cycles * 4))).kind != "launch-bound"
    assert decide(short_kernel(None)).kind != "launch-bound"  # neither: nothing to judge by


MFMA = "v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]"


def mfma_loop(mfma_latency: int, other_latency: int, iterations: int = 64) -> dict:
    """A code.json loop (no wave files) of two MFMAs and a wait; one wave per SIMD."""
    hits = WAVES * iterations
    program = [
        Ins("s_mov_b32 s12, 0", "SALU", "k.py:5", 0, 4, WAVES),
        Ins(MFMA, "MFMA", "k.py:10", mfma_latency // 2, mfma_latency, hits),
        Ins(MFMA, "MFMA", "k.py:10", mfma_latency // 2, mfma_latency, hits),
        Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:11", other_latency, other_latency, hits),
        Ins("s_cbranch_scc1 -4", "branch", "k.py:12", 0, 4, hits),
        Ins("s_endpgm", "SALU", "k.py:12", 0, 10, WAVES),
    ]
    doc = _arch(hotspot_doc(program))
    doc["metadata"] = {"agent": dict(AGENT), "kernel_trace": None}
    doc["structure"] = structure_of(doc)
    return doc


def test_without_wave_files_a_full_mfma_stream_is_mfma_bound():
    from kerneltrace.isa.mfma import mfma_info

    passes = mfma_info(MFMA).cycles
    # each MFMA row's latency summed over the loop's hits: a pipe kept full by this wave alone
    full = mfma_loop(mfma_latency=passes * WAVES * 64, other_latency=passes * WAVES * 8)
    facts = Facts(full, None, DEFAULT_VERDICT)
    assert facts.loop and facts.loop["source"] == "code.json" and facts.mfma_busy is None
    floor = mfma_busy_floor(full, facts.loop)
    assert floor is not None and floor >= DEFAULT_VERDICT.mfma_bound
    verdict = decide(full)
    assert verdict.kind == "compute-mfma" and "at least" in verdict.sentence
    # the same MFMAs in a loop three times as long: the floor says nothing about the pipe
    slow = mfma_loop(mfma_latency=passes * WAVES * 64, other_latency=passes * WAVES * 64 * 4)
    assert mfma_busy_floor(slow, Facts(slow, None, DEFAULT_VERDICT).loop) < DEFAULT_VERDICT.mfma_bound
    assert decide(slow).kind != "compute-mfma"


def _joined_by_name(duration_ns: int, span_cycles: int, waves_per_cu: float) -> dict:
    doc = short_kernel(None)
    doc["metadata"] = {"agent": dict(AGENT), "kernel_trace_join": "kernel_name", "kernel_trace": {
        "grid_size": [69 * 256, 1, 1], "workgroup_size": [256, 1, 1], "duration_ns": duration_ns}}
    doc["waves"] = {"waves": 28, "clock_mhz": 2000.0, "timing": {"span_cycles": span_cycles},
                    "residency": {"waves_per_cu": waves_per_cu}}
    return doc


def test_a_name_joined_row_the_trace_contradicts_is_not_this_launch():
    # 69 workgroups of 4 waves on 256 CUs: one round, at most 4 waves on any CU, 4.4 µs
    launch = launch_context({"grid_size": [69 * 256, 1, 1], "workgroup_size": [256, 1, 1],
                             "duration_ns": 4440}, AGENT, {"waves_per_simd": 8}, 64)
    longer = _joined_by_name(4440, span_cycles=12_000, waves_per_cu=4)  # 6 µs of waves
    assert "longer than" in other_launch_reason(longer, launch, DEFAULT_STRUCTURE.name_join_span)
    crowded = _joined_by_name(4440, span_cycles=6_000, waves_per_cu=7)
    assert "more than the 4" in other_launch_reason(crowded, launch, DEFAULT_STRUCTURE.name_join_span)
    consistent = _joined_by_name(4440, span_cycles=6_000, waves_per_cu=4)
    assert other_launch_reason(consistent, launch, DEFAULT_STRUCTURE.name_join_span) is None
    by_id = _joined_by_name(4440, span_cycles=12_000, waves_per_cu=7)
    by_id["metadata"]["kernel_trace_join"] = "dispatch_id"  # the dispatch's own row: kept
    assert other_launch_reason(by_id, launch, DEFAULT_STRUCTURE.name_join_span) is None
    structure = structure_of(longer)
    assert structure["launch"] is None and structure["trace_coverage"] is None
    assert "another launch" in structure["launch_unmatched"]


def test_an_uncertain_arch_times_the_span_at_its_slowest_candidate_clock():
    from kerneltrace.arch.table import PRODUCTS, slowest_clock_mhz

    slowest = min(p.max_clock_mhz for p in PRODUCTS.values()
                  if p.arch in ("gfx942", "gfx950") and p.max_clock_mhz)
    assert slowest_clock_mhz(["gfx942", "gfx950", "nonsense"]) == slowest
    bar_cycles = DEFAULT_VERDICT.launch_overhead_us * slowest
    for cycles, bound in ((bar_cycles * 0.9, True), (bar_cycles * 1.1, False)):
        doc = short_kernel(None, span_cycles=int(cycles))
        doc["waves"].pop("clock_mhz")
        doc["metadata"]["agent"] = None
        doc["arch"] = {"name": None, "source": "unknown", "certain": False,
                       "candidates": ["gfx942", "gfx950"]}
        verdict = decide(doc)
        assert (verdict.kind == "launch-bound") is bound
        assert not bound or "slowest candidate" in verdict.sentence


def setup_then_loop(setup_latency: int, loop_latency: int) -> dict:
    """Straight-line setup run once per wave, then a loop of 4 iterations (no wave files)."""
    loop_hits = WAVES * 4
    program = [
        Ins("s_load_dwordx4 s[4:7], s[0:1], 0x0", "SMEM", "k.py:5", 100, 200, WAVES),
        Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:5", setup_latency, setup_latency, WAVES),
        Ins("buffer_load_dwordx4 v[4:7], v0, s[4:7], 0 offen", "VMEM-load", "k.py:6", 50, 60, WAVES),
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:6", setup_latency, setup_latency, WAVES),
        Ins("v_add_f32_e32 v8, v4, v8", "VALU", "k.py:9", loop_latency, loop_latency, loop_hits),  # 4
        Ins("v_mul_f32_e32 v9, v8, v5", "VALU", "k.py:9", loop_latency, loop_latency, loop_hits),
        Ins("s_cbranch_scc1 -3", "branch", "k.py:9", 0, 4, loop_hits),  # back to row 4
        Ins("s_endpgm", "SALU", "k.py:10", 0, 10, WAVES),
    ]
    doc = _arch(hotspot_doc(program))
    doc["metadata"] = {"agent": dict(AGENT), "kernel_trace": {
        "grid_size": [256 * 256 * 8, 1, 1], "workgroup_size": [256, 1, 1], "duration_ns": 400_000}}
    doc["structure"] = structure_of(doc)
    return doc


def test_a_hot_loop_holding_less_than_most_of_the_wave_leaves_the_verdict_to_the_setup():
    heavy = setup_then_loop(setup_latency=30_000, loop_latency=8_000)
    flow = heavy["structure"]["control_flow"]
    assert flow["hot_loop"] and flow["hot_loop"]["time_share"] < DEFAULT_VERDICT.min_loop_share
    assert flow["prologue_share"] >= DEFAULT_VERDICT.prologue_share
    verdict = decide(heavy)
    assert verdict.kind == "prologue" and "before the hot loop" in verdict.sentence
    light = setup_then_loop(setup_latency=2_000, loop_latency=8_000)
    assert light["structure"]["control_flow"]["hot_loop"]["time_share"] >= DEFAULT_VERDICT.min_loop_share
    assert decide(light).kind != "prologue"


def test_the_plan_says_why_the_launch_is_not_known_and_what_the_requests_leave_out():
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render.plan import plan_outputs

    doc = _joined_by_name(4440, span_cycles=12_000, waves_per_cu=4)
    doc["structure"] = structure_of(doc)
    summary = build_summary([doc], [])
    entry = summary["kernels"][0]["dispatches"][0]
    assert entry["launch"] is None and "another launch" in entry["launch_unmatched"]
    files = plan_outputs(summary, [doc], [])
    assert "Not known: the traced waves ran 6.0 µs" in files["plan.md"]
    assert "Not known: the traced waves ran 6.0 µs" in files["plan.html"]


def test_without_agent_info_an_arch_whose_products_agree_gives_the_cu_count_and_the_peak():
    from kerneltrace.arch.table import arch_cu_count, arch_peak_hbm_gbps
    from kerneltrace.plan.summary import build_summary

    assert arch_cu_count("gfx950") == 256 and arch_cu_count("gfx942") is None  # MI300A: 228
    doc = short_kernel(200_000)
    doc["metadata"]["agent"] = None
    doc["metadata"]["kernel_trace"]["grid_size"] = [128 * 64, 1, 1]  # 128 workgroups
    doc["structure"] = structure_of(doc)
    launch, traffic = doc["structure"]["launch"], doc["structure"]["traffic"]
    assert launch["cu_count"] == 256 and launch["cu_fill"] == 0.5 and launch["launch_bound"]
    assert traffic["peak_gbps"] == arch_peak_hbm_gbps("gfx950")
    entry = build_summary([doc], [])["kernels"][0]["dispatches"][0]
    assert entry["traffic"]["peak_product"] == "gfx950 (every listed product; no agent_info)"


def _burst_then(valu: str, valu_stall: int) -> dict:
    loads = [Ins(f"global_load_dword v{40 + n}, v[{2 * n}:{2 * n + 1}], off", "VMEM-load", "k.py:27",
                 100 if n else 0, 120, WAVES) for n in range(6)]
    return _arch(hotspot_doc([
        Ins("s_load_dwordx2 s[4:5], s[0:1], 0x0", "SMEM", "k.py:5", 10, 40, WAVES),
        *loads,
        Ins(valu, "VALU", "k.py:30", valu_stall, valu_stall + 8, WAVES),
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:31", 2000, 2000, WAVES),
        Ins("s_endpgm", "SALU", "k.py:31", 0, 10, WAVES),
    ]))


def test_the_instruction_after_a_load_burst_carries_its_back_pressure():
    from kerneltrace.plan.context import PlanContext
    from kerneltrace.plan.rules.vmem_patterns import vmem_queue_burst

    # independent of the loads and stalling far longer than they do: the burst's stall
    found = vmem_queue_burst(PlanContext(_burst_then("v_pk_mul_f32 v[14:15], v[14:15], v[4:5]", 20_000)))
    assert found and found[0].evidence[0].instruction_index == 7
    assert "until the memory pipe has taken them" in found[0].root_cause
    # it reads a loaded register (a data dependency, not back-pressure), or stalls little: not added
    for valu, stall in (("v_add_f32_e32 v9, v40, v41", 20_000), ("v_mul_f32_e32 v9, v8, v7", 300)):
        found = vmem_queue_burst(PlanContext(_burst_then(valu, stall)))
        assert all(e.instruction_index != 7 for f in found for e in f.evidence)
