"""Loads every workgroup repeats (analysis/address_reuse.py) and what request traffic makes of them.

Hand-written programs in the shape real kernels have: a norm's gamma load addressed by the lane
alone beside a row load addressed by the workgroup id; the workgroup id reaching an address
through SCC, through one arm of a branch, or through a loop-carried increment; loads into LDS
and atomics without return, whose first operand is read, not written.
"""

from __future__ import annotations

from types import SimpleNamespace

from kerneltrace.analysis.address_reuse import input_sgprs, repeated_loads
from kerneltrace.analysis.control_flow import FlowRow
from kerneltrace.analysis.launch import request_traffic
from kerneltrace.isa.registers import reads, writes

KERNARG = frozenset({"s[0:1]"})


def program(*asms: str, hits: int = 4) -> list[FlowRow]:
    """Rows with consecutive 4-byte addresses (branch offsets below are counted in dwords)."""
    return [FlowRow(index, asm, hits, 4 * index, 0, 1, 0) for index, asm in enumerate(asms)]


ROW_AND_GAMMA = program(
    "s_load_dwordx4 s[4:7], s[0:1], 0x0",      # row buffer
    "s_load_dwordx4 s[8:11], s[0:1], 0x10",    # gamma buffer
    "v_lshlrev_b32_e32 v1, 4, v0",              # lane offset
    "s_mul_i32 s3, s2, 0x1000",                 # s2: the workgroup id (an input SGPR)
    "v_add_u32_e32 v2, s3, v1",                 # row offset: workgroup and lane
    "s_waitcnt lgkmcnt(0)",
    "buffer_load_dwordx4 v[4:7], v2, s[4:7], 0 offen",   # the row: differs per workgroup
    "buffer_load_dwordx4 v[8:11], v1, s[8:11], 0 offen",  # gamma: the same in every workgroup
    "s_endpgm",
)


def test_lane_addressed_load_is_repeated_and_workgroup_addressed_is_not():
    assert input_sgprs(row.asm for row in ROW_AND_GAMMA) == {("s", 0), ("s", 1), ("s", 2)}
    assert repeated_loads(ROW_AND_GAMMA, KERNARG) == {7}
    # without knowing which input pair is the argument pointer, every load depends on inputs
    assert repeated_loads(ROW_AND_GAMMA, frozenset()) == frozenset()


def test_a_register_reused_for_other_data_is_judged_at_each_use():
    rows = program(
        "s_load_dwordx4 s[8:11], s[0:1], 0x10",
        "v_lshlrev_b32_e32 v1, 4, v0",
        "s_waitcnt lgkmcnt(0)",
        "buffer_load_dwordx4 v[8:11], v1, s[8:11], 0 offen",  # lane only: repeated
        "v_add_u32_e32 v1, s2, v1",                             # now the workgroup's
        "buffer_load_dwordx4 v[12:15], v1, s[8:11], 0 offen",  # not repeated
        "s_endpgm",
    )
    assert repeated_loads(rows, KERNARG) == {3}


def test_workgroup_id_through_scc_marks_the_select():
    rows = program(
        "s_load_dwordx4 s[8:11], s[0:1], 0x10",
        "s_cmp_eq_u32 s2, 0",
        "s_cselect_b32 s12, 0x100, 0",
        "v_add_u32_e32 v1, s12, v0",
        "s_waitcnt lgkmcnt(0)",
        "buffer_load_dword v2, v1, s[8:11], 0 offen",
        "s_endpgm",
    )
    assert repeated_loads(rows, KERNARG) == frozenset()


def test_a_workgroup_dependent_def_on_one_arm_reaches_the_join():
    rows = program(
        "s_load_dwordx4 s[8:11], s[0:1], 0x10",
        "v_mov_b32_e32 v1, v0",
        "s_cmp_eq_u32 s12, 0",
        "s_cbranch_scc1 1",                  # skips the next row (target = pc + 4 + 4 × 1)
        "v_add_u32_e32 v1, s2, v0",          # only on this arm: the workgroup id
        "s_waitcnt lgkmcnt(0)",              # the join
        "buffer_load_dword v2, v1, s[8:11], 0 offen",
        "s_endpgm",
    )
    assert repeated_loads(rows, KERNARG) == frozenset()


def test_a_loop_carried_increment_by_the_workgroup_id_reaches_the_load_at_the_header():
    rows = program(
        "s_load_dwordx4 s[8:11], s[0:1], 0x10",
        "v_mov_b32_e32 v1, v0",
        "s_mov_b32 s12, 4",
        "s_waitcnt lgkmcnt(0)",
        "buffer_load_dword v2, v1, s[8:11], 0 offen",  # header: v1 from before the loop or the latch
        "v_add_u32_e32 v1, s2, v1",
        "s_sub_u32 s12, s12, 1",
        "s_cmp_lg_u32 s12, 0",
        "s_cbranch_scc1 -5",                           # back to row 4
        "s_endpgm",
        hits=16,
    )
    assert repeated_loads(rows, KERNARG) == frozenset()
    invariant_stride = [row if row.index != 5 else FlowRow(5, "v_add_u32_e32 v1, 64, v1", 16, 20, 0, 1, 0)
                        for row in rows]
    assert repeated_loads(invariant_stride, KERNARG) == {4}


def test_loads_into_lds_and_atomics_without_return_read_their_first_operand():
    lds = "buffer_load_dwordx4 v2, s[8:11], 0 offen sc0 lds"
    assert ("v", 2) in reads(lds) and writes(lds) == set()
    assert writes("global_load_lds_dwordx4 v[2:3], off") == set()
    atomic = "global_atomic_pk_add_bf16 v[2:3], v5, off"
    assert reads(atomic) == {("v", 2), ("v", 3), ("v", 5)} and writes(atomic) == set()
    returning = "global_atomic_add v1, v[2:3], v4, s[0:1] sc0"
    assert writes(returning) == {("v", 1)} and ("v", 1) not in reads(returning)
    # an LDS-direct load whose address holds the workgroup id is not repeated
    rows = program("s_load_dwordx4 s[8:11], s[0:1], 0x10", "v_add_u32_e32 v2, s2, v0",
                   "s_waitcnt lgkmcnt(0)", lds, "s_endpgm")
    assert repeated_loads(rows, KERNARG) == frozenset()


def test_request_traffic_leaves_repeated_loads_out_of_the_dispatch_bytes():
    table = [SimpleNamespace(index=row.index, asm=row.asm, hits=row.hits) for row in ROW_AND_GAMMA]
    traffic = request_traffic(table, 4, 64, 1000, 10_000, 8000.0, repeated_loads(ROW_AND_GAMMA, KERNARG))
    per_load = 4 * 16 * 64 / 4  # hits × bytes per lane × lanes over the traced waves
    assert traffic.load_bytes_per_wave == 2 * per_load
    assert traffic.repeated_load_bytes_per_wave == per_load
    assert traffic.dispatch_bytes == per_load * 1000
    assert traffic.fraction_of_peak == round(per_load * 1000 / 10_000 / 8000, 4)


def test_a_vector_register_rewritten_inside_an_if_keeps_the_marks_of_the_lanes_left_off():
    rows = program(
        "s_load_dwordx4 s[8:11], s[0:1], 0x10",
        "v_add_u32_e32 v1, s2, v0",                 # the workgroup's offset, every lane
        "v_cmp_gt_u32_e32 vcc, 16, v0",
        "s_and_saveexec_b64 s[4:5], vcc",           # if (lane < 16)
        "v_mov_b32_e32 v1, v0",                     #   these lanes only: lane offset
        "s_or_b64 exec, exec, s[4:5]",              # end if
        "s_waitcnt lgkmcnt(0)",
        "buffer_load_dword v2, v1, s[8:11], 0 offen",  # lanes ≥ 16 still address by workgroup
        "v_mov_b32_e32 v1, v0",                     # every lane on: replaced
        "buffer_load_dword v3, v1, s[8:11], 0 offen",
        "s_endpgm",
    )
    assert repeated_loads(rows, KERNARG) == {9}


def test_a_loop_that_narrows_exec_on_every_pass_settles():
    """A rolled loop saves and narrows EXEC each iteration without restoring it (a held-out
    ThunderKittens build): the dataflow entered the header one `if` level deeper every pass and
    never ended. Levels are capped, so it settles and still judges the loads."""
    rows = program(
        "s_load_dwordx4 s[4:7], s[0:1], 0x0",
        "v_lshlrev_b32_e32 v1, 4, v0",
        "s_mul_i32 s3, s2, 0x1000",
        "v_add_u32_e32 v2, s3, v1",
        "s_waitcnt lgkmcnt(0)",
        "v_cmp_gt_u32_e32 vcc, 64, v0",              # loop header
        "s_and_saveexec_b64 s[10:11], vcc",          # narrows EXEC, never restored in the loop
        "buffer_load_dwordx4 v[4:7], v2, s[4:7], 0 offen",   # workgroup-addressed
        "buffer_load_dwordx4 v[8:11], v1, s[4:7], 0 offen",  # lane-addressed
        "s_add_u32 s12, s12, 1",
        "s_cmp_lt_u32 s12, 16",
        "s_cbranch_scc1 -7",                         # back to the header (row 5)
        "s_endpgm",
    )
    assert repeated_loads(rows, KERNARG) == {8}


def test_random_programs_with_branches_and_exec_juggling_settle():
    """Seeded random programs over the instructions the dataflow treats specially (EXEC saves,
    restores and narrowing, SCC/VCC writers and readers, forward and backward branches): the
    analysis ends on every one and names only vector loads."""
    import random

    vocabulary = [
        "s_and_saveexec_b64 s[10:11], vcc", "s_or_b64 exec, exec, s[10:11]",
        "s_mov_b64 exec, -1", "s_andn2_saveexec_b64 s[12:13], s[12:13]",
        "v_cmpx_gt_u32_e32 64, v0", "v_cmp_gt_u32_e32 vcc, s2, v1",
        "s_cmp_lt_u32 s12, 16", "s_cselect_b32 s3, s2, 0", "s_add_u32 s12, s12, 1",
        "v_add_u32_e32 v1, s3, v1", "v_cndmask_b32_e32 v2, v1, v0, vcc", "v_mov_b32_e32 v1, v0",
        "buffer_load_dword v4, v1, s[4:7], 0 offen", "buffer_load_dword v5, v2, s[4:7], 0 offen",
        "global_load_dword v6, v[2:3], off",
    ]
    rng = random.Random(34)
    for _ in range(200):
        body = [rng.choice(vocabulary) for _ in range(rng.randint(4, 24))]
        asms = ["s_load_dwordx4 s[4:7], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)", *body]
        for _ in range(rng.randint(1, 3)):  # branches back or forward to a random row
            at = rng.randint(2, len(asms))
            target = rng.randint(0, len(asms))
            branch = rng.choice(["s_cbranch_scc1", "s_cbranch_vccnz", "s_branch", "s_cbranch_execz"])
            asms.insert(at, f"{branch} {target - at - 1}")
        asms.append("s_endpgm")
        rows = program(*asms, hits=8)
        found = repeated_loads(rows, KERNARG)
        loads = {row.index for row in rows if "_load_dword " in row.asm and not row.asm.startswith("s_")}
        assert found <= loads


def test_an_empty_or_opcode_only_row_has_no_operands():
    """A row with no text, or an opcode alone, reads nothing (the hostile-values property test
    found the empty row raising IndexError)."""
    from kerneltrace.analysis.address_reuse import _effect

    assert _effect("")[0] == frozenset() and _effect("   ")[0] == frozenset()
    assert ("vcc", 0) in _effect("s_cbranch_vccz")[0]  # reads VCC by its opcode alone
