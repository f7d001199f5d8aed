"""Synthetic rocprofv3 capture generator (tests, the bundled example, the rocprofv3 test double, benches).

Everything it writes is SYNTHETIC but follows the real layouts of docs/rocprof-outputs.md
(§3, §6, §8): file names, CSV headers, JSON key order, row layouts and the §8.10
aggregation invariant (code.json Hit/Latency/Stall/Idle are computed from the wave files).

API::

    spec = demo_gemm(arch="gfx942")                  # or demo_vec_add(), demo_spill(), demo_large(scale)
    waves = simulate(spec)                           # list[WaveRecord], deterministic per spec.seed
    d = write_dispatch_dir(parent, spec, variant="v3", agent_handle=20001, dispatch_id=1,
                           with_waves=True, with_source=True, with_realtime=True)
    # -> parent/ui_output_agent_20001_dispatch_1/ + parent/stats_ui_output_agent_20001_dispatch_1.csv
    #    variants: "v3" | "v3-develop" | "pcsampling" | "legacy" | "empty" | "no-source"
    dirs = write_att_run(out_dir, [spec], output_file="att", calls=3, traced_iteration=1)
    # -> ui_output_* dirs, stats_*.csv, att_kernel_trace.csv, att_agent_info.csv, *.att, *.out
    paths = write_discovery_run(out_dir, [spec, ...], output_file="discover", calls=5)
    # -> discover_kernel_stats.csv, _kernel_trace.csv, _agent_info.csv, _domain_stats.csv
    write_counter_collection(path, counter_rows(spec, dispatch_id, {"TCC_HIT_sum": 1.0e6}))
    is_synthetic_dispatch(dispatch_dir)  # True for dirs written here (/synthetic/ sources, placeholder .att)

Build your own kernels with KernelSpec / SynthInstruction / LoopRegion / WaveLayout /
KernelResources (see kerneltrace/synth/spec.py and docs/synthetic-captures.md).
"""

from kerneltrace.synth.categories import decoder_category
from kerneltrace.synth.csvs import SYNTH_DEVICES, CounterRow, DispatchRow, SynthDevice
from kerneltrace.synth.runs import (
    counter_rows,
    dispatch_row,
    is_synthetic_dispatch,
    write_att_run,
    write_counter_collection,
    write_discovery_run,
)
from kerneltrace.synth.simulate import WaveRecord, aggregate, simulate
from kerneltrace.synth.spec import (
    GEMM_LINES,
    ExitGate,
    KernelResources,
    KernelSpec,
    LoopRegion,
    SynthInstruction,
    WaveLayout,
    demo_gemm,
    demo_large,
    demo_vec_add,
)
from kerneltrace.synth.spill import SPILL_LINES, demo_spill
from kerneltrace.synth.work_split import WORK_SPLIT_LINES, demo_work_split
from kerneltrace.synth.writers import VARIANTS, dispatch_dir_name, write_dispatch_dir

# ready-made kernels by name (the rocprofv3 double's ROCPROF_DOUBLE_KERNELS)
READY_MADE = {"demo_gemm": demo_gemm, "demo_vec_add": demo_vec_add, "demo_spill": demo_spill}

__all__ = [
    "GEMM_LINES",
    "SPILL_LINES",
    "WORK_SPLIT_LINES",
    "READY_MADE",
    "SYNTH_DEVICES",
    "VARIANTS",
    "CounterRow",
    "DispatchRow",
    "ExitGate",
    "KernelResources",
    "KernelSpec",
    "LoopRegion",
    "SynthDevice",
    "SynthInstruction",
    "WaveLayout",
    "WaveRecord",
    "aggregate",
    "counter_rows",
    "decoder_category",
    "demo_gemm",
    "demo_large",
    "demo_spill",
    "demo_vec_add",
    "demo_work_split",
    "dispatch_dir_name",
    "dispatch_row",
    "is_synthetic_dispatch",
    "simulate",
    "write_att_run",
    "write_counter_collection",
    "write_discovery_run",
    "write_dispatch_dir",
]
