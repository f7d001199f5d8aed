"""The single arch table: per-gfx-target occupancy facts (ArchSpec) and per-product peaks.

Every number here carries its source in docs/isa-and-occupancy.md ("Arch table"). Nobody else
hard-codes these facts. Values that the sources could not settle are None (never guessed) or are
listed in `unconfirmed`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from kerneltrace.records import record


@record(frozen=True)
class ArchSpec:
    """Occupancy-relevant facts of one gfx target.

    "CU" means the block whose SIMDs share LDS and barriers: the CU on CDNA, the WGP (two CUs,
    four SIMDs) on RDNA in its default WGP mode.
    """

    name: str
    family: str  # "CDNA2" | "CDNA3" | "CDNA4" | "RDNA3" | "RDNA4" | "GFX12.5"
    gfx_target_version: int  # agent_info.csv Gfx_Target_Version (major*10000 + minor*100 + step)
    wave_size: int  # default wavefront size
    wave_sizes: tuple[int, ...]
    cu_label: str  # "CU" or "WGP": what one "CU" of this table is
    simds_per_cu: int
    max_waves_per_simd: int
    vgpr_pool: int | None  # VGPRs per lane per SIMD at the default wave size (AGPRs included
    #                        when unified_agpr)
    vgpr_granule: int | None  # allocation granule at the default wave size
    max_vgprs_per_wave: int  # addressable per wave (arch + AGPR on CDNA)
    unified_agpr: bool  # AGPRs allocated from the same pool after accum_offset (CDNA2/3/4)
    accum_offset_granule: int  # arch VGPRs round up to this before the AGPRs start
    sgpr_budget: int | None  # SGPRs per SIMD; None = SGPRs never limit occupancy (gfx10+)
    sgpr_granule: int | None
    max_sgprs_per_wave: int  # addressable, without VCC / FLAT_SCRATCH / XNACK_MASK
    sgpr_extra: int  # reserved SGPRs always allocated on top of the used ones (lower bound)
    lds_bytes_per_cu: int
    lds_granule: int  # allocation block in bytes
    lds_max_per_workgroup: int
    max_workgroups_per_cu: int  # single-wave workgroups (no barrier needed)
    max_barriers_per_cu: int  # multi-wave workgroups each hold one barrier
    wave64_vgpr_pool: int | None = None  # RDNA: pool and granule when compiled for wave64
    wave64_vgpr_granule: int | None = None
    products: tuple[str, ...] = ()
    unconfirmed: tuple[str, ...] = ()  # field names whose value the sources did not settle

    @property
    def max_waves_per_cu(self) -> int:
        return self.max_waves_per_simd * self.simds_per_cu

    def vgpr_allocation(self, wave_size: int | None = None) -> tuple[int | None, int | None]:
        """(pool, granule) for a wave size (default wave size when None)."""
        if wave_size is None or wave_size == self.wave_size:
            return self.vgpr_pool, self.vgpr_granule
        if wave_size == 64 and self.wave64_vgpr_pool is not None:
            return self.wave64_vgpr_pool, self.wave64_vgpr_granule
        return None, None


@record(frozen=True)
class ProductSpec:
    """Per-product figures (several products share one gfx target)."""

    name: str
    arch: str
    peak_hbm_gbps: float | None
    max_clock_mhz: int | None
    peak_confirmed: bool  # False: community/secondary figure (docs/pmc-counters.md §4 marks all unconfirmed)
    source: str
    cu_count: int | None = None  # CUs of one agent (one GCD of an MI250/MI250X); public spec
    shader_engines: int | None = None  # SEs of one agent (4 per XCD on CDNA3/CDNA4): occupancy.json's per-SE keys


_CDNA_COMMON = dict(
    wave_size=64,
    wave_sizes=(64,),
    cu_label="CU",
    simds_per_cu=4,
    max_waves_per_simd=8,
    vgpr_pool=512,
    vgpr_granule=8,
    max_vgprs_per_wave=512,
    unified_agpr=True,
    accum_offset_granule=4,
    sgpr_budget=800,
    sgpr_granule=16,
    max_sgprs_per_wave=102,
    max_workgroups_per_cu=32,
    max_barriers_per_cu=16,
)

_RDNA_COMMON = dict(
    wave_size=32,
    wave_sizes=(32, 64),
    cu_label="WGP",
    simds_per_cu=4,
    max_waves_per_simd=16,
    max_vgprs_per_wave=256,
    unified_agpr=False,
    accum_offset_granule=1,
    sgpr_budget=None,
    sgpr_granule=None,
    max_sgprs_per_wave=106,
    sgpr_extra=0,
    lds_bytes_per_cu=131072,
    lds_granule=1024,
    lds_max_per_workgroup=65536,
    max_workgroups_per_cu=64,
    max_barriers_per_cu=32,
)

_RDNA_FULL_VGPRS = dict(vgpr_pool=1536, vgpr_granule=24, wave64_vgpr_pool=768,
                        wave64_vgpr_granule=12)
_RDNA_SMALL_VGPRS = dict(vgpr_pool=1024, vgpr_granule=16, wave64_vgpr_pool=512,
                         wave64_vgpr_granule=8)


ARCHES: dict[str, ArchSpec] = {
    "gfx90a": ArchSpec(
        name="gfx90a",
        family="CDNA2",
        gfx_target_version=90010,
        sgpr_extra=2,  # VCC; FLAT_SCRATCH/XNACK_MASK only when used (up to 6)
        lds_bytes_per_cu=65536,
        lds_granule=512,
        lds_max_per_workgroup=65536,
        products=("MI210", "MI250", "MI250X"),
        **_CDNA_COMMON,
    ),
    "gfx942": ArchSpec(
        name="gfx942",
        family="CDNA3",
        gfx_target_version=90402,
        sgpr_extra=6,  # VCC + architected FLAT_SCRATCH are always reserved
        lds_bytes_per_cu=65536,
        lds_granule=512,
        lds_max_per_workgroup=65536,
        products=("MI300X", "MI300A", "MI325X"),
        **_CDNA_COMMON,
    ),
    "gfx950": ArchSpec(
        name="gfx950",
        family="CDNA4",
        gfx_target_version=90500,
        sgpr_extra=6,
        lds_bytes_per_cu=163840,
        lds_granule=1280,
        lds_max_per_workgroup=163840,
        products=("MI350X", "MI355X"),
        **_CDNA_COMMON,
    ),
    "gfx1100": ArchSpec(name="gfx1100", family="RDNA3", gfx_target_version=110000,
                        products=("RX 7900 XTX", "RX 7900 XT", "PRO W7900"),
                        **_RDNA_COMMON, **_RDNA_FULL_VGPRS),
    "gfx1101": ArchSpec(name="gfx1101", family="RDNA3", gfx_target_version=110001,
                        products=("RX 7800 XT", "RX 7700 XT", "PRO W7800"),
                        **_RDNA_COMMON, **_RDNA_FULL_VGPRS),
    "gfx1102": ArchSpec(name="gfx1102", family="RDNA3", gfx_target_version=110002,
                        products=("RX 7600",), **_RDNA_COMMON, **_RDNA_SMALL_VGPRS),
    "gfx1200": ArchSpec(name="gfx1200", family="RDNA4", gfx_target_version=120000,
                        products=("RX 9060 XT",), **_RDNA_COMMON, **_RDNA_FULL_VGPRS),
    "gfx1201": ArchSpec(name="gfx1201", family="RDNA4", gfx_target_version=120001,
                        products=("RX 9070 XT", "RX 9070", "AI PRO R9700"),
                        **_RDNA_COMMON, **_RDNA_FULL_VGPRS),
    "gfx1250": ArchSpec(
        name="gfx1250",
        family="GFX12.5",
        gfx_target_version=120500,
        wave_size=32,
        wave_sizes=(32,),
        cu_label="WGP",
        simds_per_cu=4,
        max_waves_per_simd=16,
        vgpr_pool=None,  # register file size not found in public sources
        vgpr_granule=None,
        max_vgprs_per_wave=1024,
        unified_agpr=False,
        accum_offset_granule=1,
        sgpr_budget=None,
        sgpr_granule=None,
        max_sgprs_per_wave=106,
        sgpr_extra=0,
        lds_bytes_per_cu=327680,
        lds_granule=2048,
        lds_max_per_workgroup=327680,
        max_workgroups_per_cu=64,
        max_barriers_per_cu=32,
        unconfirmed=("vgpr_pool", "vgpr_granule", "simds_per_cu", "max_workgroups_per_cu",
                     "max_barriers_per_cu"),
    ),
}

# Targets that share a spec with a listed one (early MI300 steppings).
ARCH_ALIASES: dict[str, str] = {"gfx940": "gfx942", "gfx941": "gfx942"}

PRODUCTS: dict[str, ProductSpec] = {
    p.name: p
    for p in (
        ProductSpec("MI210", "gfx90a", 1600.0, 1700, False, "AMD product page; docs/pmc-counters.md §4; clock: public spec", cu_count=104),
        ProductSpec("MI250", "gfx90a", None, 1700, False, "clock: public spec", cu_count=104),
        ProductSpec("MI250X", "gfx90a", 3200.0, 1700, False, "AMD product page; docs/pmc-counters.md §4; clock: public spec", cu_count=110),
        ProductSpec("MI300X", "gfx942", 5300.0, 2100, False, "docs/pmc-counters.md §4; AMD product page (amd.com/en/products/accelerators/instinct/mi300/mi300x.html: 5.3 TB/s); clock: public spec", cu_count=304, shader_engines=32),
        ProductSpec("MI300A", "gfx942", 5300.0, 2100, False, "AMD product page; docs/pmc-counters.md §4; clock: public spec", cu_count=228, shader_engines=24),
        ProductSpec("MI325X", "gfx942", 6000.0, 2100, False, "AMD product page (amd.com/en/products/"
                    "accelerators/instinct/mi300/mi325x.html: 6 TB/s HBM3E); clock: public spec", cu_count=304, shader_engines=32),
        ProductSpec("MI350X", "gfx950", 8000.0, 2200, False,
                    "docs/pmc-counters.md §4 (community reports); AMD product page (amd.com/en/products/"
                    "accelerators/instinct/mi350/mi350x.html: 8 TB/s HBM3E); clock: observed "
                    "agent_info Max_Engine_Clk_Fcompute", cu_count=256, shader_engines=32),
        ProductSpec("MI355X", "gfx950", 8000.0, 2400, False, "docs/pmc-counters.md §4 (community reports); AMD product page (amd.com/en/products/accelerators/instinct/mi350/mi355x.html: 8 TB/s); clock: public spec", cu_count=256, shader_engines=32),
    )
}

_TARGET_IN_TEXT = re.compile(r"gfx[0-9]{2,4}[0-9a-f]?", re.IGNORECASE)


def target_from_version(version: int) -> str:
    """Gfx_Target_Version number → target name: 90402 → "gfx942", 90010 → "gfx90a"."""
    major, rest = divmod(version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor}{stepping:x}"


def normalize_target(name: str | int) -> str | None:
    """Canonical lower-case target from "GFX942", "gfx942:sramecc+:xnack-", a triple
    "amdgcn-amd-amdhsa--gfx942", or a Gfx_Target_Version number (90402). None if none found."""
    if isinstance(name, int):
        return target_from_version(name)
    text = str(name).strip()
    if text.isdigit():
        return target_from_version(int(text))
    match = _TARGET_IN_TEXT.search(text)
    if not match:
        return None
    return match.group(0).lower()


def get_arch(name: str | int | None) -> ArchSpec | None:
    """ArchSpec for a target name, numeric version or product name; None when not in the table."""
    if name is None:
        return None
    target = normalize_target(name)
    if target is None:
        product = get_product(str(name))
        return ARCHES.get(product.arch) if product else None
    return ARCHES.get(ARCH_ALIASES.get(target, target))


def get_product(name: str | None) -> ProductSpec | None:
    """ProductSpec from an agent_info Product_Name such as "AMD Instinct MI350X" (None if unknown)."""
    if not name:
        return None
    compact = re.sub(r"[^A-Z0-9]", "", name.upper())
    # Longest first so "MI250X" is not taken for "MI250".
    for key in sorted(PRODUCTS, key=len, reverse=True):
        if re.search(key + r"(?![0-9A-Z])", compact):
            return PRODUCTS[key]
    return None


def _shared_by_products(name: str | int | None, value_of: Callable[[ProductSpec], object]) -> object:
    """The value every listed product of the arch shares; None when the arch is unknown, no
    product has it or its products differ."""
    spec = get_arch(name)
    if spec is None:
        return None
    values = {value_of(product) for product in PRODUCTS.values() if product.arch == spec.name}
    return values.pop() if len(values) == 1 and None not in values else None


def arch_clock_mhz(name: str | int | None) -> int | None:
    """The maximum engine clock (MHz) every listed product of the arch shares; None when the arch
    is unknown, has no product with a clock, or its products differ (gfx950: MI350X 2200, MI355X
    2400): then only the agent's own Max_Engine_Clk_Fcompute can tell."""
    return _shared_by_products(name, lambda product: product.max_clock_mhz)


def arch_cu_count(name: str | int | None) -> int | None:
    """The CUs of one agent every listed product of the arch shares (gfx950: MI350X and MI355X,
    256); None when the arch is unknown or its products differ (gfx942: MI300X 304, MI300A 228):
    then only the agent's own CU count can tell."""
    return _shared_by_products(name, lambda product: product.cu_count)


def cus_per_shader_engine(product: ProductSpec) -> float | None:
    """CUs per shader engine of one product (gfx942: 9.5, some SEs 9 and some 10; gfx950: 8)."""
    if not product.cu_count or not product.shader_engines:
        return None
    return product.cu_count / product.shader_engines


def arch_cus_per_shader_engine(name: str | int | None) -> float | None:
    """CUs per shader engine every listed product of the arch shares (gfx942 9.5, gfx950 8;
    None for gfx90a, whose SE count the table lacks)."""
    return _shared_by_products(name, cus_per_shader_engine)


def slowest_clock_mhz(names: Iterable[str]) -> int | None:
    """The lowest maximum engine clock (MHz) of any listed product of these archs: the clock at
    which a cycle count lasts longest when only candidate archs are known."""
    archs = {spec.name for spec in (get_arch(name) for name in names) if spec is not None}
    clocks = [product.max_clock_mhz for product in PRODUCTS.values()
              if product.arch in archs and product.max_clock_mhz]
    return min(clocks, default=None)


def arch_peak_hbm_gbps(name: str | int | None) -> float | None:
    """The HBM peak (GB/s) every listed product of the arch shares (gfx950: MI350X and MI355X,
    8 TB/s); None when the arch is unknown or its products differ or lack a figure: then only the
    agent's product name can tell."""
    return _shared_by_products(name, lambda product: product.peak_hbm_gbps)
