"""The `structure` object of the hotspot document: control flow, drained waits, setup, barriers, launch, coverage.

Everything here comes from the instruction table (code.json) and the kernel-trace / agent
metadata alone, so it exists without wave files; it is computed from the document's own
`instructions`, `metadata` and `occupancy` (the plan recomputes it the same way for documents
written before it existed).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

from kerneltrace.analysis.address_reuse import repeated_loads
from kerneltrace.analysis.barrier_stragglers import straggler_causes
from kerneltrace.analysis.barriers import barrier_causes
from kerneltrace.analysis.control_flow import control_flow, rows_from_instructions
from kerneltrace.analysis.coverage import clock_mhz, trace_coverage
from kerneltrace.analysis.cu_usage import judged_usage
from kerneltrace.analysis.dataflow import select_chains
from kerneltrace.analysis.drains import drain_waits, lds_only_stall, stall_by_class
from kerneltrace.analysis.launch import Launch, doc_wave_size, launch_context, request_traffic
from kerneltrace.analysis.load_trips import load_trips
from kerneltrace.analysis.setup import kernarg_bases, round_trips
from kerneltrace.arch.table import (
    arch_cu_count,
    arch_cus_per_shader_engine,
    arch_peak_hbm_gbps,
    cus_per_shader_engine,
    get_arch,
    get_product,
)
from kerneltrace.readers.codejson import CodeFormat
from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds

TOP_WAITS = 12  # drained waits listed, by stall


def _observed_headers(doc: Mapping) -> dict[int, int]:
    """Latch → header rows the wave analysis saw jumps between (wave files refine the bounds)."""
    out = {}
    for loop in ((doc.get("waves") or {}).get("loops") or []):
        latch, header = loop.get("last_index"), loop.get("first_index")
        if isinstance(latch, int) and isinstance(header, int):
            out[latch] = header
    return out


def _charged(drains) -> list[dict]:
    """Wait cycles per youngest drained producer row, with the waits that charged it (the
    static counterpart of `waves.waitcnt` producers)."""
    cycles: dict[int, int] = {}
    waits: dict[int, set[int]] = {}
    for drain in drains:
        if drain.youngest is not None and drain.stall:
            cycles[drain.youngest] = cycles.get(drain.youngest, 0) + drain.stall
            waits.setdefault(drain.youngest, set()).add(drain.index)
    return [{"index": i, "cycles": c, "waits": sorted(waits[i])}
            for i, c in sorted(cycles.items(), key=lambda kv: -kv[1])]


def _with_stragglers(barriers: dict | None, doc: Mapping, rows, drains) -> dict | None:
    """The code.json barrier causes plus, with wave files, the straggler causes (issue 21.4)."""
    stragglers = straggler_causes((doc.get("waves") or {}).get("stragglers"), rows, drains)
    if barriers is None or stragglers is None:
        return barriers
    return {**barriers, "stragglers": stragglers}


def other_launch_reason(doc: Mapping, launch: Launch | None, span_excess: float) -> str | None:
    """Why the kernel-trace row, joined by kernel name alone, is another launch of the kernel
    (None when nothing contradicts it): the traced waves ran longer than that launch lasted, or a
    traced CU ran more waves than its single-round grid gives any CU. A discovery run may have
    launched the kernel only with other shapes than the traced one."""
    metadata = doc.get("metadata") or {}
    if launch is None or metadata.get("kernel_trace_join") != "kernel_name":
        return None
    waves = doc.get("waves") or {}
    span = (waves.get("timing") or {}).get("span_cycles")
    mhz = clock_mhz(doc)
    what = (f"the kernel-trace row joined by name ({launch.workgroups} workgroups, "
            f"{(launch.duration_ns or 0) / 1000:.1f} µs)")
    if isinstance(span, int) and mhz and launch.duration_ns and (
            span * 1000 / mhz > span_excess * launch.duration_ns):
        return (f"the traced waves ran {span / mhz:.1f} µs, longer than {what}: that row is "
                "another launch of this kernel, so the launch facts are unknown")
    traced = (waves.get("residency") or {}).get("waves_per_cu")
    if (isinstance(traced, int | float) and launch.cu_count and launch.rounds is not None
            and launch.rounds <= 1):
        most = -(-launch.workgroups // launch.cu_count) * launch.waves_per_workgroup
        if traced > most:
            return (f"a traced CU ran {traced:g} waves, more than the {most} {what} gives any CU "
                    "in its one round: that row is another launch of this kernel, so the launch "
                    "facts are unknown")
    return None


def structure_of(doc: Mapping, limits: StructureThresholds = DEFAULT_STRUCTURE) -> dict:
    """The `structure` object (docs/hotspot-json.md) of one hotspot document; `limits`: the
    structure thresholds in use (loops, conditional barriers, select chains)."""
    instructions = [ins for ins in doc.get("instructions") or [] if isinstance(ins.get("index"), int)]
    rows = rows_from_instructions(instructions)
    pc_sampling = doc.get("format") == CodeFormat.PCSAMPLING
    flow = control_flow(rows, _observed_headers(doc), "pc_samples" if pc_sampling else "latency+idle",
                        limits)
    arch = get_arch(((doc.get("arch") or {}).get("name")) or "")
    wave_size = doc_wave_size(doc)
    bases = kernarg_bases(rows)
    drains = drain_waits(rows, flow, stores_in_vmcnt=not (arch and arch.family.startswith("RDNA")),
                         kernarg_bases=bases)
    total = sum((row.stall if row.stall is not None else row.time) for row in rows)
    setup = round_trips(rows, drains, total, bases)
    trips = load_trips(rows, drains, flow, total)
    barriers = barrier_causes(rows, drains, flow, limits)
    metadata = doc.get("metadata") or {}
    agent = dict(metadata.get("agent") or {})
    if not agent.get("cu_count") and arch is not None:
        # no agent_info: the CU count every listed product of the arch shares (gfx950: 256)
        agent["cu_count"] = arch_cu_count(arch.name)
    launch = launch_context(metadata.get("kernel_trace"), agent, doc.get("occupancy"), wave_size)
    other_launch = other_launch_reason(doc, launch, limits.name_join_span)
    if other_launch:
        launch = None
    product = get_product((metadata.get("agent") or {}).get("product_name"))
    # without launch facts, what occupancy.json shows of the traced SEs stands in for them
    usage = None if launch is not None else judged_usage(
        doc.get("cu_usage"),
        (cus_per_shader_engine(product) if product else None)
        or (arch_cus_per_shader_engine(arch.name) if arch else None))
    traffic = request_traffic(
        [SimpleNamespace(index=ins["index"], asm=ins.get("asm") or "", hits=ins.get("hits") or 0)
         for ins in instructions],
        flow.waves, wave_size, launch.grid_waves if launch else None,
        launch.duration_ns if launch else None,
        product.peak_hbm_gbps if product else (
            # no agent_info: the peak every listed product of the arch shares (gfx950: 8 TB/s);
            # a product the table lacks gets no peak
            arch_peak_hbm_gbps(arch.name) if arch and not agent.get("product_name") else None),
        repeated_loads(rows, bases))
    ordered = sorted(instructions, key=lambda ins: ins["index"])
    chains = select_chains([(ins["index"], ins.get("asm") or "") for ins in ordered],
                           limits.min_chain)
    by_class = stall_by_class(drains)
    return {
        "control_flow": flow.to_dict(),
        "waits": {
            "basis": "stall_cycles" if any(row.stall is not None for row in rows) else "latency_cycles",
            "total_cycles": total,
            "by_class": {k: {**v, "share": round(v["primary"] / total, 4) if total else 0.0}
                         for k, v in sorted(by_class.items())},
            # on-chip round trips: waits for LDS results only (the LDS-bound verdict's share)
            "lds_only_share": round(lds_only_stall(drains) / total, 4) if total else 0.0,
            "top": [d.to_dict() for d in sorted(drains, key=lambda d: -d.stall)[:TOP_WAITS]],
            "charged": _charged(drains),
        },
        "setup": setup.to_dict() if setup else None,
        "load_trips": trips.to_dict() if trips else None,
        "barriers": _with_stragglers(barriers.to_dict() if barriers else None, doc, rows, drains),
        "launch": launch.to_dict() if launch else None,
        "traffic": traffic.to_dict() if traffic else None,
        "trace_coverage": None if other_launch else trace_coverage(doc, launch.to_dict() if launch else None),
        "launch_unmatched": other_launch,
        "cu_usage": usage.to_dict() if usage else None,
        "select_chains": [{"first": c.first, "last": c.last, "length": c.length} for c in chains],
    }
