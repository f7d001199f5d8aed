"""MFMA pass-latency table and dependency spacing."""

from __future__ import annotations

import pytest

from kerneltrace.isa.mfma import DEPENDENCY_RULES, mfma_info, xdl_read_spacing


@pytest.mark.parametrize(
    ("asm", "shape", "cycles"),
    [
        ("v_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]", "16x16x16", 16),
        ("v_mfma_f32_16x16x16bf16_1k a[0:3], v[0:1], v[2:3], a[0:3]", "16x16x16", 16),
        ("v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]", "32x32x8", 32),
        ("v_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], v[0:3]", "16x16x32", 16),
        ("v_mfma_f32_32x32x16_bf8_fp8 v[0:15], v[4:5], v[6:7], v[0:15]", "32x32x16", 32),
        ("v_mfma_f32_16x16x4_f32 a[0:3], v0, v1, a[0:3]", "16x16x4", 32),
        ("v_mfma_f32_32x32x2_f32 a[0:15], v0, v1, a[0:15]", "32x32x2", 64),
        ("v_mfma_f64_16x16x4_f64 v[0:7], v[8:9], v[10:11], v[0:7]", "16x16x4", 64),
    ],
)
def test_tabulated_latencies(asm: str, shape: str, cycles: int) -> None:
    info = mfma_info(asm)
    assert info is not None
    assert (info.shape, info.cycles, info.passes, info.confirmed) == (shape, cycles, cycles // 4, True)


def test_f8f6f4_depends_on_operand_formats() -> None:
    base = "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3]"
    assert mfma_info(base).cycles == 32  # no cbsz/blgp: both FP8
    assert mfma_info(base + " cbsz:4 blgp:4").cycles == 16  # FP4 x FP4
    assert mfma_info(base + " cbsz:2 blgp:1").cycles == 32  # B is BF8
    big = "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15], v32, v33"
    assert mfma_info(big).cycles == 64
    assert mfma_info(big + " cbsz:3 blgp:2").cycles == 32
    assert "scaled" in mfma_info(big).note


def test_cdna4_double_k_is_marked_unconfirmed() -> None:
    info = mfma_info("v_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3]")
    assert info is not None and info.cycles == 16 and not info.confirmed


def test_non_mfma_and_untabulated_are_none() -> None:
    assert mfma_info("v_fma_f32 v0, v1, v2, v3") is None
    assert mfma_info("v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]") is None
    assert mfma_info("v_mfma_i32_16x16x32_i8 v[0:3], v[4:5], v[6:7], v[0:3]") is None
    assert mfma_info("v_mfma_f32_4x4x1_16b_f32 a[0:3], v0, v1, a[0:3]") is None


def test_dependency_spacing() -> None:
    assert [xdl_read_spacing(c) for c in (8, 16, 32, 64)] == [5, 8, 12, 20]
    assert xdl_read_spacing(24) is None
    # The spacing grows with the pass length of the producer.
    assert xdl_read_spacing(mfma_info("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]").cycles) == 12
    assert any(rule.required == "2" and "MFMA" in rule.consumer for rule in DEPENDENCY_RULES)
