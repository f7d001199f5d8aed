"""The code.json-only structure analyses (issue 21.3–21.7): encoding sizes, control flow, drained
waits, kernel-argument round trips, barrier causes, launch context and request bandwidth, select
chains — on hand-made rows, synthetic captures (kerneltrace.synth) and the real shared captures."""

from __future__ import annotations

import pytest
from conftest import SHARED

from kerneltrace.analysis.barriers import barrier_causes
from kerneltrace.analysis.control_flow import FlowRow, control_flow
from kerneltrace.analysis.dataflow import can_move_above, depends, select_chains
from kerneltrace.analysis.drains import drain_waits, stall_by_class
from kerneltrace.analysis.launch import bytes_per_lane, launch_context, request_traffic
from kerneltrace.analysis.setup import kernarg_bases, round_trips
from kerneltrace.isa.encoding import encoded_size


def rows(spec: list[tuple[str, int, int]], *, pcs: bool = True) -> list[FlowRow]:
    """FlowRows from (asm, hits, stall); addresses from the encoding sizes (or none)."""
    out, pc = [], 0
    for index, (asm, hits, stall) in enumerate(spec, start=1):
        out.append(FlowRow(index, asm, hits, pc if pcs else None, 1, stall + 4 * hits, stall))
        pc += encoded_size(asm)
    return out


def back_edge(spec, latch: int, header: int) -> None:
    """Give the branch at 1-based row `latch` the immediate that jumps to row `header`."""
    sizes = [encoded_size(asm) for asm, _, _ in spec]
    target, pc = sum(sizes[: header - 1]), sum(sizes[: latch - 1])
    offset = (target - pc - 4) // 4
    asm, hits, stall = spec[latch - 1]
    spec[latch - 1] = (f"{asm.split()[0]} {offset & 0xFFFF}", hits, stall)


def test_encoding_sizes():
    assert encoded_size("s_mov_b32 s7, 0x27000") == 8  # literal
    assert encoded_size("s_mov_b32 s7, 0x10") == 4  # inline constant
    assert encoded_size("s_movk_i32 s0, 0x1000") == 4  # SOPK carries its immediate
    assert encoded_size("v_add_u32_e32 v1, 0x400, v2") == 8
    assert encoded_size("v_add_u32_e64 v1, v3, v2") == 8
    assert encoded_size("v_readfirstlane_b32 s4, v1") == 4
    assert encoded_size("v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3]") == 16
    assert encoded_size("buffer_load_dwordx4 v[0:3], v0, s[4:7], 0 offen") == 8
    assert encoded_size("s_waitcnt vmcnt(0)") == 4


# A loop (rows 4–9, 10 iterations per wave over 2 waves) with a scratch reload waited at once.
LOOP = [
    ("s_load_dwordx2 s[4:5], s[0:1], 0x0", 2, 0),
    ("s_waitcnt lgkmcnt(0)", 2, 400),
    ("s_mov_b32 s20, 0", 2, 0),
    ("buffer_load_dwordx4 v[4:7], v0, s[4:7], 0 offen", 20, 0),
    ("scratch_load_dword v9, off, off offset:16", 20, 0),
    ("s_waitcnt vmcnt(0)", 20, 3000),
    ("v_add_f32_e32 v8, v9, v4", 20, 0),
    ("s_add_u32 s20, s20, 1", 20, 0),
    ("s_cbranch_scc1 0", 20, 0),
    ("s_endpgm", 2, 10),
]


@pytest.mark.parametrize("pcs", [True, False], ids=["vaddr", "estimated"])
def test_loop_found_from_code_json_alone(pcs):
    spec = list(LOOP)
    back_edge(spec, 9, 4)
    flow = control_flow(rows(spec, pcs=pcs))
    assert flow.addresses == ("vaddr" if pcs else "estimated")
    assert flow.waves == 2
    hot = flow.hot_loop
    assert (hot.first_index, hot.last_index) == (4, 9)
    assert hot.iterations_per_wave == 10.0
    assert hot.time_share > 0.8
    assert 0 < flow.once_per_wave_share < 0.2
    assert flow.blocks >= 3


def test_loop_without_iterations_is_not_hot():
    spec = list(LOOP)
    back_edge(spec, 9, 4)
    spec = [(asm, 2, stall) for asm, _, stall in spec]  # header runs once per wave
    flow = control_flow(rows(spec))
    assert flow.loops and not flow.loops[0].iterates and flow.hot_loop is None
    assert flow.once_per_wave_share == 1.0


def test_hot_loop_descends_through_a_rotated_outer_loop():
    """A persistent GEMM's tile loop (rows 2-8) overlaps a second, non-iterating loop (rows 4-9)
    that the compiler's rotation makes the K loop's innermost parent: the hot loop is still the K
    loop (rows 5-6) that holds the time, not the tile loop around it."""
    spec = [
        ("s_mov_b32 s20, 0", 2, 0),
        ("v_add_f32_e32 v1, v2, v3", 6, 0),  # tile loop header: 3 tiles per wave
        ("v_mul_f32_e32 v1, v2, v3", 6, 0),
        ("s_waitcnt lgkmcnt(0)", 8, 0),  # rotated loop header: 1.33 runs per entry
        ("v_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]", 60, 50000),  # K loop
        ("s_cbranch_scc1 0", 60, 0),
        ("v_add_f32_e32 v8, v9, v4", 8, 0),
        ("s_cbranch_scc1 0", 6, 0),
        ("s_cbranch_execz 0", 2, 0),
        ("s_endpgm", 2, 10),
    ]
    back_edge(spec, 6, 5)
    back_edge(spec, 8, 2)
    back_edge(spec, 9, 4)
    flow = control_flow(rows(spec))
    k_loop = next(loop for loop in flow.loops if loop.first_index == 5)
    assert k_loop.parent == 4 and not next(loop for loop in flow.loops if loop.first_index == 4).iterates
    hot = flow.hot_loop
    assert (hot.first_index, hot.last_index) == (5, 6)
    assert hot.iterations_per_wave == 30.0


def test_wait_is_charged_to_the_reload_it_drains_and_states_the_split():
    spec = list(LOOP)
    back_edge(spec, 9, 4)
    flow_rows = rows(spec)
    drains = {d.index: d for d in drain_waits(flow_rows, control_flow(flow_rows))}
    reload_wait = drains[6]
    assert reload_wait.drained == (5, 4)  # youngest first
    assert reload_wait.primary == "spill"
    assert reload_wait.classes == {"spill": 1, "global-load": 1}
    by_class = stall_by_class(drains.values())
    assert by_class["spill"] == {"primary": 3000, "shared": 3000}
    assert drains[2].primary == "kernarg"


def test_loop_top_wait_drains_the_previous_iteration():
    spec = [
        ("s_mov_b32 s20, 0", 1, 0),
        ("s_waitcnt vmcnt(0)", 8, 900),  # loop top
        ("v_mfma_f32_16x16x16_f16 v[0:3], v[4:5], v[6:7], v[0:3]", 8, 0),
        ("buffer_load_dwordx4 v[4:7], v0, s[4:7], 0 offen", 8, 0),  # next tile, end of body
        ("s_cbranch_scc1 0", 8, 0),
        ("s_endpgm", 1, 0),
    ]
    back_edge(spec, 5, 2)
    flow_rows = rows(spec)
    drains = {d.index: d for d in drain_waits(flow_rows, control_flow(flow_rows))}
    assert drains[2].drained == (4,)
    assert drains[2].primary == "global-load"


def test_serialized_kernel_argument_round_trips():
    spec = [
        ("s_load_dwordx2 s[4:5], s[0:1], 0x0", 4, 0),
        ("s_waitcnt lgkmcnt(0)", 4, 1000),
        ("buffer_load_dword v1, v0, s[4:7], 0 offen", 4, 0),
        ("s_load_dwordx2 s[8:9], s[0:1], 0x10", 4, 0),  # second batch, from the kernarg pointer
        ("s_load_dwordx2 s[10:11], s[4:5], 0x0", 4, 0),  # pointer chase: not a kernarg load
        ("s_waitcnt lgkmcnt(0)", 4, 800),
        ("s_endpgm", 4, 200),
    ]
    flow_rows = rows(spec)
    bases = kernarg_bases(flow_rows)
    assert bases == frozenset({"s[0:1]"})
    setup = round_trips(flow_rows, drain_waits(flow_rows, kernarg_bases=bases), 2000, bases)
    assert [t.wait_index for t in setup.trips] == [2, 6]
    assert [t.serialized for t in setup.trips] == [False, True]
    assert setup.trips[1].loads == (4,)
    assert (setup.share, setup.late_share) == (0.9, 0.4)


def test_barrier_cause_is_the_wait_before_it():
    spec = [
        ("buffer_load_dwordx4 v[4:7], v0, s[4:7], 0 offen", 4, 0),
        ("s_waitcnt vmcnt(0)", 4, 2000),
        ("s_barrier", 4, 1500),
        ("ds_read_b128 v[8:11], v1", 4, 0),
        ("s_waitcnt lgkmcnt(0)", 4, 100),
        ("s_barrier", 4, 400),
        ("s_endpgm", 4, 0),
    ]
    flow_rows = rows(spec)
    barriers = barrier_causes(flow_rows, drain_waits(flow_rows))
    first, second = barriers.causes
    assert (first.cause_index, first.cause_drains, first.explained) == (2, "global-load", 1500)
    assert (second.cause_index, second.explained) == (5, 100)
    assert barriers.explained_share == round(1600 / 1900, 4)


def test_launch_under_filled_tail_and_grid_limit():
    agent = {"cu_count": 256, "simd_per_cu": 4}
    occupancy = {"waves_per_simd": 3, "limits": {"workgroup": 8}}
    under = launch_context({"grid_size": [256, 40, 1], "workgroup_size": [256, 1, 1],
                            "duration_ns": 91240}, agent, occupancy, 64)
    assert (under.workgroups, under.cu_fill, under.launch_bound) == (40, 0.1562, True)
    assert under.grid_limits_occupancy
    tail = launch_context({"grid_size": [8192, 32, 1], "workgroup_size": [256, 1, 1]}, agent,
                          occupancy, 64)
    assert (tail.workgroups, tail.resident_workgroups_per_cu, tail.rounds) == (1024, 3, 1.333)
    assert tail.tail_loss == 0.3335 and tail.launch_bound
    full = launch_context({"grid_size": [2560000, 1, 1], "workgroup_size": [256, 1, 1]}, agent,
                          occupancy, 64)
    assert not full.launch_bound and full.cu_fill == 1.0
    assert launch_context(None, agent, occupancy, 64) is None


def test_request_bandwidth():
    from types import SimpleNamespace as Row

    assert [bytes_per_lane(a) for a in ("buffer_load_dwordx4 v[0:3]", "global_load_dword v1",
                                        "buffer_load_ushort v2", "global_load_b128 v[0:3]",
                                        "global_store_short v1", "v_add_f32 v1")] == [16, 4, 2, 16, 2, 0]
    table = [Row(asm="buffer_load_dwordx4 v[0:3], v8, s[4:7], 0 offen", hits=8),
             Row(asm="buffer_store_dwordx4 v[0:3], v8, s[12:15], 0 offen", hits=4),
             Row(asm="scratch_load_dword v1, off, off offset:4", hits=4)]
    traffic = request_traffic(table, 4, 64, 40000, 20000, 8000.0)
    assert (traffic.load_bytes_per_wave, traffic.store_bytes_per_wave) == (2048.0, 1024.0)
    assert traffic.dispatch_bytes == 3072 * 40000
    assert traffic.fraction_of_peak == round(3072 * 40000 / 20000 / 8000, 4)


def test_select_chains_and_dependencies():
    serial = [(1, "v_cmp_gt_f32_e32 vcc, v2, v1"), (2, "v_cndmask_b32_e32 v1, v1, v2, vcc"),
              (3, "v_cmp_gt_f32_e32 vcc, v3, v1"), (4, "v_cndmask_b32_e32 v1, v1, v3, vcc"),
              (5, "v_cmp_gt_f32_e32 vcc, v4, v1"), (6, "v_cndmask_b32_e32 v1, v1, v4, vcc")]
    assert [(c.first, c.last, c.length) for c in select_chains(serial)] == [(2, 6, 3)]
    independent = [(1, "v_cmp_le_i32_e32 vcc, v170, v134"), (2, "v_cndmask_b32_e32 v94, v232, v94, vcc"),
                   (3, "v_cmp_le_i32_e32 vcc, v175, v134"), (4, "v_cndmask_b32_e32 v93, v232, v93, vcc"),
                   (5, "v_cmp_le_i32_e32 vcc, v179, v134"), (6, "v_cndmask_b32_e32 v95, v232, v95, vcc")]
    assert select_chains(independent) == []
    # a running argmax keeps the value and its index: two interleaved selects per step, the value
    # select reading the value select two back (an unrolled top-k round)
    argmax = []
    for step in range(6):
        base = 10 + 4 * step
        argmax += [(base, f"v_cmp_gt_f32_e32 vcc, v{30 + step}, v15"), (base + 1, "s_nop 1"),
                   (base + 2, f"v_cndmask_b32_e32 v15, v15, v{30 + step}, vcc"),
                   (base + 3, f"v_cndmask_b32_e32 v23, v23, v{40 + step}, vcc")]
    chains = select_chains(argmax)
    assert [(c.first, c.last) for c in chains] == [(12, 33)] and chains[0].length >= 11
    # two argmax rounds separated by unrelated selects are two chains
    unrelated = [(100 + i, f"v_cndmask_b32_e32 v{60 + i}, v{70 + i}, v{80 + i}, vcc") for i in range(4)]
    later = [(at + 200, asm) for at, asm in argmax]
    assert len(select_chains(argmax + unrelated + later)) == 2
    assert depends("v_add_f32_e32 v1, v2, v3", "v_mul_f32_e32 v4, v1, v1")
    assert not can_move_above(["v_add_f32_e32 v1, v2, v3", "v_mul_f32_e32 v4, v1, v1"], 1, 0)
    assert can_move_above(["v_add_f32_e32 v1, v2, v3", "v_cmp_gt_f32_e32 vcc, v9, v8"], 1, 0)


def test_synthetic_spill_loop_without_wave_files(tmp_path):
    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.synth import write_dispatch_dir
    from kerneltrace.synth.spill import demo_spill

    spec = demo_spill()
    directory = write_dispatch_dir(tmp_path, spec, with_waves=False)
    structure = analyze_dispatch(directory)["structure"]
    hot = structure["control_flow"]["hot_loop"]
    assert (hot["first_index"], hot["last_index"]) == (spec.loop.first + 1, spec.loop.last + 1)
    assert hot["iterations_per_wave"] == spec.loop.iterations
    assert structure["waits"]["by_class"]["spill"]["primary"] > 0


@pytest.mark.shared
def test_real_captures(captures):
    from kerneltrace.document.hotspot_report import analyze_dispatch

    legacy = analyze_dispatch(SHARED / "captures/aiter-glog-fork-legacy-att/att/"
                              "flash_fwd_splitkv_mla_kernel_v1_ui")["structure"]
    hot = legacy["control_flow"]["hot_loop"]
    assert legacy["control_flow"]["addresses"] == "estimated"
    assert (hot["first_index"], hot["last_index"]) == (2172, 4243) and hot["time_share"] > 0.9
    assert legacy["waits"]["by_class"]["spill"]["share"] > 0.3  # reload waits, no wave files read
    rope = analyze_dispatch(SHARED / "captures/flydsl-kernel-profiling-lib/examples/fused_rope_cache/"
                            "att_viewer/big/ui_output_agent_4253_dispatch_8781")["structure"]
    assert rope["setup"]["round_trips"] >= 4 and rope["setup"]["share"] > 0.7
    assert rope["launch"]["workgroups"] == 8 and rope["launch"]["launch_bound"]
    vec = analyze_dispatch(SHARED / "captures/flydsl-kernel-profiling-lib/examples/vec_add/"
                           "att_viewer/big/ui_output_agent_14705_dispatch_25")["structure"]
    assert 0.7 < vec["traffic"]["fraction_of_peak"] < 0.9


def test_the_structure_thresholds_in_use_decide_loops_barriers_and_chains():
    """`plan.thresholds.structure` (hotspot_analyzer.py --thresholds) reaches each detection:
    the same rows judged with the defaults and with other values."""
    from kerneltrace.thresholds import StructureThresholds

    spec = [("s_barrier", 4, 100), ("s_barrier", 2, 100), *LOOP]  # the second: half the hits
    back_edge(spec, 11, 6)
    flow_rows = rows(spec)
    flow = control_flow(flow_rows)
    assert flow.hot_loop is not None and flow.hot_loop.iterations_per_entry == 10.0
    assert barrier_causes(flow_rows, drain_waits(flow_rows), flow).ping_pong  # 2 ≤ 0.6 × 4
    strict = StructureThresholds(min_iterations=11.0, conditional_hits=0.4)
    assert control_flow(flow_rows, limits=strict).hot_loop is None  # 10 iterations < 11
    assert not barrier_causes(flow_rows, drain_waits(flow_rows), flow, strict).ping_pong  # 2 > 1.6
    serial = [(1, "v_cmp_gt_f32_e32 vcc, v2, v1"), (2, "v_cndmask_b32_e32 v1, v1, v2, vcc"),
              (3, "v_cmp_gt_f32_e32 vcc, v3, v1"), (4, "v_cndmask_b32_e32 v1, v1, v3, vcc"),
              (5, "v_cmp_gt_f32_e32 vcc, v4, v1"), (6, "v_cndmask_b32_e32 v1, v1, v4, vcc")]
    assert len(select_chains(serial)) == 1 and select_chains(serial, 4) == []
