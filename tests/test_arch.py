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
