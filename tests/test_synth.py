"""Tests for the synthetic capture generator (kerneltrace.synth) and its CLI."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.errors import InputError
from kerneltrace.synth import (
    GEMM_LINES,
    VARIANTS,
    counter_rows,
    demo_gemm,
    demo_large,
    demo_vec_add,
    simulate,
    write_att_run,
    write_counter_collection,
    write_discovery_run,
    write_dispatch_dir,
)

REPO = Path(__file__).resolve().parent.parent
WAVE_RE = re.compile(r"^se(\d+)_sm(\d+)_sl(\d+)_wv(\d+)\.json$")
DISPATCH_RE = re.compile(r"^ui_output_agent_(\d+)_dispatch_(\d+)")

# Headers exactly as rocprofv3 prints them (docs/rocprof-outputs.md §6, §8.3, §8.4, §8.12).
DOC_KERNEL_TRACE = '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
DOC_STATS = '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"'
DOC_COUNTERS = '"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"'
DOC_AGENT_INFO = '"Node_Id","Logical_Node_Id","Agent_Type","Cpu_Cores_Count","Simd_Count","Cpu_Core_Id_Base","Simd_Id_Base","Max_Waves_Per_Simd","Lds_Size_In_Kb","Gds_Size_In_Kb","Num_Gws","Wave_Front_Size","Num_Xcc","Cu_Count","Array_Count","Num_Shader_Banks","Simd_Arrays_Per_Engine","Cu_Per_Simd_Array","Simd_Per_Cu","Max_Slots_Scratch_Cu","Gfx_Target_Version","Vendor_Id","Device_Id","Location_Id","Domain","Drm_Render_Minor","Num_Sdma_Engines","Num_Sdma_Xgmi_Engines","Num_Sdma_Queues_Per_Engine","Num_Cp_Queues","Max_Engine_Clk_Ccompute","Max_Engine_Clk_Fcompute","Sdma_Fw_Version","Fw_Version","Capability","Cu_Per_Engine","Max_Waves_Per_Cu","Family_Id","Workgroup_Max_Size","Grid_Max_Size","Local_Mem_Size","Hive_Id","Gpu_Id","Workgroup_Max_Dim_X","Workgroup_Max_Dim_Y","Workgroup_Max_Dim_Z","Grid_Max_Dim_X","Grid_Max_Dim_Y","Grid_Max_Dim_Z","Name","Vendor_Name","Product_Name","Model_Name"'
DOC_ATT_STATS = '"CodeObj","Vaddr","Instruction","Hitcount","Latency","Stall","Idle","Source"'
DOC_V3_HEADER = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
DOC_V3_DEVELOP = DOC_V3_HEADER + ", ServiceType, Issued, Stalled, NotIssuedReasons"
DOC_PCS_HEADER = ["ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency",
                  "Stall", "Idle", "PC_Issued", "PC_Stalled", "Stall_Reasons"]


def small_gemm(arch: str = "gfx942", seed: int = 0):
    return demo_gemm(arch, iterations=3, shader_engines=1, seed=seed)


def recompute_from_wave_files(dispatch: Path, rows: int) -> list[list[int]]:
    """The §8.10 aggregation, read back from the files on disk."""
    totals = [[0, 0, 0, 0] for _ in range(rows)]
    files = sorted(p for p in dispatch.iterdir() if WAVE_RE.match(p.name))
    assert files, "no wave files written"
    for path in files:
        wave = json.loads(path.read_text())["wave"]
        prev_end = wave["begin"]
        for time, _cat, stall, dur, line in wave["instructions"]:
            totals[line][0] += 1
            totals[line][1] += dur
            totals[line][2] += stall
            totals[line][3] += max(time - prev_end, 0)
            prev_end = max(prev_end, time + dur)
    return totals


@pytest.mark.parametrize("variant", ["v3", "v3-develop", "no-source"])
def test_aggregation_invariant_v3(tmp_path, variant):
    d = write_dispatch_dir(tmp_path, small_gemm(), variant)
    code = json.loads((d / "code.json").read_text())["code"]
    recomputed = recompute_from_wave_files(d, len(code))
    for index, row in enumerate(code):
        assert row[2] == index  # LineNumber == row index
        assert row[6:10] == recomputed[index], (index, row)
    assert any(row[6] == 0 for row in code[1:]), "expected never-executed rows (Hit 0)"
    assert sum(row[8] for row in code) > 0


def test_aggregation_invariant_legacy(tmp_path):
    d = write_dispatch_dir(tmp_path, small_gemm(), "legacy")
    doc = json.loads((d / "code.json").read_text())
    assert set(doc) == {"code", "top_n"}
    code = doc["code"]
    assert code[0][:2] == ["; Begin ATT ASM", 100] and code[1][1] == 100
    recomputed = recompute_from_wave_files(d, len(code))
    for pos, row in enumerate(code[2:], start=2):
        assert len(row) == 8
        assert row[2] == pos and row[4] == row[5] == pos - 1
        assert row[6] == recomputed[pos][0] and row[7] == recomputed[pos][1]
    assert (d / "se0_info.json").exists() and (d / "live.json").exists()
    fn = json.loads((d / "filenames.json").read_text())
    assert set(fn) == {"wave_filenames", "se_filenames", "global_begin_time", "gfxv"}


def test_waves_are_internally_consistent():
    for wave in simulate(small_gemm()):
        assert sum(d for _s, d in wave.timeline) == wave.end - wave.begin
        prev_end = wave.begin
        for time, _cat, stall, dur, _line in wave.instructions:
            assert 0 <= stall <= dur and time >= prev_end
            prev_end = time + dur
        assert prev_end == wave.end
        waited_lines = {w for w, _ in wave.waitcnt}
        assert waited_lines <= {line for *_r, line in wave.instructions}


def test_waitcnt_names_the_planted_producers():
    spec = small_gemm()
    wave = simulate(spec)[0]
    asm = {i + 1: ins.asm for i, ins in enumerate(spec.instructions)}
    for wait_line, producers in wave.waitcnt:
        assert asm[wait_line].startswith("s_waitcnt")
        for producer, zero in producers:
            assert zero == 0 and producer < wait_line
            assert asm[producer].split("_")[0] in ("buffer", "ds", "s", "global")
    # the wait behind the B burst drains exactly the four burst loads
    burst_wait = next(p for w, p in wave.waitcnt
                      if spec.instructions[w - 1].line == GEMM_LINES["b_load"])
    assert len(burst_wait) == 4


def test_determinism_same_seed_same_bytes(tmp_path):
    a = write_dispatch_dir(tmp_path / "a", small_gemm(seed=5))
    b = write_dispatch_dir(tmp_path / "b", small_gemm(seed=5))
    c = write_dispatch_dir(tmp_path / "c", small_gemm(seed=6))
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / "code.json").read_bytes() != (c / "code.json").read_bytes()


def test_v3_file_formats(tmp_path):
    d = write_dispatch_dir(tmp_path, small_gemm(), "v3", agent_handle=777, dispatch_id=42)
    assert DISPATCH_RE.match(d.name).groups() == ("777", "42")
    text = (d / "code.json").read_text()
    assert text.startswith('{"code":[["; demo_gemm_kernel_0",0,0,')
    doc = json.loads(text)
    assert list(doc) == ["code", "header", "version"]
    assert doc["header"] == DOC_V3_HEADER and doc["version"] == "3.0.0"
    assert all(len(row) == 10 for row in doc["code"])
    vaddrs = [row[5] for row in doc["code"]]
    assert vaddrs == sorted(vaddrs) and vaddrs[0] == vaddrs[1]
    fn = json.loads((d / "filenames.json").read_text())
    assert (fn["gfxip"], fn["gfxv"], fn["version"]) == (9, "vega", "3.0.0")
    listed = [entry for simd in fn["wave_filenames"].values() for slot in simd.values()
              for wvs in slot.values() for entry in wvs.values()]
    on_disk = {p.name for p in d.iterdir() if WAVE_RE.match(p.name)}
    assert {e[0] for e in listed} == on_disk
    for name, begin, end in listed:
        wave_doc = json.loads((d / name).read_text())
        assert list(wave_doc) == ["duration", "name", "num_insts", "num_stitched", "wave"]
        assert (wave_doc["wave"]["begin"], wave_doc["wave"]["end"]) == (begin, end)
        assert wave_doc["duration"] == end - begin
        assert wave_doc["num_insts"] == len(wave_doc["wave"]["instructions"])
    for k in (1, 2, 3, 4):
        ws = json.loads((d / f"wstates{k}.json").read_text())
        assert ws["name"] == f"wstates{k}.json" and len(ws["time"]) == len(ws["state"])
        assert ws["time"] == sorted(set(ws["time"])) and min(ws["state"]) >= 0
    occ = json.loads((d / "occupancy.json").read_text())
    assert occ["dispatches"]["0"] == "0 / 0x0" and all(len(e) == 6 for e in occ["0"])
    rt = json.loads((d / "realtime.json").read_text())
    (g0, r0), (g1, r1) = rt["SE0"]
    f_gfx_mhz = (g1 - g0) / ((r1 - r0) / rt["metadata"]["frequency"]) / 1e6
    assert abs(f_gfx_mhz - 2100) < 5  # MI300X shader clock
    snaps = json.loads((d / "snapshots.json").read_text())
    assert snaps == {"/": {"synthetic": {"kernels": {"demo_gemm.py": "source_0_demo_gemm.py"}}}}
    source_lines = (d / "source_0_demo_gemm.py").read_text().splitlines()
    assert source_lines[GEMM_LINES["decorator"] - 1].startswith("@flyc.kernel")
    assert "buffer_load(a_rsrc" in source_lines[GEMM_LINES["a_load"] - 1]
    assert (tmp_path / f"stats_{d.name}.csv").exists()


def test_stats_csv_matches_code_json(tmp_path):
    d = write_dispatch_dir(tmp_path, small_gemm(), "v3")
    text = (tmp_path / f"stats_{d.name}.csv").read_text()
    assert text.splitlines()[0] == DOC_ATT_STATS
    rows = list(csv.DictReader(text.splitlines()))
    code = json.loads((d / "code.json").read_text())["code"]
    assert [(int(r["Vaddr"]), int(r["Hitcount"]), int(r["Stall"])) for r in rows] == \
        [(c[5], c[6], c[8]) for c in code]


def test_other_variants(tmp_path):
    pcs = write_dispatch_dir(tmp_path / "p", small_gemm(), "pcsampling")
    doc = json.loads((pcs / "code.json").read_text())
    assert doc["header"] == DOC_PCS_HEADER
    assert all(len(r) == 13 and len(r[12]) == 10 and r[6:10] == [0, 0, 0, 0] for r in doc["code"])
    assert sum(r[11] for r in doc["code"]) > 0 and all(sum(r[12]) == r[11] for r in doc["code"])
    fn = json.loads((pcs / "filenames.json").read_text())
    assert fn["pc_sampling"] is True and fn["wave_filenames"] is None
    assert not any(WAVE_RE.match(p.name) for p in pcs.iterdir())

    empty = write_dispatch_dir(tmp_path / "e", small_gemm(), "empty")
    assert json.loads((empty / "code.json").read_text())["code"] is None
    assert (tmp_path / "e" / f"stats_{empty.name}.csv").read_text().strip() == DOC_ATT_STATS

    dev = write_dispatch_dir(tmp_path / "d", small_gemm(), "v3-develop")
    doc = json.loads((dev / "code.json").read_text())
    assert doc["header"] == DOC_V3_DEVELOP and all(len(r) == 14 for r in doc["code"])

    nosrc = write_dispatch_dir(tmp_path / "n", small_gemm(), "no-source")
    assert all(r[3] == "" for r in json.loads((nosrc / "code.json").read_text())["code"])
    assert not (nosrc / "snapshots.json").exists()

    with pytest.raises(InputError):
        write_dispatch_dir(tmp_path, small_gemm(), "bogus")
    assert set(VARIANTS) == {"v3", "v3-develop", "pcsampling", "legacy", "empty", "no-source"}


def test_without_wave_files_code_json_still_populated(tmp_path):
    d = write_dispatch_dir(tmp_path, small_gemm(), with_waves=False, with_realtime=False)
    assert not any(WAVE_RE.match(p.name) for p in d.iterdir())
    assert not (d / "realtime.json").exists()
    assert sum(r[6] for r in json.loads((d / "code.json").read_text())["code"]) > 0


def test_att_run_layout(tmp_path):
    dirs = write_att_run(tmp_path, [small_gemm("gfx950"), demo_vec_add("gfx950")],
                         output_file="att", calls=3, traced_iteration=2)
    names = {p.name for p in tmp_path.iterdir()}
    trace = list(csv.DictReader((tmp_path / "att_kernel_trace.csv").read_text().splitlines()))
    assert (tmp_path / "att_kernel_trace.csv").read_text().splitlines()[0] == DOC_KERNEL_TRACE
    assert len(trace) == 6
    traced_ids = {int(DISPATCH_RE.match(d.name).group(2)) for d in dirs}
    # the second call of each kernel is traced: dispatch ids 3 and 4 (calls interleave)
    assert traced_ids == {3, 4}
    for d in dirs:
        assert f"stats_{d.name}.csv" in names
        assert f"att_20001_shader_engine_0_{DISPATCH_RE.match(d.name).group(2)}.att" in names
    assert {"att_gfx950_code_object_id_2.out", "att_gfx950_code_object_id_3.out"} <= names
    gemm = next(r for r in trace if r["Kernel_Name"] == "demo_gemm_kernel_0")
    # gfx950 quirk: half the allocation as VGPR_Count, no accumulation VGPRs
    assert (gemm["VGPR_Count"], gemm["Accum_VGPR_Count"]) == ("48", "0")
    vec = next(r for r in trace if r["Kernel_Id"] != gemm["Kernel_Id"])
    assert vec["Kernel_Name"] == "vec_add_float(float const*, float const*, float*, int)"
    agents = list(csv.DictReader((tmp_path / "att_agent_info.csv").read_text().splitlines()))
    assert (tmp_path / "att_agent_info.csv").read_text().splitlines()[0] == DOC_AGENT_INFO
    assert len(agents[0]) == 53 and [a["Agent_Type"] for a in agents] == ["CPU", "GPU"]
    gpu = agents[1]
    assert (gpu["Name"], gpu["Gfx_Target_Version"], gpu["Lds_Size_In_Kb"]) == ("gfx950", "90500", "160")
    assert gemm["Agent_Id"] == f"Agent {gpu['Logical_Node_Id']}"


def test_gfx942_register_split(tmp_path):
    write_att_run(tmp_path, [small_gemm("gfx942")], calls=1)
    row = next(csv.DictReader((tmp_path / "att_kernel_trace.csv").read_text().splitlines()))
    assert (row["VGPR_Count"], row["Accum_VGPR_Count"]) == ("64", "32")


def test_discovery_run(tmp_path):
    paths = write_discovery_run(tmp_path, [demo_vec_add(), small_gemm()], calls=4)
    assert {p.name for p in paths.values()} == {
        "discover_kernel_stats.csv", "discover_kernel_trace.csv", "discover_agent_info.csv",
        "discover_domain_stats.csv"}
    stats_text = paths["kernel_stats"].read_text()
    assert stats_text.splitlines()[0] == DOC_STATS
    stats = list(csv.DictReader(stats_text.splitlines()))
    totals = [int(r["TotalDurationNs"]) for r in stats]
    assert totals == sorted(totals, reverse=True) and all(r["Calls"] == "4" for r in stats)
    trace = list(csv.DictReader(paths["kernel_trace"].read_text().splitlines()))
    by_name: dict[str, int] = {}
    for r in trace:
        by_name[r["Kernel_Name"]] = by_name.get(r["Kernel_Name"], 0) + int(r["End_Timestamp"]) - int(r["Start_Timestamp"])
    assert {r["Name"]: int(r["TotalDurationNs"]) for r in stats} == by_name
    assert abs(sum(float(r["Percentage"]) for r in stats) - 100.0) < 0.05
    domain = list(csv.DictReader(paths["domain_stats"].read_text().splitlines()))
    assert domain[0]["Name"] == "KERNEL_DISPATCH" and int(domain[0]["Calls"]) == 8


def test_counter_collection(tmp_path):
    rows = counter_rows(small_gemm(), 7, {"TCC_HIT_sum": 1500.0, "TCC_MISS_sum": 0.0})
    path = write_counter_collection(tmp_path / "pmc_counter_collection.csv", rows)
    lines = path.read_text().splitlines()
    assert lines[0] == DOC_COUNTERS
    parsed = list(csv.DictReader(lines))
    assert [(r["Dispatch_Id"], r["Counter_Name"]) for r in parsed] == [("7", "TCC_HIT_sum"), ("7", "TCC_MISS_sum")]
    assert ",1500.000000," in lines[1] and ",0.00000000e+00," in lines[2]
    assert parsed[0]["Grid_Size"] == "77824" and parsed[0]["Workgroup_Size"] == "256"


def test_bad_arch_and_scale():
    with pytest.raises(InputError):
        demo_gemm("gfx1100")
    with pytest.raises(InputError):
        demo_large(0)


def test_demo_large_grows_with_scale():
    assert demo_large(2).waves.total_waves == 2 * demo_large(1).waves.total_waves


def test_cli_bad_input_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "make_synthetic_capture.py"),
                           "--out", str(tmp_path), "--scale", "0"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and "Traceback" not in proc.stderr


def test_committed_example_is_reproducible(tmp_path):
    example = REPO / "examples" / "synthetic_gemm"
    if not example.is_dir():
        pytest.fail("examples/synthetic_gemm is missing; regenerate it (see examples/README.md)")
    readme = (REPO / "examples" / "README.md").read_text()
    command = re.search(r"^python (scripts/make_synthetic_capture\.py [^\n`]*)$", readme, re.M)
    assert command, "examples/README.md must show the exact regeneration command"
    argv = command.group(1).split()
    out_index = argv.index("--out") + 1
    assert argv[out_index] == "examples/synthetic_gemm"
    argv[out_index] = str(tmp_path / "regen")
    subprocess.run([sys.executable, str(REPO / argv[0]), *argv[1:]], check=True,
                   capture_output=True)
    committed = sorted(p.relative_to(example) for p in example.rglob("*") if p.is_file())
    regenerated = sorted(p.relative_to(tmp_path / "regen")
                         for p in (tmp_path / "regen").rglob("*") if p.is_file())
    assert committed == regenerated
    for rel in committed:
        assert (example / rel).read_bytes() == (tmp_path / "regen" / rel).read_bytes(), rel
    assert sum((example / rel).stat().st_size for rel in committed) < 1_500_000


def test_is_synthetic_dispatch(tmp_path, captures):
    from kerneltrace.synth import is_synthetic_dispatch

    dirs = write_att_run(tmp_path / "run", [small_gemm()], with_source=False)
    assert is_synthetic_dispatch(dirs[0])
    assert is_synthetic_dispatch(write_dispatch_dir(tmp_path / "one", small_gemm()))
    real = next(captures.rglob("ui_output_agent_*_dispatch_*"))
    assert not is_synthetic_dispatch(real)


def test_planted_stall_on_a_wait_adds_up():
    import dataclasses

    spec = demo_vec_add()
    wait_index = next(i for i, ins in enumerate(spec.instructions) if ins.asm.startswith("s_waitcnt vmcnt"))
    base = simulate(spec)
    instructions = list(spec.instructions)
    instructions[wait_index] = dataclasses.replace(instructions[wait_index], stall_cycles=500)
    planted = simulate(dataclasses.replace(spec, instructions=tuple(instructions)))
    line = wait_index + 1

    def wait_stall(waves):
        return sum(s for w in waves for _t, _c, s, _d, ln in w.instructions if ln == line)

    assert wait_stall(planted) - wait_stall(base) == 500 * len(base)


RUN_NAME_PATTERNS = [
    re.compile(r"^ui_output_agent_\d+_dispatch_\d+$"),
    re.compile(r"^stats_ui_output_agent_\d+_dispatch_\d+\.csv$"),
    re.compile(r"^att_\d+_shader_engine_\d+_\d+\.att$"),
    re.compile(r"^att_gfx9[0-9a-f]+_code_object_id_\d+\.out$"),
    re.compile(r"^att_(kernel_trace|agent_info)\.csv$"),
]
DISPATCH_FILE_PATTERNS = [
    WAVE_RE,
    re.compile(r"^(code|filenames|occupancy|realtime|snapshots)\.json$"),
    re.compile(r"^wstates[1-4]\.json$"),
    re.compile(r"^source_\d+_.+$"),
]


def test_every_written_name_matches_a_documented_pattern(tmp_path):
    dirs = write_att_run(tmp_path, [small_gemm(), demo_vec_add()])
    for path in tmp_path.iterdir():
        assert any(p.match(path.name) for p in RUN_NAME_PATTERNS), path.name
    for d in dirs:
        for path in d.iterdir():
            assert any(p.match(path.name) for p in DISPATCH_FILE_PATTERNS), path.name


def test_invariant_holds_for_arbitrary_specs(tmp_path_factory):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kerneltrace.synth import KernelSpec, LoopRegion, SynthInstruction, WaveLayout

    asm_pool = ["s_load_dword s2, s[0:1], 0x0", "global_load_dword v1, v0, s[2:3]",
                "ds_read_b32 v2, v0", "s_waitcnt vmcnt(0)", "s_waitcnt lgkmcnt(0)",
                "v_add_f32_e32 v1, v1, v2", "s_barrier", "s_add_u32 s4, s4, 1"]
    instruction = st.builds(SynthInstruction, asm=st.sampled_from(asm_pool),
                            line=st.one_of(st.none(), st.integers(1, 40)),
                            issue_cycles=st.sampled_from([4, 8, 16]),
                            stall_cycles=st.integers(0, 300), latency_cycles=st.integers(0, 900))

    @settings(max_examples=15, deadline=None)
    @given(st.lists(instruction, min_size=2, max_size=12), st.integers(1, 4), st.integers(0, 99))
    def check(body, iterations, seed):
        instructions = (*body, SynthInstruction("s_endpgm"))
        spec = KernelSpec(name="_Z1kv", demangled="k()", arch="gfx90a", instructions=instructions,
                          loop=LoopRegion(0, len(body) - 1, iterations),
                          waves=WaveLayout(shader_engines=1, simds=2, slots=1, waves_per_slot=2),
                          seed=seed)
        d = write_dispatch_dir(tmp_path_factory.mktemp("h"), spec)
        code = json.loads((d / "code.json").read_text())["code"]
        recomputed = recompute_from_wave_files(d, len(code))
        assert [row[6:10] for row in code] == recomputed
        assert all(row[6] == 2 * 2 * iterations for row in code[1:len(body) + 1])

    check()
