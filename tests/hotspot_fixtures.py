"""Small hand-built dispatch dirs for the hotspot tests: every code.json variant and bad input.

Rows are written directly (no generator) so each test states exactly what the file holds.
Expected values in tests are computed from these rows, never from the program's output.
"""

from __future__ import annotations

import json
from pathlib import Path

V3_HEADER = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
V3_DEVELOP_HEADER = V3_HEADER + ", ServiceType, Issued, Stalled, NotIssuedReasons"
PCS_HEADER = ["ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall", "Idle",
              "PC_Issued", "PC_Stalled", "Stall_Reasons"]
KERNEL_FILE = "/work/kernels/demo_kernel.py"
KERNEL_SOURCE = "\n".join(
    [
        "import flydsl as flyc",          # 1
        "",                               # 2
        "@flyc.kernel",                   # 3  entry/decorator line
        "def demo_kernel(a, b, c):",      # 4
        "    x = load(a)",                # 5
        "    y = load(b)",                # 6
        "    z = mma(x, y)",              # 7
        "    store(c, z)",                # 8
        "",                               # 9
    ]
) + "\n"


def label(index: int, symbol: str, demangled: str = "", vaddr: int = 4096) -> list:
    return [f"; {symbol}", 0, index, demangled, 2, vaddr, 0, 0, 0, 0]


def v3(index: int, asm: str, source: str, hits: int, latency: int, stall: int, idle: int, vaddr: int | None = None) -> list:
    return [asm, 0, index, source, 2, vaddr if vaddr is not None else 4096 + 4 * index, hits, latency, stall, idle]


def demo_rows() -> list[list]:
    """One kernel: prologue + epilogue glue on the decorator line (3), real work on lines 5-8."""
    f = KERNEL_FILE
    return [
        label(0, "demo_kernel_0"),
        v3(1, "s_load_dwordx4 s[4:7], s[0:1], 0x0", f"{f}:3", 8, 400, 300, 50),
        v3(2, "s_waitcnt lgkmcnt(0)", f"{f}:3", 8, 900, 880, 0),
        v3(3, "v_lshlrev_b32_e32 v1, 2, v0", f"{f}:3", 8, 40, 0, 8),
        v3(4, "buffer_load_dwordx4 v[4:7], v1, s[4:7], 0 offen", f"{f}:5", 8, 600, 500, 20),
        v3(5, "global_load_dwordx4 v[8:11], v[2:3], off", f"helper.py:20 -> {f}:6", 8, 500, 420, 10),
        v3(6, "s_waitcnt vmcnt(0) lgkmcnt(0)", f"{f}:7", 8, 5000, 4900, 0),
        v3(7, "v_mfma_f32_16x16x16_f16 a[0:3], v[4:5], v[8:9], a[0:3]", f"{f}:7", 8, 256, 100, 4),
        v3(8, "v_mfma_f32_16x16x16_f16 a[4:7], v[6:7], v[10:11], a[4:7]", f"{f}:7", 8, 256, 120, 0),
        v3(9, "global_store_dwordx4 v[2:3], v[12:15], off", f"helper.py:30 -> {f}:8", 8, 300, 200, 6),
        v3(10, "s_barrier", f"{f}:3", 8, 100, 90, 0),
        v3(11, "s_cbranch_scc1 BB0_2", f"{f}:3", 0, 0, 0, 0),
        v3(12, "s_endpgm", f"{f}:3", 8, 32, 0, 4),
    ]


def write_json(path: Path, obj: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return path


def make_dispatch_dir(
    root: Path,
    rows: list[list] | None = None,
    *,
    header: object = V3_HEADER,
    name: str = "ui_output_agent_1234_dispatch_7",
    snapshots: bool = True,
    extra_document: dict | None = None,
) -> Path:
    """A v3 dispatch dir with code.json (+ snapshots.json and one source copy)."""
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    document: dict = {"code": demo_rows() if rows is None else rows, "version": "3.0.0"}
    if header is not None:
        document["header"] = header
    document.update(extra_document or {})
    write_json(directory / "code.json", document)
    if snapshots:
        write_json(directory / "snapshots.json", {"/": {"work": {"kernels": {"demo_kernel.py": "source_0_demo_kernel.py"}}}})
        (directory / "source_0_demo_kernel.py").write_text(KERNEL_SOURCE)
    return directory


def make_develop_dir(root: Path) -> Path:
    """14-column develop-tree variant: extra ServiceType/Issued/Stalled/NotIssuedReasons columns."""
    rows = [row + [0, 0, 0, [[0, 0]]] for row in demo_rows()]
    return make_dispatch_dir(root, rows, header=V3_DEVELOP_HEADER)


def pcs_row(index: int, asm: str, source: str, issued: int, stalled: int, reasons: list[int]) -> list:
    return [asm, 0, index, source, 2, 4096 + 4 * index, 0, 0, 0, 0, issued, stalled, reasons]


def make_pcsampling_dir(root: Path) -> Path:
    f = "/src/gemm.cpp"
    rows = [
        ["; _Z4gemmPKfS0_Pf", 0, 0, "gemm(float const*, float const*, float*)", 2, 4096, 0, 0, 0, 0, 0, 0, [0] * 10],
        pcs_row(1, "s_load_dwordx4 s[12:15], s[0:1], 0x28", f"{f}:10", 1, 2, [0, 2, 0, 0, 0, 0, 0, 0, 0, 0]),
        pcs_row(2, "global_load_dwordx4 v[0:3], v[4:5], off", f"{f}:12", 5, 9, [0, 0, 0, 0, 0, 0, 4, 5, 0, 0]),
        pcs_row(3, "s_waitcnt vmcnt(0)", f"{f}:13", 0, 30, [0, 0, 0, 30, 0, 0, 0, 0, 0, 0]),
        pcs_row(4, "v_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], v[0:3]", f"{f}:13", 12, 7, [0, 0, 7, 0, 0, 0, 0, 0, 0, 0]),
        pcs_row(5, "s_endpgm", f"{f}:20", 1, 0, [0] * 10),
    ]
    directory = root / "pcsampling"
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / "code.json", {"code": rows, "header": PCS_HEADER, "version": "3.0.0"})
    write_json(directory / "filenames.json", {"gfxip": 9, "gfxv": "vega", "pc_sampling": True,
                                              "thread_trace": False, "wave_filenames": None, "version": "3.0.0"})
    return directory


def legacy_row(position: int, asm: str, inst_type: int, hits: int, cycles: int, source: str = "") -> list:
    return [asm, inst_type, position, source, position - 1, position - 1, hits, cycles]


def make_legacy_dir(root: Path, empty: bool = False) -> Path:
    rows = [["; Begin ATT ASM", 100, 0, "", 0, 0, 0, 0]]
    if not empty:
        rows += [
            ["; _Z6kernelPf", 100, 0, "", 0, 0, 0, 0],
            legacy_row(2, "s_load_dwordx2 s[0:1], s[4:5], 0x0", 1, 4, 100),
            legacy_row(3, "s_waitcnt lgkmcnt(0)", 9, 4, 700),
            legacy_row(4, "global_load_dword v1, v[0:1], off", 4, 4, 300),
            legacy_row(5, "s_waitcnt vmcnt(0)", 9, 4, 2000),
            legacy_row(6, "s_endpgm", 11, 4, 16),
        ]
    directory = root / ("kernel_v0_ui" if empty else "kernel_v1_ui")
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / "code.json", {"code": rows, "top_n": [[3, 4, 0, 2000]]})
    return directory


def make_multi_kernel_dir(root: Path) -> Path:
    """A framework kernel followed by the traced one (observed in real PyTorch captures)."""
    rows = [
        label(0, "_ZN2at6native10fill_kernelEv", "at::native::fill_kernel()"),
        v3(1, "s_load_dword s0, s[4:5], 0x0", "/src/fill.cu:5", 2, 50, 20, 0),
        v3(2, "s_endpgm", "/src/fill.cu:9", 2, 10, 0, 0),
    ] + [
        # the second kernel's label has a non-zero LineNumber (only the first one has 0)
        [row[0], row[1], row[2] + 3, *row[3:]] for row in demo_rows()
    ]
    return make_dispatch_dir(root, rows, name="ui_output_agent_1234_dispatch_9")


def kernel_trace_csv(path: Path, rows: list[dict]) -> Path:
    columns = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
               "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
               "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
               "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
    defaults = {"Kind": "KERNEL_DISPATCH", "Agent_Id": "Agent 2", "Queue_Id": 1, "Stream_Id": 0, "Thread_Id": 1,
                "Kernel_Id": 5, "Correlation_Id": 1, "Start_Timestamp": 1000, "End_Timestamp": 9000,
                "LDS_Block_Size": 16384, "Scratch_Size": 0, "VGPR_Count": 64, "Accum_VGPR_Count": 8,
                "SGPR_Count": 32, "Workgroup_Size_X": 256, "Workgroup_Size_Y": 1, "Workgroup_Size_Z": 1,
                "Grid_Size_X": 65536, "Grid_Size_Y": 1, "Grid_Size_Z": 1}
    lines = [",".join(f'"{c}"' for c in columns)]
    for row in rows:
        merged = {**defaults, **row}
        lines.append(",".join(f'"{merged[c]}"' if isinstance(merged[c], str) else str(merged[c]) for c in columns))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def agent_info_csv(path: Path, gpus: list[tuple[int, str]]) -> Path:
    """agent_info.csv with one CPU row and the given (Logical_Node_Id, Name) GPU rows (subset of columns)."""
    header = '"Node_Id","Logical_Node_Id","Agent_Type","Simd_Per_Cu","Max_Waves_Per_Simd","Wave_Front_Size","Cu_Count","Lds_Size_In_Kb","Gfx_Target_Version","Max_Engine_Clk_Fcompute","Name","Product_Name"'
    lines = [header, '0,0,"CPU",0,0,0,64,0,0,3300,"AMD EPYC","AMD EPYC"']
    for node, name in gpus:
        lines.append(f'{node},{node},"GPU",4,8,64,256,160,90500,2200,"{name}","AMD Instinct"')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
