"""The single table of PMC counter names per arch, their hardware blocks, per-pass limits and metric needs.

Facts and their sources: docs/pmc-counters.md (§1–3); nothing else in the code base hard-codes a
counter name or a block limit. Peak bandwidth per product lives in kerneltrace/arch/table.py.
"""

from __future__ import annotations

from dataclasses import dataclass

# Counters per block per hardware pass (aqlprofile gfx9_block_info.h; identical on gfx908..gfx950).
BLOCK_LIMITS: dict[str, int] = {
    "SQ": 8,
    "TCC": 4,
    "TCP": 4,
    "TA": 2,
    "TD": 2,
    "TCA": 4,
    "SPI": 6,
    "GRBM": 2,
    "CPC": 2,
    "CPF": 2,
    "GDS": 4,
}

# Counter-name prefix -> block. SQC (instruction/scalar cache) events are programmed through SQ.
_PREFIX_BLOCK: dict[str, str] = {**{block: block for block in BLOCK_LIMITS}, "SQC": "SQ"}

# Archs the planner writes jobs for; the analysis also reads gfx908/gfx940/gfx941 data.
SUPPORTED_ARCHES: tuple[str, ...] = ("gfx90a", "gfx942", "gfx950")

# gfx target -> (EA counter infix, formula family). gfx90a/gfx908 name the L2->fabric counters
# TCC_EA_*; the MI300 generation (gfx94x, gfx950) names them TCC_EA0_*.
_ARCH_FAMILY: dict[str, tuple[str, str]] = {
    "gfx908": ("EA", "gfx90a"),
    "gfx90a": ("EA", "gfx90a"),
    "gfx940": ("EA0", "gfx942"),
    "gfx941": ("EA0", "gfx942"),
    "gfx942": ("EA0", "gfx942"),
    "gfx950": ("EA0", "gfx950"),
}

# Logical counter key -> base name template ({EA} is the arch's EA infix). Keys are what metric
# definitions refer to; base names are the hardware names without the "_sum" reduction suffix.
_COUNTER_TEMPLATES: dict[str, str] = {
    "hit": "TCC_HIT",
    "miss": "TCC_MISS",
    "req": "TCC_REQ",
    "rdreq": "TCC_{EA}_RDREQ",
    "rdreq_32b": "TCC_{EA}_RDREQ_32B",
    "rdreq_64b": "TCC_{EA}_RDREQ_64B",
    "rdreq_128b": "TCC_{EA}_RDREQ_128B",
    "bubble": "TCC_BUBBLE",
    "rdreq_dram": "TCC_{EA}_RDREQ_DRAM",
    "rdreq_level": "TCC_{EA}_RDREQ_LEVEL",
    "wrreq": "TCC_{EA}_WRREQ",
    "wrreq_64b": "TCC_{EA}_WRREQ_64B",
    "wrreq_dram": "TCC_{EA}_WRREQ_DRAM",
    "tcp_tcc_read_req": "TCP_TCC_READ_REQ",
    "sq_waves": "SQ_WAVES",
    "sq_insts_vmem_rd": "SQ_INSTS_VMEM_RD",
    "sq_insts_vmem_wr": "SQ_INSTS_VMEM_WR",
    "grbm_gui_active": "GRBM_GUI_ACTIVE",
}

# Counters that exist only on some formula families (explicit 64/128-byte reads: gfx950 only).
_ONLY_ON: dict[str, frozenset[str]] = {
    "rdreq_64b": frozenset({"gfx950"}),
    "rdreq_128b": frozenset({"gfx950"}),
}

# Read-path (FETCH_SIZE-type) and write-path (WRITE_SIZE-type) counters go in different passes
# (docs/pmc-counters.md §2).
FETCH_KEYS: frozenset[str] = frozenset(
    {"rdreq", "rdreq_32b", "rdreq_64b", "rdreq_128b", "bubble", "rdreq_dram", "rdreq_level"}
)
WRITE_KEYS: frozenset[str] = frozenset({"wrreq", "wrreq_64b", "wrreq_dram"})


@dataclass(frozen=True)
class MetricDef:
    """One requestable metric: the logical counters it needs, per formula family."""

    name: str
    description: str
    needs: dict[str, tuple[str, ...]]  # formula family -> counter keys (all from one run)


def _same(keys: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {family: keys for family in ("gfx90a", "gfx942", "gfx950")}


METRICS: dict[str, MetricDef] = {
    metric.name: metric
    for metric in (
        MetricDef("l2_hit_rate", "L2 hit rate: HIT / (HIT + MISS)", _same(("hit", "miss"))),
        MetricDef(
            "read_mix",
            "L2->fabric read requests by size (32/64/128 B) and fabric read bytes",
            {
                "gfx90a": ("rdreq", "rdreq_32b"),
                "gfx942": ("rdreq", "rdreq_32b", "bubble"),
                "gfx950": ("rdreq_32b", "rdreq_64b", "rdreq_128b"),
            },
        ),
        MetricDef(
            "read_bytes_crosscheck",
            "gfx950 only: fabric read bytes by the TCC_BUBBLE form, compared with the explicit-size form",
            {"gfx950": ("rdreq", "rdreq_32b", "bubble")},
        ),
        MetricDef("dram_share", "share of read requests that target DRAM", _same(("rdreq", "rdreq_dram"))),
        MetricDef("l1_l2_requests", "L1 (TCP) -> L2 read requests", _same(("tcp_tcc_read_req",))),
        MetricDef("write_bytes", "L2->fabric write and atomic bytes", _same(("wrreq", "wrreq_64b"))),
        MetricDef("l2_bandwidth", "L2 requests (x128 B per request) per ns", _same(("req",))),
        MetricDef("l2_read_latency", "in-flight read requests per read request (cycles)", _same(("rdreq", "rdreq_level"))),
        MetricDef(
            "vmem_instructions",
            "waves and vector-memory instructions (SQ), for bytes-per-instruction heuristics",
            _same(("sq_waves", "sq_insts_vmem_rd", "sq_insts_vmem_wr")),
        ),
    )
}

# L2 hit rate, 32/64/128-byte read mix, DRAM share, L1->L2 requests, writes (+ the gfx950 cross-check).
DEFAULT_METRICS: tuple[str, ...] = (
    "l2_hit_rate",
    "read_mix",
    "read_bytes_crosscheck",
    "dram_share",
    "l1_l2_requests",
    "write_bytes",
)


def arch_family(arch: str | None) -> tuple[str, str] | None:
    """(EA infix, formula family) for a gfx target such as 'gfx942' or 'gfx942:sramecc+'; None if unknown."""
    if not arch:
        return None
    return _ARCH_FAMILY.get(arch.split(":")[0].strip().lower())


def counter_base(key: str, arch: str) -> str | None:
    """Hardware base name (no '_sum') of a logical counter on an arch; None when it does not exist there."""
    family = arch_family(arch)
    if family is None or key not in _COUNTER_TEMPLATES:
        return None
    infix, formula = family
    if key in _ONLY_ON and formula not in _ONLY_ON[key]:
        return None
    return _COUNTER_TEMPLATES[key].format(EA=infix)


def spellings(key: str) -> tuple[str, ...]:
    """Every hardware base name of a logical counter, newest arch family first (gfx950, gfx942,
    gfx90a): e.g. rdreq_32b -> ('TCC_EA0_RDREQ_32B', 'TCC_EA_RDREQ_32B')."""
    names = (counter_base(key, arch) for arch in ("gfx950", "gfx942", "gfx90a"))
    return tuple(dict.fromkeys(name for name in names if name))


def ea_prefix(arch: str) -> str | None:
    """'TCC_EA0_' (gfx94x/gfx950) or 'TCC_EA_' (gfx90a): the prefix of the L2→fabric counters."""
    family = arch_family(arch)
    return f"TCC_{family[0]}_" if family else None


def request_name(key: str, arch: str) -> str | None:
    """Name to put in a rocprofv3 'pmc' list: TCC/TCP counters as their device-wide '_sum'."""
    base = counter_base(key, arch)
    if base is None:
        return None
    return f"{base}_sum" if block_of(base) in ("TCC", "TCP") else base


def strip_sum(name: str) -> str:
    """'TCC_HIT_sum' -> 'TCC_HIT'. In counter_collection.csv both print the same device total."""
    return name[:-4] if name.endswith("_sum") else name


def block_of(counter: str) -> str | None:
    """Hardware block of a counter name ('TCC_EA0_RDREQ_sum' -> 'TCC'); None for unknown prefixes."""
    prefix = counter.split("_", 1)[0].upper()
    return _PREFIX_BLOCK.get(prefix)


def key_of(counter: str, arch: str) -> str | None:
    """Logical key of a hardware counter name on an arch (inverse of counter_base)."""
    base = strip_sum(counter)
    for key in _COUNTER_TEMPLATES:
        if counter_base(key, arch) == base:
            return key
    return None


def metric_keys(metric: str, arch: str) -> tuple[str, ...] | None:
    """Logical counters a metric needs on an arch; None when the metric does not exist there."""
    family = arch_family(arch)
    definition = METRICS.get(metric)
    if family is None or definition is None:
        return None
    return definition.needs.get(family[1])
