"""Occupancy model: hand-computed cases per arch, source combination, unknown arch."""

from __future__ import annotations

from kerneltrace.analysis.occupancy import compute_occupancy
from kerneltrace.arch.dispatch_meta import DispatchMeta
from kerneltrace.arch.table import ARCHES
from kerneltrace.isa.registers import RegisterUsage, scan_registers


def test_skill_worked_example_gfx942() -> None:
    # arch 144 + accum 136 = 280 combined → 512 // 280 = 1 wave/SIMD, VGPR-bound;
    # two waves need a combined total <= 256.
    meta = DispatchMeta(vgpr_count=144, accum_vgpr_count=136, sgpr_count=48, lds_bytes=0,
                        workgroup_size=256)
    occ = compute_occupancy(ARCHES["gfx942"], RegisterUsage(144, 136, 40, "isa-scan"), meta)
    assert occ["waves_per_simd"] == 1
    assert occ["limited_by"] == "vgpr"
    assert occ["registers"]["combined_vgprs"] == 280
    need = occ["next_level"]["needs"][0]
    assert occ["next_level"]["waves_per_simd"] == 2
    assert (need["current"], need["target_max"], need["save"]) == (280, 256, 24)
    assert "280" in need["text"] and "256" in need["text"]
    assert "maxnreg" in need["knob"]  # warned against, never recommended


def test_accum_offset_rounding_from_isa() -> None:
    # 13 arch VGPRs → accum_offset 16; + 4 AGPRs = 20 → 24 allocated (granule 8).
    regs = RegisterUsage(13, 4, 10, "isa-scan")
    occ = compute_occupancy(ARCHES["gfx90a"], regs, None)
    assert occ["registers"]["accum_offset"] == 16
    assert occ["registers"]["combined_vgprs"] == 24
    assert occ["limits"]["vgpr"] == 8  # 512 // 24 = 21, capped at 8


def test_gfx950_csv_halving_is_corrected() -> None:
    # pa_decode: VGPR_Count 96 (half of 192), Accum 0; ISA uses v[172:175] and a[8:11].
    regs = scan_registers(["global_load_dwordx4 v[172:175], v0, s[0:1]",
                           "v_mfma_f32_16x16x32_fp8_fp8 a[8:11], v[0:1], v[2:3], a[8:11]"])
    meta = DispatchMeta(vgpr_count=96, accum_vgpr_count=0, sgpr_count=112, lds_bytes=13312,
                        workgroup_size=256)
    occ = compute_occupancy(ARCHES["gfx950"], regs, meta)
    assert occ["registers"]["combined_vgprs"] == 192  # 2 x 96, and 176 + 12 = 188 → 192
    assert occ["limits"]["vgpr"] == 2  # 512 // 192
    assert occ["limits"]["sgpr"] == 7  # 800 // 112
    # LDS: 13312 B → 14080 B (1280 B granule); 163840 // 14080 = 11 WGs x 4 waves / 4 SIMDs.
    assert occ["lds"]["allocated"] == 14080
    assert occ["limits"]["lds"] == 8
    assert occ["waves_per_simd"] == 2 and occ["limited_by"] == "vgpr"
    assert "x2" in occ["sources"]["vgpr"]
    # Without the correction the CSV alone would claim 96 → 5 waves; the ISA guard also says 192.
    only_csv = compute_occupancy(ARCHES["gfx950"], RegisterUsage(0, 0, 0, "none"), meta)
    assert only_csv["registers"]["combined_vgprs"] == 192 and only_csv["limits"]["vgpr"] == 2


def test_csv_below_isa_uses_isa() -> None:
    meta = DispatchMeta(vgpr_count=64, accum_vgpr_count=0, sgpr_count=32, lds_bytes=0,
                        workgroup_size=64)
    occ = compute_occupancy(ARCHES["gfx942"], RegisterUsage(130, 0, 10, "isa-scan"), meta)
    assert occ["registers"]["combined_vgprs"] == 136
    assert occ["limits"]["vgpr"] == 3  # 512 // 136
    assert "ISA scan" in occ["sources"]["vgpr"]
    assert "below" in occ["sources"]["notes"]


def test_lds_bound_gfx942_and_next_level() -> None:
    # 40000 B → 40448 B (512 B granule): 1 WG of 4 waves per CU → 1 wave/SIMD.
    meta = DispatchMeta(vgpr_count=32, accum_vgpr_count=0, sgpr_count=32, lds_bytes=40000,
                        workgroup_size=256)
    occ = compute_occupancy(ARCHES["gfx942"], RegisterUsage(32, 0, 20, "isa-scan"), meta)
    assert occ["lds"]["allocated"] == 40448
    assert occ["waves_per_simd"] == 1 and occ["limited_by"] == "lds"
    need = occ["next_level"]["needs"][0]
    # 2 waves/SIMD = 8 waves = 2 WGs → <= 32768 B each.
    assert need["limiter"] == "lds" and need["target_max"] == 32768
    # The same kernel on gfx950 (160 KiB LDS) fits 4 WGs: 4 waves/SIMD.
    occ950 = compute_occupancy(ARCHES["gfx950"], RegisterUsage(32, 0, 20, "isa-scan"), meta)
    assert occ950["limits"]["lds"] == 4


def test_sgpr_bound_and_granule() -> None:
    # 100 SGPRs used + 6 reserved = 106 → 112 allocated → 800 // 112 = 7.
    occ = compute_occupancy(ARCHES["gfx942"], RegisterUsage(16, 0, 100, "isa-scan"),
                            DispatchMeta(lds_bytes=0, workgroup_size=64))
    assert occ["registers"]["sgprs_allocated"] == 112
    assert occ["waves_per_simd"] == 7 and occ["limited_by"] == "sgpr"
    need = occ["next_level"]["needs"][0]
    assert need["target_max"] == 96  # 800 // 8 = 100 → 96 on the 16 granule


def test_not_limited_reports_none() -> None:
    meta = DispatchMeta(vgpr_count=32, accum_vgpr_count=0, sgpr_count=32, lds_bytes=0,
                        workgroup_size=256)
    occ = compute_occupancy(ARCHES["gfx942"], RegisterUsage(30, 0, 20, "isa-scan"), meta)
    assert occ["waves_per_simd"] == 8
    assert occ["limited_by"] == "none"
    assert occ["next_level"] is None


def test_workgroup_slots_limit() -> None:
    # 192 threads = 3 waves: min(32 // 3, 16) = 10 WGs → 30 waves → 7 per SIMD.
    meta = DispatchMeta(vgpr_count=16, accum_vgpr_count=0, sgpr_count=32, lds_bytes=0,
                        workgroup_size=192)
    occ = compute_occupancy(ARCHES["gfx90a"], RegisterUsage(16, 0, 10, "isa-scan"), meta)
    assert occ["limits"]["workgroup"] == 7
    assert occ["limited_by"] == "workgroup"


def test_rdna3_wave32_pool() -> None:
    # gfx1100 wave32: 1536 VGPRs, granule 24. 100 VGPRs → 120 → 1536 // 120 = 12 waves.
    occ = compute_occupancy(ARCHES["gfx1100"], RegisterUsage(100, 0, 50, "isa-scan"),
                            DispatchMeta(lds_bytes=0, workgroup_size=256))
    assert occ["registers"]["combined_vgprs"] == 120
    assert occ["limits"]["vgpr"] == 12
    assert occ["limits"]["sgpr"] == 16  # SGPRs do not limit on gfx10+
    assert occ["waves_per_simd"] == 12 and occ["limited_by"] == "vgpr"
    # gfx1102 has the smaller file: 1024 // 112 (granule 16) = 9.
    small = compute_occupancy(ARCHES["gfx1102"], RegisterUsage(100, 0, 50, "isa-scan"), None)
    assert small["limits"]["vgpr"] == 9


def test_missing_metadata_is_an_upper_bound() -> None:
    occ = compute_occupancy(ARCHES["gfx942"], RegisterUsage(64, 0, 20, "isa-scan"), None)
    assert occ["limits"]["lds"] is None and occ["limits"]["workgroup"] is None
    assert occ["waves_per_simd"] == 8 and occ["upper_bound"]
    assert "not evaluated" in occ["sources"]["notes"]


def test_unknown_arch_gives_nulls_and_per_candidate() -> None:
    regs = RegisterUsage(176, 12, 99, "isa-scan")
    meta = DispatchMeta(vgpr_count=96, accum_vgpr_count=0, sgpr_count=112, lds_bytes=13312,
                        workgroup_size=256)
    occ = compute_occupancy(None, regs, meta, candidates=["gfx942", "gfx950", "gfx908"])
    assert occ["waves_per_simd"] is None and occ["limited_by"] is None
    assert all(value is None for value in occ["limits"].values())
    assert "unknown" in occ["sources"]["reason"]
    assert set(occ["per_candidate"]) == {"gfx942", "gfx950"}
    assert occ["per_candidate"]["gfx942"]["limits"]["lds"] == 4  # 64 KiB: 4 WGs
    assert occ["per_candidate"]["gfx950"]["limits"]["lds"] == 8  # 160 KiB: 11 WGs


def test_unknown_vgpr_file_gfx1250() -> None:
    occ = compute_occupancy(ARCHES["gfx1250"], RegisterUsage(64, 0, 20, "isa-scan"),
                            DispatchMeta(lds_bytes=0, workgroup_size=128))
    assert occ["limits"]["vgpr"] is None and occ["upper_bound"]
