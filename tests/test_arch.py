"""Arch table lookups and arch detection (explicit → metadata → ISA evidence → unknown)."""

from __future__ import annotations

import pytest

from kerneltrace.arch.table import (
    ARCHES,
    get_arch,
    get_product,
    normalize_target,
    target_from_version,
)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("gfx942", "gfx942"),
        ("GFX942", "gfx942"),
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("amdgcn-amd-amdhsa--gfx950", "gfx950"),
        (90402, "gfx942"),
        ("90010", "gfx90a"),
        (90500, "gfx950"),
        (110000, "gfx1100"),
        (120001, "gfx1201"),
        ("gfx940", "gfx942"),
        ("AMD Instinct MI350X", "gfx950"),
        ("MI250X", "gfx90a"),
    ],
)
def test_get_arch_accepts_spellings(query, expected) -> None:
    spec = get_arch(query)
    assert spec is not None
    assert spec.name == expected


@pytest.mark.parametrize("query", ["gfx908", "sm_90", "", None, "AMD Radeon Graphics"])
def test_get_arch_unknown_is_none(query) -> None:
    assert get_arch(query) is None


def test_target_from_version_roundtrip() -> None:
    for spec in ARCHES.values():
        assert target_from_version(spec.gfx_target_version) == spec.name
    assert normalize_target("no target here") is None


def test_cdna_facts() -> None:
    for name in ("gfx90a", "gfx942", "gfx950"):
        spec = ARCHES[name]
        assert spec.wave_size == 64
        assert spec.vgpr_pool == 512 and spec.vgpr_granule == 8 and spec.unified_agpr
        assert spec.max_waves_per_simd == 8 and spec.simds_per_cu == 4
        assert spec.sgpr_budget == 800 and spec.sgpr_granule == 16
    assert ARCHES["gfx942"].lds_bytes_per_cu == 64 * 1024
    assert ARCHES["gfx950"].lds_bytes_per_cu == 160 * 1024
    assert ARCHES["gfx950"].lds_granule == 1280


def test_rdna_facts() -> None:
    assert ARCHES["gfx1100"].vgpr_allocation(32) == (1536, 24)
    assert ARCHES["gfx1100"].vgpr_allocation(64) == (768, 12)
    assert ARCHES["gfx1102"].vgpr_allocation(32) == (1024, 16)
    assert ARCHES["gfx1201"].vgpr_pool == 1536
    assert ARCHES["gfx1201"].sgpr_budget is None  # SGPRs do not limit occupancy on gfx10+
    assert ARCHES["gfx1250"].vgpr_pool is None and "vgpr_pool" in ARCHES["gfx1250"].unconfirmed


def test_products_share_arch() -> None:
    assert get_product("AMD Instinct MI300X").arch == "gfx942"
    assert get_product("AMD Instinct MI325X").arch == "gfx942"
    assert get_product("AMD Instinct MI250X").name == "MI250X"
    assert get_product("AMD Instinct MI250").name == "MI250"
    assert get_product("AMD Radeon Graphics") is None
    for product in ("MI210", "MI300X", "MI350X"):
        assert get_product(product).peak_hbm_gbps is not None
        assert not get_product(product).peak_confirmed


# ---------------------------------------------------------------------------------------------
# Detection

from kerneltrace.arch.detect import resolve_arch  # noqa: E402
from kerneltrace.errors import InputError  # noqa: E402

GFX950_ISA = ["v_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3]", "s_endpgm"]
PLAIN_GFX9_ISA = ["global_load_dword v2, v[2:3], off", "s_waitcnt vmcnt(0)",
                  "v_fmac_f32_e32 v3, s0, v2", "s_endpgm"]


def test_explicit_arch_wins_and_notes_disagreement() -> None:
    result = resolve_arch("GFX942:sramecc+", ["gfx950"], GFX950_ISA)
    assert (result.name, result.source, result.certain) == ("gfx942", "--arch", True)
    assert any("overrides" in note for note in result.notes)


def test_explicit_garbage_is_input_error() -> None:
    with pytest.raises(InputError):
        resolve_arch("fast-gpu", [], [])


def test_agent_metadata_is_certain() -> None:
    result = resolve_arch(None, ["gfx90a"], GFX950_ISA)
    assert (result.name, result.source, result.certain) == ("gfx90a", "agent_info", True)
    assert result.to_dict() == {"name": "gfx90a", "source": "agent_info", "certain": True,
                                "candidates": ["gfx90a"]}


def test_metadata_not_in_table_is_reported() -> None:
    result = resolve_arch(None, ["gfx908"], [])
    assert result.name == "gfx908" and result.certain
    assert any("not in the arch table" in note for note in result.notes)


def test_several_gpus_narrowed_by_isa() -> None:
    result = resolve_arch(None, ["gfx942", "gfx950"], GFX950_ISA)
    assert result.name == "gfx950" and result.certain
    undecided = resolve_arch(None, ["gfx942", "gfx950"], PLAIN_GFX9_ISA)
    assert undecided.name is None and not undecided.certain
    assert undecided.candidates == ["gfx942", "gfx950"]


@pytest.mark.parametrize(
    ("isa", "expected"),
    [
        (["v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3], v20, v21"], "gfx950"),
        (["ds_read_b64_tr_b16 v[0:1], v2", "buffer_load_dword v0, v1, s[0:3], 0 offen"], "gfx950"),
        (["v_permlane32_swap_b32_e32 v0, v1", "s_waitcnt lgkmcnt(0)"], "gfx950"),
        (["v_mfma_f32_16x16x8_xf32 a[0:3], v[0:1], v[2:3], a[0:3]"], "gfx942"),
        (["v_mfma_f32_32x32x8bf16_1k a[0:15], v[0:1], v[2:3], a[0:15]"], "gfx90a"),
    ],
)
def test_isa_evidence_unique(isa, expected) -> None:
    result = resolve_arch(None, [], isa)
    assert (result.name, result.source, result.certain) == (expected, "isa", True)
    assert result.evidence


def test_isa_evidence_not_unique() -> None:
    fp8 = resolve_arch(None, [], ["v_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], v[0:3]"])
    assert fp8.name is None and not fp8.certain and fp8.candidates == ["gfx942", "gfx950"]
    cache = resolve_arch(None, [], ["global_load_dwordx4 v[0:3], v4, s[0:1] sc0 sc1"])
    assert cache.candidates == ["gfx942", "gfx950"]
    old = resolve_arch(None, [], ["global_load_dword v0, v[1:2], off glc"])
    assert old.candidates == ["gfx908", "gfx90a"] and not old.certain
    plain = resolve_arch(None, [], PLAIN_GFX9_ISA)
    assert plain.name is None and "gfx90a" in plain.candidates and "gfx950" in plain.candidates


def test_rdna_spellings() -> None:
    gfx12 = resolve_arch(None, [], ["global_load_b32 v0, v1, s[0:1]", "s_wait_loadcnt 0x0"])
    assert gfx12.name is None and gfx12.candidates == ["gfx1200", "gfx1201", "gfx1250"]
    gfx11 = resolve_arch(None, [], ["ds_load_b32 v0, v1", "s_waitcnt_vscnt null, 0x0",
                                    "v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]"])
    assert set(gfx11.candidates) == {"gfx1100", "gfx1101", "gfx1102"}
    # gfx9 byte stores are not RDNA spellings.
    byte = resolve_arch(None, [], ["scratch_store_byte off, v0, s0", "v_accvgpr_read_b32 v0, a0"])
    assert byte.candidates == ["gfx908", "gfx90a", "gfx942", "gfx950"] and not byte.notes


def test_nothing_known_lists_all() -> None:
    result = resolve_arch(None, [], [])
    assert result.name is None and result.source == "unknown" and not result.certain
    assert set(result.candidates) == set(ARCHES)


def _capture_isa(directory):
    import json

    rows = json.loads((directory / "code.json").read_text()).get("code") or []
    return [row[0] for row in rows if isinstance(row[0], str)]


def test_shared_captures_detection(captures) -> None:
    """gfx950 captures with gfx950-only opcodes → gfx950 certain; undecidable ones → not certain."""
    from conftest import all_shared_dispatch_dirs

    certain_gfx950 = 0
    for directory in all_shared_dispatch_dirs():
        result = resolve_arch(None, [], _capture_isa(directory))
        path = str(directory)
        if result.certain:
            assert result.name == "gfx950", path  # the only arch identifiable from these ISAs
            assert "flydsl-kernel-profiling-lib" in path, path
            certain_gfx950 += 1
        if "vibesys-att-gfx90a" in path or "aiter-glog-fork-legacy-att" in path \
                or "pcsampling" in path:
            assert not result.certain, path
            assert result.name is None, path
    assert certain_gfx950 >= 10
    flash = [d for d in all_shared_dispatch_dirs() if "dispatch_44" in d.name]
    assert flash and all(resolve_arch(None, [], _capture_isa(d)).name == "gfx950" for d in flash)


@pytest.mark.parametrize(("pattern", "prefix"), [
    (r"^v_mfma_scale_", "v_mfma_scale_"), (r"^ab*c", "a"), (r"^ab?", "a"), (r"^ab{2}", "a"), (r"^ab+", "a"),
    (r"^v_permlane(16|32)_swap", "v_permlane"), (r"^s_wait\w+", "s_wait"), (r"^ds_read_b\d+", "ds_read_b"),
    (r"^(a|b)c", ""), (r"^a|^b", ""), (r"v_mfma", ""), (r"^a.b", "a"), (r"^a\.b", "a"), (r"^a[bc]", "a"),
])
def test_clue_literal_prefix(pattern, prefix) -> None:
    from kerneltrace.arch.detect import _literal_prefix

    assert _literal_prefix(pattern) == prefix


def test_every_clue_match_starts_with_its_prefix(captures) -> None:
    """The prefix filter skips no opcode a clue matches: every opcode of the shared captures, the
    test ISA above and made-up spellings."""
    import re

    from kerneltrace.arch.detect import CLUES

    opcodes = {line.split(None, 1)[0].lower() for d in sorted({p.parent for p in captures.rglob("code.json")})
               for line in _capture_isa(d) if line.strip()}
    opcodes |= {"v_mfma_scale_f32_16x16x128_f8f6f4", "ds_read_b64_tr_b16", "v_permlane32_swap_b32_e32",
                "v_mfma_f32_32x32x8bf16_1k", "v_mfma_f32_16x16x32_fp8_fp8", "global_load_b32", "s_wait_loadcnt",
                "ds_load_b32", "s_waitcnt_vscnt", "v_wmma_f32_16x16x16_f16", "tensor_load_to_lds", "v_prng_b32"}
    for clue in CLUES:
        assert not clue.prefix or clue.pattern.startswith("^" + clue.prefix)
        for op in opcodes:
            if re.search(clue.pattern, op):
                assert op.startswith(clue.prefix), (clue.label, op)
