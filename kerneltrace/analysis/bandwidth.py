"""Request bandwidth from the ATT capture itself: bytes the traced waves request per busy-CU cycle, scaled to the GPU.

Issue 21 (blind review, weakness 1): a kernel at the HBM limit must not read as memory-latency
because no kernel trace gave its grid. The thread trace alone has what a rate needs:

* bytes: every executed vector load/store outside scratch moves `hits × bytes per lane × wave
  size` (the `traffic` rule of analysis/launch.py, full exec mask: an upper bound; cache hits
  included, so at or above the HBM peak the memory path, L2 or HBM, is the bound);
* time: the traced CUs' busy cycles, the union of wave lifetimes per SIMD (`waves.peers.
  resident_cycles`) over the SIMDs per CU (the waves of a CU are taken to spread over its SIMDs);
* per-CU demand = bytes / busy-CU cycles (B/clk); the device rate = demand × busy CUs × clock,
  busy CUs = min(CUs, workgroups) with a kernel trace, else every CU of the GPU (the stated
  assumption: the traced CUs stand for all of them; lower confidence);
* CU count, clock and HBM peak from the agent (agent_info.csv), else the arch table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import SimpleNamespace

from kerneltrace.analysis.launch import doc_wave_size, request_traffic
from kerneltrace.arch.table import arch_clock_mhz, arch_peak_hbm_gbps, get_arch, get_product


@dataclass(frozen=True)
class BandwidthEstimate:
    """The traced waves' request rate per CU and, scaled to the GPU, against the HBM peak."""

    bytes_per_wave: float
    traced_waves: int
    cu_busy_cycles: float  # Σ over traced CUs of the time their SIMDs held a wave
    per_cu_bytes_per_clk: float
    busy_cus: int
    cus_assumed: bool  # no grid: every CU of the GPU taken to be as busy as the traced ones
    clock_mhz: int
    device_gbps: float
    peak_gbps: float
    fraction_of_peak: float
    basis: str

    def to_dict(self) -> dict:
        return asdict(self)


def _rows(doc: Mapping) -> list[SimpleNamespace]:
    return [SimpleNamespace(asm=ins.get("asm") or "", hits=ins.get("hits") or 0)
            for ins in doc.get("instructions") or []]


def _repeated_share(traffic: Mapping) -> float:
    """Share of the request bytes that are loads every workgroup repeats (L2 serves them)."""
    per_wave = (traffic.get("load_bytes_per_wave") or 0) + (traffic.get("store_bytes_per_wave") or 0)
    again = traffic.get("repeated_load_bytes_per_wave") or 0
    return min(1.0, again / per_wave) if per_wave else 0.0


def bandwidth_estimate(doc: Mapping, structure: Mapping | None = None) -> BandwidthEstimate | None:
    """The request-rate estimate of one hotspot document; None without wave files, the GPU's CU
    count, its clock or its HBM peak. `structure`: the document's (recomputed by the plan when
    the document predates it), else its own `structure`."""
    waves = doc.get("waves") or {}
    traced = waves.get("waves")
    resident = (waves.get("peers") or {}).get("resident_cycles")
    agent = (doc.get("metadata") or {}).get("agent") or {}
    arch_name = (doc.get("arch") or {}).get("name") or agent.get("name")
    arch = get_arch(arch_name or "")
    cus = agent.get("cu_count")
    simds = agent.get("simd_per_cu") or (arch.simds_per_cu if arch else None)
    product = get_product(agent.get("product_name"))
    clock = (agent.get("max_engine_clock_mhz") or (product.max_clock_mhz if product else None)
             or arch_clock_mhz(arch_name))
    peak = (product.peak_hbm_gbps if product else None) or arch_peak_hbm_gbps(arch_name)
    if not (traced and resident and cus and simds and clock and peak):
        return None
    moved = request_traffic(_rows(doc), 1, doc_wave_size(doc), None, None, None)
    total = (moved.load_bytes_per_wave + moved.store_bytes_per_wave) if moved else 0.0
    if not total:
        return None
    known = (structure if structure is not None else doc.get("structure")) or {}
    total *= 1 - _repeated_share(known.get("traffic") or {})
    busy_cycles = resident / simds
    per_cu = total / busy_cycles
    launch = known.get("launch") or {}
    workgroups = launch.get("workgroups")
    busy = min(int(cus), int(workgroups)) if workgroups else int(cus)
    gbps = per_cu * busy * clock / 1000  # B/clk × CUs × MHz = MB/s; /1000 → GB/s
    fraction = gbps / peak
    where = (f"{busy} of {cus} CUs busy (the grid's {workgroups} workgroups)" if workgroups
             else f"assumed: all {cus} CUs as busy as the traced ones (no kernel trace)")
    basis = (f"{total / traced / 1024:.1f} KiB requested per wave × {traced} traced waves over "
             f"{busy_cycles:,.0f} busy-CU cycles = {per_cu:.1f} B/clk per CU; × {where} × "
             f"{clock} MHz = {gbps / 1000:.1f} TB/s, {fraction:.0%} of the {peak / 1000:.1f} TB/s "
             "HBM peak (requests include cache hits but loads every workgroup repeats; full exec mask)")
    return BandwidthEstimate(round(total / traced, 1), int(traced), round(busy_cycles, 1),
                             round(per_cu, 2), busy, not workgroups, int(clock), round(gbps, 1),
                             peak, round(fraction, 4), basis)
