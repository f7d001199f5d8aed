"""Launch context and request bandwidth of one dispatch: grid vs GPU, tail, bytes against the HBM peak.

From the kernel-trace row (grid and workgroup sizes in work-items, start/end timestamps), the
agent's CU count and the occupancy model (resident workgroups per CU): how many workgroups the
grid launches, what fraction of the CUs get one, how many rounds the resident capacity needs and
the share of capacity the last round leaves idle (the tail), and the waves per SIMD the grid
allows (when lower than the CU limit, the grid, not registers or LDS, caps occupancy).

Request bytes: every executed vector load/store outside scratch moves `hits × bytes per lane ×
wave size` bytes (full exec mask assumed: an upper bound); per traced wave times the grid's waves
gives bytes per dispatch, and over `duration_ns` a request bandwidth. Loads every workgroup
repeats (an address no path lets depend on the workgroup: `analysis.address_reuse`) are served by
L2 after the first workgroup, so they are left out of the dispatch's bytes. Other requests served
by L1/L2 never reach HBM either, so at or above the peak the memory path (L2 or HBM) is the bound;
far below it, latency is. PMC counters, when captured, measure the real HBM traffic and override
this.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from kerneltrace.analysis.drains import producer_class
from kerneltrace.arch.table import get_arch
from kerneltrace.isa.classify import VMEM_LOAD, VMEM_STORE, classify, opcode
from kerneltrace.thresholds import DEFAULT_LAUNCH_BOUND, LaunchBoundThresholds

_WIDTH = re.compile(r"_(?:lds_)?(dwordx(\d)|dword|b(\d+)|ubyte|sbyte|byte|ushort|sshort|short|u8|i8|u16|i16|d16\w*)")


def bytes_per_lane(asm: str) -> int:
    """Bytes one lane moves for a vector memory instruction (0 when not one)."""
    op = opcode(asm)
    match = _WIDTH.search(op)
    if match is None:
        return 0
    token, count, bits = match.group(1), match.group(2), match.group(3)
    if count:
        return 4 * int(count)
    if token == "dword":
        return 4
    if bits:
        return int(bits) // 8
    return 1 if token in ("ubyte", "sbyte", "byte", "u8", "i8") else 2


def doc_wave_size(doc: Mapping) -> int:
    """Lanes per wave of a hotspot document's dispatch: the occupancy model's (the kernel's
    wave32/wave64 compile mode), else the arch table's default, else 64 (CDNA)."""
    arch = get_arch(((doc.get("arch") or {}).get("name")) or "")
    return (doc.get("occupancy") or {}).get("wave_size") or (arch.wave_size if arch else 64)


@dataclass(frozen=True)
class Traffic:
    """Request bytes of one dispatch and the bandwidth they imply."""

    load_bytes_per_wave: float
    store_bytes_per_wave: float
    repeated_load_bytes_per_wave: float  # part of the loads every workgroup repeats (L2 serves it)
    grid_waves: int | None
    dispatch_bytes: float | None
    request_gbps: float | None
    peak_gbps: float | None
    fraction_of_peak: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def request_traffic(rows: Iterable, traced_waves: int | None, wave_size: int,
                    grid_waves: int | None, duration_ns: int | None,
                    peak_gbps: float | None, repeated: frozenset[int] = frozenset()) -> Traffic | None:
    """Request bytes per wave and per dispatch from code.json rows (`index`, `asm`, `hits`);
    `repeated`: the rows of loads every workgroup repeats (left out of the dispatch's bytes)."""
    if not traced_waves:
        return None
    loads = stores = again = 0.0
    for row in rows:
        kind = classify(row.asm)
        if kind not in (VMEM_LOAD, VMEM_STORE) or not row.hits:
            continue
        if producer_class(row.asm) in ("spill", "private-array"):
            continue  # scratch stays in the caches of one CU's lanes
        moved = row.hits * bytes_per_lane(row.asm) * wave_size
        if kind == VMEM_LOAD:
            loads += moved
            if repeated and row.index in repeated:
                again += moved
        else:
            stores += moved
    per_wave_loads, per_wave_stores = loads / traced_waves, stores / traced_waves
    per_wave_again = again / traced_waves
    total = ((per_wave_loads - per_wave_again + per_wave_stores) * grid_waves if grid_waves
             else None)
    gbps = total / duration_ns if total is not None and duration_ns else None
    fraction = gbps / peak_gbps if gbps is not None and peak_gbps else None
    return Traffic(round(per_wave_loads, 1), round(per_wave_stores, 1), round(per_wave_again, 1),
                   grid_waves,
                   total, round(gbps, 1) if gbps is not None else None, peak_gbps,
                   round(fraction, 4) if fraction is not None else None)


@dataclass(frozen=True)
class Launch:
    """How one dispatch fills the GPU."""

    duration_ns: int | None
    workgroups: int
    waves_per_workgroup: int
    grid_waves: int
    cu_count: int | None
    resident_workgroups_per_cu: int | None  # occupancy model: workgroups one CU holds at once
    cu_fill: float | None  # share of CUs that get at least one workgroup
    rounds: float | None  # workgroups / (CUs × resident per CU)
    tail_loss: float | None  # share of the run's CU capacity the last round leaves idle
    waves_per_simd_grid: float | None  # waves per SIMD the grid can supply
    grid_limits_occupancy: bool  # the grid, not the CU, caps waves per SIMD
    launch_bound: bool
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def launch_context(kernel_trace: Mapping | None, agent: Mapping | None,
                   occupancy: Mapping | None, wave_size: int) -> Launch | None:
    """The launch facts of one dispatch (None without a kernel-trace row), judged with the
    default thresholds (the plan judges again with the ones in use: `launch_judgement`)."""
    if not kernel_trace or not kernel_trace.get("grid_size") or not kernel_trace.get("workgroup_size"):
        return None
    grid, group = kernel_trace["grid_size"], kernel_trace["workgroup_size"]
    workgroups = math.prod(max(1, -(-int(g) // max(1, int(w)))) for g, w in zip(grid, group, strict=True))
    threads = math.prod(max(1, int(w)) for w in group)
    per_group = max(1, -(-threads // wave_size))
    grid_waves = workgroups * per_group
    cus = (agent or {}).get("cu_count")
    simds = (agent or {}).get("simd_per_cu") or 4
    occ = occupancy or {}
    waves_per_simd = occ.get("waves_per_simd")
    resident = None
    if isinstance(waves_per_simd, int) and waves_per_simd > 0:
        resident = max(1, waves_per_simd * simds // per_group)
        limit = (occ.get("limits") or {}).get("workgroup")
        if isinstance(limit, int) and limit > 0:
            resident = min(resident, limit)
    fill = rounds = tail = per_simd = None
    grid_limited = False
    if cus:
        fill = round(min(1.0, workgroups / cus), 4)
        per_simd = round(grid_waves / (cus * simds), 2)
        if isinstance(waves_per_simd, int):
            grid_limited = per_simd < waves_per_simd
        if resident:
            rounds = round(workgroups / (cus * resident), 3)
            whole = math.ceil(rounds)
            tail = round((whole - rounds) / whole, 4) if rounds > 1 else 0.0
    facts = {"workgroups": workgroups, "cu_count": cus, "resident_workgroups_per_cu": resident,
             "cu_fill": fill, "rounds": rounds, "tail_loss": tail}
    bound, reason = launch_judgement(facts)
    return Launch(kernel_trace.get("duration_ns"), workgroups, per_group, grid_waves, cus, resident,
                  fill, rounds, tail, per_simd, grid_limited, bound, reason)


def launch_judgement(launch: Mapping,
                     limits: LaunchBoundThresholds = DEFAULT_LAUNCH_BOUND) -> tuple[bool, str]:
    """(launch-bound?, why) of one dispatch's launch facts (a `Launch` as a dict): the grid leaves
    `limits.idle_cu_share` of the CUs without work, or its last round `limits.tail_loss` of the
    capacity idle."""
    fill, tail = launch.get("cu_fill"), launch.get("tail_loss")
    workgroups, cus = launch.get("workgroups"), launch.get("cu_count")
    if fill is not None and 1 - fill >= limits.idle_cu_share:
        return True, f"{workgroups} workgroups on {cus} CUs: {1 - fill:.0%} of the CUs get no work"
    if tail is not None and tail >= limits.tail_loss:
        return True, (f"{workgroups} workgroups need {launch.get('rounds'):.2f} rounds of "
                      f"{cus}×{launch.get('resident_workgroups_per_cu')} resident workgroups: the "
                      f"last round leaves {tail:.0%} of the run's capacity idle")
    return False, ""
