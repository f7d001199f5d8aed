"""Instruction classification on the opcode token, waitcnt parsing, decoder categories."""

from __future__ import annotations

import pytest

from kerneltrace.isa.classify import (
    STALL_TYPES,
    base_opcode,
    classify,
    decoder_category_name,
    is_memory_load,
    legacy_inst_type_name,
    opcode,
    wait_counters,
    wait_kinds,
)

CASES = [
    # LDS: every ds_* spelling, including the gfx11+ ds_load/ds_store names (not SMEM).
    ("ds_read_b128 v[0:3], v4 offset:256", "LDS"),
    ("ds_load_b128 v[0:3], v4", "LDS"),
    ("ds_store_b64 v1, v[2:3]", "LDS"),
    ("ds_write2st64_b32 v1, v2, v3 offset1:4", "LDS"),
    ("ds_read_b64_tr_b16 v[0:1], v2", "LDS"),
    ("ds_bpermute_b32 v1, v2, v3", "LDS"),
    ("ds_swizzle_b32 v1, v2 offset:swizzle(SWAP,16)", "LDS"),
    # SMEM: scalar loads, including s_buffer_load (not VMEM).
    ("s_load_dwordx4 s[0:3], s[4:5], 0x0", "SMEM"),
    ("s_buffer_load_dword s0, s[4:7], 0x10", "SMEM"),
    ("s_load_b128 s[0:3], s[4:5], 0x0", "SMEM"),
    ("s_store_dword s0, s[2:3], 0x0", "SMEM"),
    ("s_memtime s[0:1]", "SMEM"),
    # VMEM loads / stores / atomics / scratch.
    ("buffer_load_dwordx4 v[0:3], v0, s[0:3], 0 offen", "VMEM-load"),
    ("buffer_load_dword v1, v0, s[0:3], 0 offen lds", "VMEM-load"),
    ("global_load_b32 v0, v1, s[0:1]", "VMEM-load"),
    ("flat_load_dword v0, v[1:2]", "VMEM-load"),
    ("scratch_load_dwordx2 v[0:1], off, s0", "VMEM-load"),
    ("global_load_lds_dwordx4 v0, s[0:1]", "VMEM-load"),
    ("image_sample v[0:3], v0, s[0:7], s[8:11]", "VMEM-load"),
    ("buffer_store_dwordx4 v[0:3], v0, s[0:3], 0 offen", "VMEM-store"),
    ("flat_store_dword v[0:1], v2", "VMEM-store"),
    ("scratch_store_dword off, v0, s0", "VMEM-store"),
    ("global_atomic_add_f32 v0, v1, s[0:1]", "VMEM-store"),
    ("buffer_atomic_cmpswap v[0:1], v2, s[0:3], 0 offen glc", "VMEM-store"),
    ("buffer_wbl2 sc1", "VMEM-store"),
    # Matrix vs vector FMA.
    ("v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]", "MFMA"),
    ("v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3], v20, v21", "MFMA"),
    ("v_smfmac_f32_16x16x32_f16 v[0:3], v[4:5], v[6:9], v10", "MFMA"),
    ("v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]", "MFMA"),
    ("v_swmmac_f32_16x16x32_f16 v[0:7], v[8:11], v[12:19], v20", "MFMA"),
    ("v_fma_f32 v0, v1, v2, v3", "VALU"),
    ("v_fmac_f32_e32 v0, v1, v2", "VALU"),
    ("v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7]", "VALU"),
    ("v_dot2_f32_f16 v0, v1, v2, v3", "VALU"),
    ("v_accvgpr_read_b32 v0, a0", "VALU"),
    ("v_accvgpr_write_b32 a0, v0", "VALU"),
    ("v_mov_b32_dpp v0, v1 row_shr:1", "VALU"),
    ("v_permlane16_swap_b32_e32 v0, v1", "VALU"),
    # Waits.
    ("s_waitcnt vmcnt(0)", "VMEM-wait"),
    ("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait"),
    ("s_waitcnt expcnt(0)", "EXP-wait"),
    ("s_waitcnt vmcnt(0) lgkmcnt(0)", "VMEM-wait"),
    ("s_waitcnt_vscnt null, 0x0", "VMEM-wait"),
    ("s_wait_loadcnt 0x0", "VMEM-wait"),
    ("s_wait_storecnt 0x0", "VMEM-wait"),
    ("s_wait_samplecnt 0x1", "VMEM-wait"),
    ("s_wait_bvhcnt 0x0", "VMEM-wait"),
    ("s_wait_dscnt 0x0", "LDS/SMEM-wait"),
    ("s_wait_kmcnt 0x0", "LDS/SMEM-wait"),
    ("s_wait_expcnt 0x0", "EXP-wait"),
    ("s_wait_loadcnt_dscnt 0x0", "VMEM-wait"),
    ("s_wait_alu 0xfffd", "other"),
    ("s_waitcnt_depctr 0xffe3", "other"),
    # Barriers, branches, scalar ALU, the rest.
    ("s_barrier", "barrier"),
    ("s_barrier_signal -1", "barrier"),
    ("s_barrier_wait -1", "barrier"),
    ("s_cbranch_scc1 .LBB0_2", "branch"),
    ("s_branch .LBB0_1", "branch"),
    ("s_setpc_b64 s[30:31]", "branch"),
    ("s_swappc_b64 s[30:31], s[4:5]", "branch"),
    ("s_add_u32 s0, s1, s2", "SALU"),
    ("s_getpc_b64 s[0:1]", "SALU"),
    ("s_mov_b64 exec, s[0:1]", "SALU"),
    ("s_nop 7", "nop"),
    ("s_endpgm", "other"),
    ("s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)", "other"),
    ("s_setprio 3", "other"),
    ("; _Z4axpyPfPKffi", "other"),
    ("", "other"),
]


@pytest.mark.parametrize(("asm", "expected"), CASES)
def test_classify(asm: str, expected: str) -> None:
    assert classify(asm) == expected
    assert expected in STALL_TYPES


def test_stall_types_unique_and_complete() -> None:
    assert len(set(STALL_TYPES)) == len(STALL_TYPES)
    for required in ("VMEM-load", "VMEM-store", "VMEM-wait", "LDS", "LDS/SMEM-wait", "SMEM",
                     "barrier", "MFMA", "VALU", "SALU", "branch", "other"):
        assert required in STALL_TYPES


def test_anchored_not_substring() -> None:
    # Operands mentioning other opcodes' names must not change the class.
    assert classify("v_mov_b32 v0, s_load_marker") == "VALU"
    assert classify("s_add_u32 s0, s_waitcnt, 1") == "SALU"
    # An opcode merely containing "s_load" (ds_load) is LDS, not SMEM.
    assert classify("DS_LOAD_B32 v0, v1") == "LDS"


def test_opcode_and_base_opcode() -> None:
    assert opcode("  V_ADD_F32_E32 v0, v1, v2") == "v_add_f32_e32"
    assert base_opcode("v_add_f32_e32 v0, v1, v2") == "v_add_f32"
    assert base_opcode("v_mov_b32_dpp v0, v1") == "v_mov_b32"
    assert base_opcode("v_and_b32_sdwa v0, v1, v2") == "v_and_b32"
    assert opcode("") == ""


def test_wait_counters_named_forms() -> None:
    assert wait_counters("s_waitcnt vmcnt(3) lgkmcnt(0)") == {"vmcnt": 3, "lgkmcnt": 0}
    assert wait_counters("s_waitcnt vmcnt(1) & lgkmcnt(2)") == {"vmcnt": 1, "lgkmcnt": 2}
    assert wait_counters("s_waitcnt vmcnt_sat(70)") == {"vmcnt": 70}
    assert wait_counters("s_wait_loadcnt 0x3") == {"loadcnt": 3}
    assert wait_counters("s_wait_kmcnt 0") == {"kmcnt": 0}
    assert wait_counters("v_add_f32 v0, v1, v2") == {}


def test_wait_counters_raw_simm16_gfx9() -> None:
    # gfx9 layout: vmcnt bits 3:0 + 15:14, expcnt 6:4, lgkmcnt 11:8. Fields at their maximum
    # mean "do not wait" and are omitted.
    assert wait_counters("s_waitcnt 0") == {"vmcnt": 0, "expcnt": 0, "lgkmcnt": 0}
    # vmcnt = 63 (0xF | 3<<14), expcnt = 7, lgkmcnt = 0 → only lgkmcnt waited on.
    assert wait_counters("s_waitcnt 0xc07f") == {"lgkmcnt": 0}
    # vmcnt = 0x12 → low 4 bits 2, high 2 bits 1 → 0x4002; expcnt 7, lgkmcnt 15 → no wait.
    assert wait_counters(f"s_waitcnt {0x4002 | (7 << 4) | (15 << 8)}") == {"vmcnt": 18}
    assert classify("s_waitcnt 0xc07f") == "LDS/SMEM-wait"


def test_wait_counters_raw_simm16_gfx11() -> None:
    # gfx11 layout: expcnt 2:0, lgkmcnt 9:4, vmcnt 15:10.
    value = (5 << 10) | (63 << 4) | 7
    assert wait_counters(f"s_waitcnt {value:#x}", layout="gfx11") == {"vmcnt": 5}


def test_gfx12_combined_wait() -> None:
    # loadcnt in bits 13:8, dscnt in bits 5:0.
    assert wait_counters("s_wait_loadcnt_dscnt 0x102") == {"loadcnt": 1, "dscnt": 2}
    assert wait_kinds("s_wait_storecnt_dscnt 0x0") == ["VMEM-wait", "LDS/SMEM-wait"]


def test_mixed_wait_kinds() -> None:
    assert wait_kinds("s_waitcnt vmcnt(0) lgkmcnt(0)") == ["VMEM-wait", "LDS/SMEM-wait"]
    assert wait_kinds("s_waitcnt lgkmcnt(0) expcnt(0)") == ["LDS/SMEM-wait", "EXP-wait"]
    assert classify("s_waitcnt lgkmcnt(0) expcnt(0)") == "LDS/SMEM-wait"
    assert wait_kinds("s_nop 0") == []


def test_is_memory_load() -> None:
    assert is_memory_load("global_load_dword v0, v1, s[0:1]")
    assert is_memory_load("s_buffer_load_dword s0, s[4:7], 0x0")
    assert is_memory_load("ds_read_b128 v[0:3], v4")
    assert not is_memory_load("ds_write_b32 v0, v1")
    assert not is_memory_load("s_store_dword s0, s[2:3], 0x0")
    assert not is_memory_load("buffer_store_dword v0, v1, s[0:3], 0 offen")


def test_decoder_categories() -> None:
    assert decoder_category_name(3) == "VMEM"
    assert decoder_category_name(9) == "IMMED"
    assert decoder_category_name(11) == "MESSAGE"
    assert decoder_category_name(99) == "UNKNOWN(99)"
    assert legacy_inst_type_name(10) == "JUMP"
    assert legacy_inst_type_name(100) == "COMMENT"


def test_shared_capture_opcodes_never_fall_to_other(captures) -> None:
    """Every opcode in the real captures gets a specific class, except the documented
    program-control ones (s_endpgm, s_setprio, ...)."""
    import json

    allowed_other = {"s_endpgm", "s_setprio", "s_sendmsg", "s_sleep"}
    seen = 0
    for path in sorted(captures.rglob("code.json")):
        rows = json.loads(path.read_text()).get("code") or []
        for row in rows:
            asm = row[0]
            if not isinstance(asm, str) or asm.lstrip().startswith(";"):
                continue
            seen += 1
            if classify(asm) == "other":
                assert opcode(asm) in allowed_other, (path, asm)
    assert seen > 1000
