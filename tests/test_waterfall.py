"""Waterfall loops from code.json (analysis/waterfall.py) and the WATERFALL-nonuniform-operand
finding on a synthetic capture (SYNTHETIC numbers)."""

from __future__ import annotations

import plan_verdict_specs as specs

from kerneltrace.analysis.waterfall import waterfall_loops
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.rules.waterfall import WaterfallThresholds
from kerneltrace.plan.summary import build_summary
from kerneltrace.synth import (
    KernelSpec,
    LoopRegion,
    SynthInstruction,
    WaveLayout,
    write_dispatch_dir,
)
from kerneltrace.synth.spec import KernelResources, with_branch_immediates

I = SynthInstruction  # noqa: E741

WATERFALL = (
    I("s_mov_b64 s[20:21], exec", 3),
    I("v_readfirstlane_b32 s8, v162", 3, stall_cycles=60),  # loop header
    I("v_readfirstlane_b32 s9, v163", 3, stall_cycles=60),
    I("v_readfirstlane_b32 s10, v172", 3, stall_cycles=60),
    I("v_readfirstlane_b32 s11, v173", 3, stall_cycles=60),
    I("v_cmp_eq_u64_e32 vcc, s[8:9], v[162:163]", 3, stall_cycles=40),
    I("s_nop 0", 3, stall_cycles=40),
    I("v_cmp_eq_u64_e64 s[0:1], s[10:11], v[172:173]", 3, stall_cycles=40),
    I("s_and_b64 s[0:1], vcc, s[0:1]", 3),
    I("s_and_saveexec_b64 s[0:1], s[0:1]", 3),
    I("buffer_load_dwordx4 v[134:137], v181, s[8:11], 0 offen", 3, latency_cycles=400),
    I("s_xor_b64 exec, exec, s[0:1]", 3),
    I("s_cbranch_execnz", 3),  # back edge to the first v_readfirstlane
    I("s_mov_b64 exec, s[20:21]", 3),
)


def _rows(asms):
    return [{"index": i, "asm": asm, "hits": 1} for i, asm in enumerate(asms)]


def test_a_waterfall_loop_is_found_with_its_guarded_load_and_overhead():
    rows = _rows([ins.asm for ins in WATERFALL])
    loops = [{"first_index": 1, "last_index": 12, "iterations_per_entry": 1.0}]
    (loop,) = waterfall_loops(rows, loops)
    assert (loop.first_index, loop.last_index, loop.guarded) == (1, 12, (10,))
    assert loop.uniform_reads == 4 and loop.passes_per_entry == 1.0
    assert loop.overhead == tuple(i for i in range(14) if i != 10)  # EXEC save and restore too


def test_a_loop_without_exec_narrowing_is_not_a_waterfall():
    asms = [ins.asm for ins in WATERFALL]
    asms[9] = "s_and_b64 s[2:3], s[0:1], s[4:5]"
    assert waterfall_loops(_rows(asms), [{"first_index": 1, "last_index": 12}]) == []
    asms = [ins.asm for ins in WATERFALL]
    asms[12] = "s_cbranch_scc1"  # an ordinary loop around the same instructions
    assert waterfall_loops(_rows(asms), [{"first_index": 1, "last_index": 12}]) == []


def _spec(passes: int = 1) -> KernelSpec:
    body = (*specs.KERNARGS, *WATERFALL,
            I("s_waitcnt vmcnt(0)", 4),
            I("v_add_f32_e32 v1, v134, v135", 4),
            I("global_store_dword v0, v1, s[8:9]", 5, latency_cycles=200),
            *specs.END)
    back_edge = len(specs.KERNARGS) + 12
    instructions = with_branch_immediates(body, {back_edge: len(specs.KERNARGS) + 1})
    return KernelSpec(
        name="waterfall_kernel", demangled="waterfall_kernel", arch="gfx942",
        instructions=instructions,
        loop=None if passes == 1 else LoopRegion(len(specs.KERNARGS) + 1, back_edge, passes),
        waves=WaveLayout(shader_engines=1, simds=4, slots=1, waves_per_slot=2),
        resources=KernelResources(arch_vgprs=192, accum_vgprs=0, sgprs=32, lds_bytes=0,
                                  workgroup=(256, 1, 1), grid=(65536, 1, 1)),
        source_path=specs.SOURCE, source_text="\n".join(f"# line {n}" for n in range(1, 60)))


def _finding(tmp_path, passes=1):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, _spec(passes)), waves=True)
    entry = build_summary([doc], [])["kernels"][0]["dispatches"][0]
    (finding,) = [f for f in entry["findings"] if f["rule"] == "WATERFALL-nonuniform-operand"]
    return doc, finding


def test_the_plan_names_the_waterfall_and_cites_its_load_and_back_edge(tmp_path):
    doc, finding = _finding(tmp_path)
    cited = [e["instruction_index"] for e in finding["evidence"]]
    load = next(i["index"] for i in doc["instructions"] if i["asm"].startswith("buffer_load"))
    branch = next(i["index"] for i in doc["instructions"] if i["asm"].startswith("s_cbranch_execnz"))
    assert cited == [load, branch]
    assert "uniform at run time" in finding["title"]
    gain = finding["estimated_gain"]
    assert 0 < gain["low"] < gain["high"] < 1


def test_an_operand_that_varies_across_lanes_claims_less(tmp_path):
    limits = WaterfallThresholds()
    _, uniform = _finding(tmp_path / "uniform")
    _, varying = _finding(tmp_path / "varying", passes=4)
    assert 4 > limits.uniform_passes and "does vary across lanes" in varying["title"]
    assert "uniform at run time" in uniform["title"]
    assert f"{limits.varying_removable[1]:.0%} of it" in varying["estimated_gain"]["basis"]
