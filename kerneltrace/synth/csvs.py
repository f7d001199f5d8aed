"""rocprofv3-style CSV text (kernel_trace, kernel_stats, agent_info, domain_stats, counter_collection, ATT stats)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

KERNEL_TRACE_HEADER = (
    "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id",
    "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size",
    "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X",
    "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
)
STATS_HEADER = ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs",
                "StdDev")
AGENT_INFO_HEADER = (
    "Node_Id", "Logical_Node_Id", "Agent_Type", "Cpu_Cores_Count", "Simd_Count",
    "Cpu_Core_Id_Base", "Simd_Id_Base", "Max_Waves_Per_Simd", "Lds_Size_In_Kb", "Gds_Size_In_Kb",
    "Num_Gws", "Wave_Front_Size", "Num_Xcc", "Cu_Count", "Array_Count", "Num_Shader_Banks",
    "Simd_Arrays_Per_Engine", "Cu_Per_Simd_Array", "Simd_Per_Cu", "Max_Slots_Scratch_Cu",
    "Gfx_Target_Version", "Vendor_Id", "Device_Id", "Location_Id", "Domain", "Drm_Render_Minor",
    "Num_Sdma_Engines", "Num_Sdma_Xgmi_Engines", "Num_Sdma_Queues_Per_Engine", "Num_Cp_Queues",
    "Max_Engine_Clk_Ccompute", "Max_Engine_Clk_Fcompute", "Sdma_Fw_Version", "Fw_Version",
    "Capability", "Cu_Per_Engine", "Max_Waves_Per_Cu", "Family_Id", "Workgroup_Max_Size",
    "Grid_Max_Size", "Local_Mem_Size", "Hive_Id", "Gpu_Id", "Workgroup_Max_Dim_X",
    "Workgroup_Max_Dim_Y", "Workgroup_Max_Dim_Z", "Grid_Max_Dim_X", "Grid_Max_Dim_Y",
    "Grid_Max_Dim_Z", "Name", "Vendor_Name", "Product_Name", "Model_Name",
)
COUNTER_COLLECTION_HEADER = (
    "Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id",
    "Grid_Size", "Kernel_Id", "Kernel_Name", "Workgroup_Size", "LDS_Block_Size", "Scratch_Size",
    "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Counter_Name", "Counter_Value",
    "Start_Timestamp", "End_Timestamp",
)
ATT_STATS_HEADER = ("CodeObj", "Vaddr", "Instruction", "Hitcount", "Latency", "Stall", "Idle",
                    "Source")
ATT_STATS_HEADER_DEVELOP = ("CodeObj", "Vaddr", "Instruction", "Hitcount", "Latency", "Stall",
                            "Idle", "ServiceType", "Issued", "Stalled", "Source")


@dataclass(frozen=True)
class SynthDevice:
    """The synthetic GPU agent of one target.

    ISA/occupancy facts (target version, LDS, SIMDs, wave limits) and the product clock come
    from the single arch table (kerneltrace/arch/table.py); only board-level values that the
    arch table does not hold (CU count, XCDs, PCI device id) live here.
    """

    gfx: str
    product: str  # key of kerneltrace.arch.table.PRODUCTS
    cu_count: int
    num_xcc: int
    device_id: int
    family_id: int = 141

    @property
    def arch(self):
        from kerneltrace.arch.table import get_arch

        return get_arch(self.gfx)

    @property
    def product_name(self) -> str:
        return f"AMD Instinct {self.product}"

    @property
    def max_clock_mhz(self) -> int:
        from kerneltrace.arch.table import PRODUCTS

        return PRODUCTS[self.product].max_clock_mhz

    @property
    def lds_kb(self) -> int:
        return self.arch.lds_bytes_per_cu // 1024


# Public spec-sheet board values of one product per supported target.
SYNTH_DEVICES = {
    "gfx90a": SynthDevice("gfx90a", "MI210", cu_count=104, num_xcc=1, device_id=29711),
    "gfx942": SynthDevice("gfx942", "MI300X", cu_count=304, num_xcc=8, device_id=29857),
    "gfx950": SynthDevice("gfx950", "MI350X", cu_count=256, num_xcc=8, device_id=30112),
}


def _field(value: object) -> str:
    """rocprofv3 CSV quoting: strings double-quoted, numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if isinstance(value, float):
        return f"{value:f}"
    return str(value)


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = [",".join(_field(name) for name in header)]
    lines.extend(",".join(_field(value) for value in row) for row in rows)
    return "\n".join(lines) + "\n"


def counter_value_text(value: float) -> str:
    """Counter_Value as rocprofv3 prints it: 0.00000000e+00 for zero, %f otherwise."""
    return "0.00000000e+00" if value == 0 else f"{value:f}"


@dataclass(frozen=True)
class DispatchRow:
    """One kernel_trace.csv row."""

    dispatch_id: int
    kernel_id: int
    kernel_name: str
    start_ns: int
    end_ns: int
    lds_bytes: int
    scratch_bytes: int
    vgpr_count: int
    accum_vgpr_count: int
    sgpr_count: int
    workgroup: tuple[int, int, int]
    grid: tuple[int, int, int]
    agent: int = 1
    queue_id: int = 1
    thread_id: int = 424242
    correlation_id: int | None = None


def csv_register_counts(arch: str, arch_vgprs: int, accum_vgprs: int) -> tuple[int, int]:
    """(VGPR_Count, Accum_VGPR_Count) as rocprofv3 prints them (docs/rocprof-outputs.md §6.1).

    gfx90a/gfx94x split arch and accumulation VGPRs; other targets, gfx950 included, print half
    of the total allocation as VGPR_Count and 0 accumulation VGPRs.
    """
    if arch == "gfx90a" or arch.startswith("gfx94"):
        return arch_vgprs, accum_vgprs
    return (arch_vgprs + accum_vgprs) // 2 if accum_vgprs else arch_vgprs, 0


def kernel_trace_csv(rows: Iterable[DispatchRow]) -> str:
    out = []
    for row in rows:
        out.append((
            "KERNEL_DISPATCH", f"Agent {row.agent}", row.queue_id, 0, row.thread_id,
            row.dispatch_id, row.kernel_id, row.kernel_name,
            row.correlation_id if row.correlation_id is not None else row.dispatch_id,
            row.start_ns, row.end_ns, row.lds_bytes, row.scratch_bytes, row.vgpr_count,
            row.accum_vgpr_count, row.sgpr_count, *row.workgroup, *row.grid,
        ))
    return csv_text(KERNEL_TRACE_HEADER, out)


def stats_csv(groups: dict[str, list[int]]) -> str:
    """kernel_stats / domain_stats text from {name: [durations ns]}; sorted by total, descending."""
    grand_total = sum(sum(durations) for durations in groups.values()) or 1
    ordered = sorted(groups.items(), key=lambda item: (-sum(item[1]), item[0]))
    lines = [",".join(_field(name) for name in STATS_HEADER)]
    for name, durations in ordered:
        calls = len(durations)
        total = sum(durations)
        mean = total / calls
        std = math.sqrt(sum((d - mean) ** 2 for d in durations) / (calls - 1)) if calls > 1 else 0.0
        std_text = "0.00000000e+00" if std == 0 else f"{std:f}"
        lines.append(f"{_field(name)},{calls},{total},{mean:f},{100.0 * total / grand_total:.2f},"
                     f"{min(durations)},{max(durations)},{std_text}")
    return "\n".join(lines) + "\n"


def agent_info_csv(arch: str) -> str:
    """One CPU agent (node 0) and one GPU agent (node 1, i.e. "Agent 1") of the given target."""
    dev = SYNTH_DEVICES[arch]
    spec = dev.arch
    cpu_name = "SYNTHETIC 16-Core Processor"
    cpu = (0, 0, "CPU", 16, 0, 0, 0, 0, 0, 0, 0, 0, 1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
           0, 0, 0, 3000, 0, 0, 0, 0, 0, 0, 25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
           cpu_name, "CPU", cpu_name, "")
    cu_per_xcc = dev.cu_count // dev.num_xcc
    gpu = (1, 1, "GPU", 0, dev.cu_count * spec.simds_per_cu, 0, 2147487744,
           spec.max_waves_per_simd, dev.lds_kb, 0, 64, spec.wave_size, dev.num_xcc, dev.cu_count,
           4 * dev.num_xcc, 4 * dev.num_xcc, 1, max(cu_per_xcc // 4, 1), spec.simds_per_cu, 32,
           spec.gfx_target_version, 4098, dev.device_id, 49408, 0, 128, 2, 14, 8, 24, 3000,
           dev.max_clock_mhz, 12, 30, 2755109504, max(cu_per_xcc // 4, 1),
           spec.max_waves_per_cu, dev.family_id, 1024, 4294967295, 0, 0, 12605,
           1024, 1024, 1024, 2147483647, 65535, 65535, dev.gfx, "AMD", dev.product_name,
           "ip discovery")
    return csv_text(AGENT_INFO_HEADER, [cpu, gpu])


@dataclass(frozen=True)
class CounterRow:
    """One counter_collection.csv row (one dispatch × one counter)."""

    dispatch: DispatchRow
    counter_name: str
    value: float
    process_id: int = 424242


def counter_collection_csv(rows: Iterable[CounterRow]) -> str:
    lines = [",".join(_field(name) for name in COUNTER_COLLECTION_HEADER)]
    for row in rows:
        d = row.dispatch
        fields = (
            d.correlation_id if d.correlation_id is not None else d.dispatch_id, d.dispatch_id,
            f"Agent {d.agent}", d.queue_id, row.process_id, d.thread_id,
            d.grid[0] * d.grid[1] * d.grid[2], d.kernel_id, d.kernel_name,
            d.workgroup[0] * d.workgroup[1] * d.workgroup[2], d.lds_bytes, d.scratch_bytes,
            d.vgpr_count, d.accum_vgpr_count, d.sgpr_count, row.counter_name,
        )
        lines.append(",".join(_field(v) for v in fields) + ","
                     + counter_value_text(row.value) + f",{d.start_ns},{d.end_ns}")
    return "\n".join(lines) + "\n"


def att_stats_csv(rows: Iterable[Sequence[object]], *, develop: bool = False) -> str:
    """stats_ui_output_agent_<h>_dispatch_<d>.csv from prepared rows (already sorted)."""
    return csv_text(ATT_STATS_HEADER_DEVELOP if develop else ATT_STATS_HEADER, rows)
