"""Register usage from ISA text: ranges to their last index, AGPR aliases, metadata."""

from __future__ import annotations

from kerneltrace.isa.registers import parse_resource_metadata, scan_registers


def test_ranges_count_to_last_index() -> None:
    usage = scan_registers([
        "global_load_dwordx4 v[172:175], v0, s[0:1]",
        "v_mfma_f32_16x16x16_f16 a[8:11], v[2:3], v[4:5], a[8:11]",
        "s_load_dwordx8 s[8:15], s[0:1], 0x0",
    ])
    assert usage.arch_vgprs == 176
    assert usage.agprs == 12
    assert usage.sgprs == 16
    assert usage.source == "isa-scan"
    assert usage.has_mfma and not usage.vgpr_form_mfma


def test_single_registers_and_acc_alias() -> None:
    usage = scan_registers(["v_accvgpr_write_b32 acc5, v7", "v_add_u32 v3, s40, v2"])
    assert (usage.arch_vgprs, usage.agprs, usage.sgprs) == (8, 6, 41)


def test_only_a0_is_agpr_form() -> None:
    # The reference script treated a kernel using only a0 as "vgpr-form"; a0 is one AGPR.
    usage = scan_registers(["v_accvgpr_read_b32 v0, a0"])
    assert usage.agprs == 1


def test_vgpr_form_mfma() -> None:
    usage = scan_registers(["v_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3]"])
    assert usage.vgpr_form_mfma and usage.agprs == 0 and usage.arch_vgprs == 12


def test_opcode_names_and_modifiers_are_not_registers() -> None:
    usage = scan_registers([
        "s_waitcnt vmcnt(0) lgkmcnt(0)",
        "buffer_load_dword v1, v0, s[4:7], 0 offen sc0 sc1 nt",
        "v_mfma_f32_32x32x16_bf16 v[0:15], v[16:19], v[20:23], v[0:15]",
        "s_cbranch_scc1 .LBB0_v99",
        "v_mov_b32 v2, 0xa9 // v200 in a comment",
    ])
    assert usage.arch_vgprs == 24
    assert usage.sgprs == 8
    assert usage.agprs == 0


def test_vcc_use_detected() -> None:
    assert scan_registers(["v_cmp_gt_u32_e32 vcc, s0, v1"]).uses_vcc
    assert scan_registers(["v_cndmask_b32_e32 v0, v1, v2, vcc"]).uses_vcc
    assert scan_registers(["v_add_co_u32_e32 v0, vcc, v1, v2"]).uses_vcc
    assert not scan_registers(["v_add_u32_e32 v0, v1, v2"]).uses_vcc


def test_labels_skipped_and_empty_is_none() -> None:
    usage = scan_registers(["; v[0:300] label text", ""])
    assert usage.source == "none" and usage.arch_vgprs == 0


def test_metadata_wins_over_scan() -> None:
    usage = scan_registers([
        ".vgpr_count: 192",
        ".agpr_count: 16",
        ".sgpr_count: 40",
        "v_add_f32 v0, v1, v2",
    ])
    assert (usage.arch_vgprs, usage.agprs, usage.sgprs, usage.source) == (176, 16, 40, "metadata")


def test_amdhsa_directives() -> None:
    usage = parse_resource_metadata(
        ".amdhsa_accum_offset 192\n.amdhsa_next_free_vgpr 200\n.amdhsa_next_free_sgpr 80"
    )
    assert (usage.arch_vgprs, usage.agprs, usage.sgprs, usage.accum_offset) == (192, 8, 80, 192)
    assert parse_resource_metadata("v_add_f32 v0, v1, v2") is None


def test_shared_pa_decode_capture(captures) -> None:
    """The paged-attention decode kernel uses a[8:11] (12 AGPRs) and v[172:175] (176 VGPRs)."""
    import json

    hits = list(captures.rglob("ui_output_agent_10886_dispatch_209/code.json"))
    assert hits
    rows = json.loads(hits[0].read_text())["code"]
    usage = scan_registers(row[0] for row in rows)
    assert usage.agprs == 12
    assert usage.arch_vgprs == 176
