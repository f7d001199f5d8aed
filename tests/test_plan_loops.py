"""Static loop detection (analysis/loops.py) and the loop-aware P1/P3 rules and umbrella gains."""

from __future__ import annotations

import pytest
from plan_synthetic import Ins, hotspot_doc

from kerneltrace.analysis.loops import (
    BranchRow,
    branch_offset,
    branch_target,
    find_loops,
    innermost_loop,
    rows_from_instructions,
)
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.rules.drain import PatternThresholds
from kerneltrace.plan.rules.kernel_wide import occupancy_limited
from kerneltrace.plan.rules.lds_scalar_patterns import lds_read_before_mfma
from kerneltrace.plan.rules.vmem_patterns import loads_in_mfma_loop

MFMA_32 = "v_mfma_f32_32x32x8_f16 a[0:15], v[44:45], v[46:47], a[0:15]"  # 32 pass cycles


def _simm16(offset: int) -> int:
    """The decoder prints the signed dword offset as an unsigned 16-bit number."""
    return offset & 0xFFFF


def _rows(asms: list[str], hits: list[int] | None = None) -> list[BranchRow]:
    """One 4-byte instruction per row at pc = 0x100 + 4 × index."""
    return [
        BranchRow(i, 0x100 + 4 * i, asm, None if hits is None else hits[i])
        for i, asm in enumerate(asms)
    ]


def _back_branch(at: int, to: int, op: str = "s_cbranch_scc1") -> str:
    # target = pc + 4 + 4 × offset, all instructions 4 bytes: offset = to - at - 1
    return f"{op} {_simm16(to - at - 1)}"


def test_branch_offset_is_a_signed_dword_offset_from_the_next_instruction():
    assert branch_offset("s_cbranch_scc1 65363") == -173
    assert branch_offset("s_branch 52") == 52
    assert branch_target(0x1BC4, "s_cbranch_scc1 65363") == 0x1BC8 - 4 * 173
    assert branch_offset("s_cbranch_scc1 BB0_3") is None  # symbolic label: unresolvable
    assert branch_offset("s_setpc_b64 s[4:5]") is None
    assert branch_offset("s_add_u32 s0, s1, 4") is None


def test_backward_branch_gives_the_loop_body_and_a_trip_count_from_hits():
    asms = ["s_mov_b32 s0, 0", "v_add_u32 v1, v2, v3", "s_add_u32 s0, s0, 1", "s_cmp_lt_u32 s0, s1"]
    asms.append(_back_branch(4, 1))
    asms.append("s_endpgm")
    loops = find_loops(_rows(asms, hits=[4, 32, 32, 32, 32, 4]))
    assert [(loop.first_index, loop.last_index, loop.depth) for loop in loops] == [(1, 4, 0)]
    assert loops[0].trip_count == 8.0 and loops[0].iterates and loops[0].hits_consistent


def test_forward_branches_and_unresolved_targets_make_no_loop():
    asms = ["s_cmp_eq_u32 s0, 0", "s_cbranch_scc1 2", "v_add_u32 v1, v2, v3", "v_nop", "s_branch 0"]
    assert find_loops(_rows(asms)) == []
    # a backward offset that lands between instructions (mid-instruction) is not resolved
    rows = [BranchRow(0, 0x100, "v_nop"), BranchRow(1, 0x108, "s_branch 65534")]
    assert find_loops(rows) == []


def test_nested_loops_get_depth_and_parent():
    asms = ["s_nop 0"] * 10
    asms[6] = _back_branch(6, 3)  # inner: rows 3..6
    asms[8] = _back_branch(8, 1)  # outer: rows 1..8
    loops = find_loops(_rows(asms))
    shape = [(loop.first_index, loop.last_index, loop.depth, loop.parent) for loop in loops]
    assert shape == [(1, 8, 0, None), (3, 6, 1, 1)]
    assert innermost_loop(loops, 4).first_index == 3
    assert innermost_loop(loops, 2).first_index == 1
    assert innermost_loop(loops, 9) is None


def test_hits_flag_a_header_that_runs_less_often_than_its_latch():
    asms = ["s_nop 0", "s_nop 0", _back_branch(2, 0)]
    (loop,) = find_loops(_rows(asms, hits=[4, 8, 8]))
    assert loop.hits_consistent is False
    # never-taken back edge: header runs once per entry
    asms = ["s_nop 0", "s_nop 0", "s_nop 0", _back_branch(3, 1)]
    (loop,) = find_loops(_rows(asms, hits=[8, 8, 8, 8]))
    assert loop.trip_count == 1.0 and not loop.iterates


def test_observed_header_wins_over_the_decoded_target():
    asms = ["s_nop 0"] * 6
    asms[5] = _back_branch(5, 3)
    (loop,) = find_loops(_rows(asms), observed_headers={5: 1})
    assert (loop.first_index, loop.last_index) == (1, 5)


# ---- loop-aware P1 / P3 ------------------------------------------------------------------


def _loop_program(mfmas_before_wait: int, *, load_stall: int = 300, wait_stall: int = 900) -> list:
    """A loop whose load sits at the top and whose wait follows `mfmas_before_wait` MFMAs;
    the rest of the loop's MFMAs run at the end of the body (before the load in program order)."""
    head = [Ins("s_mov_b32 s20, 0", "SALU", "k.py:5", 0, 4, hits=4)]
    body = [
        Ins("global_load_dwordx4 v[20:23], v[2:3], off", "VMEM-load", "k.py:20", load_stall,
            load_stall + 20, hits=32),
    ]
    body += [Ins(MFMA_32, "MFMA", "k.py:30", 0, 32, hits=32) for _ in range(mfmas_before_wait)]
    body.append(Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:20", wait_stall, wait_stall + 10,
                    hits=32))
    body += [Ins(MFMA_32, "MFMA", "k.py:30", 0, 32, hits=32) for _ in range(4)]
    body += [
        Ins("s_add_u32 s20, s20, 1", "SALU", "k.py:18", 0, 4, hits=32),
        Ins("s_cmp_lt_u32 s20, s14", "SALU", "k.py:18", 0, 4, hits=32),
    ]
    latch = len(head) + len(body)
    body.append(Ins(_back_branch(latch, len(head)), "branch", "k.py:18", 0, 4, hits=32))
    return head + body + [Ins("s_endpgm", "other", "k.py:40", 0, 4, hits=4)]


def _wrapped_program() -> list:
    """The load is the last thing in the body; its wait is at the top of the next iteration,
    after two MFMAs: in program order no MFMA sits between them."""
    head = [Ins("s_mov_b32 s20, 0", "SALU", "k.py:5", 0, 4, hits=4)]
    body = [
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:11", 900, 910, hits=32),
        Ins(MFMA_32.replace("v[44:45]", "v[20:21]"), "MFMA", "k.py:30", 0, 32, hits=32),
        Ins(MFMA_32, "MFMA", "k.py:30", 0, 32, hits=32),
        Ins("s_add_u32 s20, s20, 1", "SALU", "k.py:18", 0, 4, hits=32),
        Ins("global_load_dwordx4 v[20:23], v[2:3], off", "VMEM-load", "k.py:20", 300, 320, hits=32),
        Ins("s_cmp_lt_u32 s20, s14", "SALU", "k.py:18", 0, 4, hits=32),
    ]
    # the wait at the header drains the load of the previous iteration; MFMAs follow it here,
    # so put two MFMAs at the very end of the body as well (they run between load and wait)
    body += [Ins(MFMA_32, "MFMA", "k.py:30", 0, 32, hits=32) for _ in range(2)]
    latch = len(head) + len(body)
    body.append(Ins(_back_branch(latch, len(head)), "branch", "k.py:18", 0, 4, hits=32))
    return head + body + [Ins("s_endpgm", "other", "k.py:40", 0, 4, hits=4)]


def test_p1_fires_when_the_wait_is_in_the_next_iteration_after_two_mfmas():
    program = _wrapped_program()
    ctx = PlanContext(hotspot_doc(program))
    assert [(loop.first_index, loop.last_index) for loop in ctx.static_loops] == [(1, 9)]
    (finding,) = loads_in_mfma_loop(ctx)
    assert finding.location == "k.py:20"
    wait_note = next(e.note for e in finding.evidence if e.instruction_index == 1)
    assert "2 MFMA(s), 64 pass cycles" in wait_note and "next iteration" in wait_note
    assert "counting the MFMAs at the end of the loop body" in finding.root_cause


def test_p1_program_order_alone_would_miss_the_wrapped_case():
    # the same instructions without the back edge: straight-line, no MFMA before the wait
    program = _wrapped_program()
    program[-2] = Ins("s_nop 0", "nop", "k.py:18", 0, 4, hits=32)
    assert PlanContext(hotspot_doc(program)).static_loops == []
    assert loads_in_mfma_loop(PlanContext(hotspot_doc(program))) == []


def test_p1_fires_when_few_mfma_cycles_cover_the_load():
    (finding,) = loads_in_mfma_loop(PlanContext(hotspot_doc(_loop_program(2))))
    assert finding.location == "k.py:20" and finding.priority == "HIGH"
    assert "64 MFMA pass cycles" in finding.root_cause


def test_p1_silent_when_enough_mfma_cycles_cover_the_load():
    enough = PatternThresholds().hbm_latency_cycles // 32 + 1  # 32-cycle MFMAs between issue and wait
    assert loads_in_mfma_loop(PlanContext(hotspot_doc(_loop_program(enough)))) == []


def test_p1_silent_when_the_wait_does_not_stall():
    program = _loop_program(2, load_stall=0, wait_stall=0)
    assert loads_in_mfma_loop(PlanContext(hotspot_doc(program))) == []


def _lds_loop(mfmas_between: int) -> list:
    """ds_read at the end of the body; its lgkmcnt wait and MFMA consumer at the top."""
    head = [Ins("s_mov_b32 s20, 0", "SALU", "k.py:5", 0, 4, hits=4)]
    body = [
        Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:50", 400, 410, hits=32),
        Ins("v_mfma_f32_32x32x8_f16 a[0:15], v[20:21], v[22:23], a[0:15]", "MFMA", "k.py:51", 0,
            32, hits=32),
        Ins("s_add_u32 s20, s20, 1", "SALU", "k.py:18", 0, 4, hits=32),
        Ins("ds_read_b64 v[20:21], v5", "LDS", "k.py:50", 0, 8, hits=32),
    ]
    body += [Ins(MFMA_32, "MFMA", "k.py:30", 0, 32, hits=32) for _ in range(mfmas_between)]
    latch = len(head) + len(body)
    body.append(Ins(_back_branch(latch, len(head)), "branch", "k.py:18", 0, 4, hits=32))
    return head + body + [Ins("s_endpgm", "other", "k.py:40", 0, 4, hits=4)]


def test_p3_fires_across_the_back_edge():
    (finding,) = lds_read_before_mfma(PlanContext(hotspot_doc(_lds_loop(1))))
    assert finding.location == "k.py:50"
    assert [e.instruction_index for e in finding.evidence] == [4, 1, 2]
    assert "next iteration" in finding.evidence[1].note


def test_p3_silent_when_mfmas_cover_the_lds_latency():
    assert lds_read_before_mfma(PlanContext(hotspot_doc(_lds_loop(5)))) == []  # 160 cycles


def test_p3_skips_a_mixed_wait_that_also_drains_a_later_global_load():
    program = [
        Ins("ds_read_b64 v[20:21], v5", "LDS", "k.py:50", 0, 8),
        Ins("global_load_dwordx4 v[30:33], v[2:3], off", "VMEM-load", "k.py:60", 0, 8),
        Ins("s_waitcnt vmcnt(0) lgkmcnt(0)", "VMEM-wait", "k.py:50", 400, 410),
        Ins("v_mfma_f32_32x32x8_f16 a[0:15], v[20:21], v[22:23], a[0:15]", "MFMA", "k.py:51", 0,
            32),
    ]
    assert lds_read_before_mfma(PlanContext(hotspot_doc(program))) == []


def test_occupancy_finding_states_its_scope_and_a_bounded_gain():
    program = [Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:20", 900, 910)]
    occupancy = {
        "waves_per_simd": 2,
        "limited_by": "vgpr",
        "limits": {"vgpr": 2, "lds": 5, "workgroup": 8, "hardware": 8},
        "next_level": {},
    }
    (finding,) = occupancy_limited(PlanContext(hotspot_doc(program, occupancy=occupancy)))
    assert finding.scope == "kernel" and "scope: whole kernel" in finding.title
    assert finding.stall_share == pytest.approx(1.0)
    # one more wave (2→3) overlaps at most a third of the waits, halved: ≤ 1/6 of all stall
    assert finding.estimated_gain.low == 0.0
    assert finding.estimated_gain.high == pytest.approx(1 / 6, abs=1e-3)
    assert "1/3" in finding.estimated_gain.basis


def test_occupancy_finding_names_tied_limiters_and_yields_to_the_grid():
    program = [Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:20", 900, 910)]
    occupancy = {"waves_per_simd": 2, "limited_by": "vgpr", "tied_limiters": ["vgpr", "lds"],
                 "limits": {"vgpr": 2, "lds": 2, "workgroup": 8, "hardware": 8}, "next_level": {}}
    doc = hotspot_doc(program, occupancy=occupancy)
    (finding,) = occupancy_limited(PlanContext(doc))
    assert "VGPR and LDS" in finding.title and "tied" in finding.root_cause
    # the grid supplies 2 waves per SIMD: more room per CU adds none
    doc["metadata"] = {"kernel_trace": {"grid_size": [131072, 1, 1], "workgroup_size": [512, 1, 1]},
                       "agent": {"cu_count": 256, "simd_per_cu": 4}}
    doc.pop("structure", None)
    assert occupancy_limited(PlanContext(doc)) == []
    # no kernel-trace row: LDS and workgroup limits unknown, no occupancy advice
    unknown = {**occupancy, "limits": {"vgpr": 2, "lds": None, "workgroup": None, "hardware": 8}}
    assert occupancy_limited(PlanContext(hotspot_doc(program, occupancy=unknown))) == []


def test_rows_adapter_reads_the_hotspot_instructions():
    doc = hotspot_doc(_loop_program(2))
    rows = rows_from_instructions(doc["instructions"])
    assert {row.index for row in rows} == set(range(len(doc["instructions"])))
    assert [(loop.first_index, loop.last_index) for loop in find_loops(rows)] == [(1, 11)]
