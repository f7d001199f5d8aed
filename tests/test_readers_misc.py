"""snapshots.json, kernel_trace/agent_info CSVs, filenames.json and dispatch-dir naming."""

from __future__ import annotations

import os

import pytest
from hotspot_fixtures import agent_info_csv, kernel_trace_csv, make_dispatch_dir, write_json

from kerneltrace.errors import InputError
from kerneltrace.model.dispatchdir import find_dispatch_dirs
from kerneltrace.model.metadata import AGENT_INFO, KERNEL_TRACE, bundle_levels
from kerneltrace.model.naming import parse_dispatch_name
from kerneltrace.readers.csvs import gpu_agents, read_agent_info, read_kernel_trace
from kerneltrace.readers.filenames import read_filenames
from kerneltrace.readers.snapshots import flatten_snapshots, read_snapshots

# --- snapshots -------------------------------------------------------------------------------


def test_flatten_root_key_and_dotdot_components_are_virtual():
    tree = {"/": {"opt": {"rocm": {"..": {"include": {"hip.h": "source_1_hip.h"}}}}, "k.py": "source_0_k.py"}}
    assert flatten_snapshots(tree, "x") == {"/opt/rocm/../include/hip.h": "source_1_hip.h", "/k.py": "source_0_k.py"}


def test_exact_and_unique_suffix_resolution(tmp_path):
    directory = make_dispatch_dir(tmp_path)
    index = read_snapshots(directory)
    local = directory / "source_0_demo_kernel.py"
    assert index.resolve("/work/kernels/demo_kernel.py") == local
    # moved checkout: only the basename (and parent) agree
    assert index.resolve("/home/me/src/kernels/demo_kernel.py") == local
    assert index.resolve("/work/kernels/other.py") is None


def test_ambiguous_basename_is_not_guessed(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    write_json(directory / "snapshots.json", {"/": {"a": {"k.py": "source_0_k.py"}, "b": {"k.py": "source_1_k.py"}}})
    (directory / "source_0_k.py").write_text("a\n")
    (directory / "source_1_k.py").write_text("b\n")
    index = read_snapshots(directory)
    assert index.resolve("/c/k.py") is None
    assert index.resolve("/x/a/k.py") == directory / "source_0_k.py"


def test_missing_copy_is_listed_not_fatal(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    write_json(directory / "snapshots.json", {"/": {"a.h": "source_0_a.h"}})
    index = read_snapshots(directory)
    assert index.files == {} and index.missing == ["/a.h"]


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.py", "sub/../../outside.py"])
def test_snapshot_entries_escaping_the_dir_are_refused(tmp_path, name):
    directory = tmp_path / "d"
    directory.mkdir()
    (tmp_path / "outside.py").write_text("secret\n")
    write_json(directory / "snapshots.json", {"/": {"k.py": name}})
    with pytest.raises(InputError) as info:
        read_snapshots(directory)
    assert "outside the dispatch dir" in str(info.value) and "snapshots.json" in str(info.value)


def test_symlink_escaping_the_dir_is_refused(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    (tmp_path / "outside.py").write_text("secret\n")
    os.symlink(tmp_path / "outside.py", directory / "source_0_k.py")
    write_json(directory / "snapshots.json", {"/": {"k.py": "source_0_k.py"}})
    with pytest.raises(InputError, match="resolves outside"):
        read_snapshots(directory)


def test_non_utf8_source_is_decoded_with_replacement(tmp_path):
    directory = make_dispatch_dir(tmp_path)
    (directory / "source_0_demo_kernel.py").write_bytes(b"x = 1\n# caf\xe9\n")
    index = read_snapshots(directory)
    lines, replaced = index.lines(directory / "source_0_demo_kernel.py")
    assert replaced and lines[1] == "# caf\ufffd"


# --- CSVs ------------------------------------------------------------------------------------


def test_kernel_trace_new_header(tmp_path):
    path = kernel_trace_csv(tmp_path / "run_kernel_trace.csv", [
        {"Dispatch_Id": 7, "Kernel_Name": "demo_kernel_0", "VGPR_Count": 96, "Accum_VGPR_Count": 0,
         "Workgroup_Size_X": 64, "Workgroup_Size_Y": 2, "Grid_Size_X": 128, "Grid_Size_Y": 4},
    ])
    (row,) = read_kernel_trace(path)
    assert (row.dispatch_id, row.vgpr_count, row.accum_vgpr_count, row.lds_bytes) == (7, 96, 0, 16384)
    assert row.workgroup_items == 128 and row.agent_number == 2 and row.duration_ns == 8000
    meta = row.meta()
    assert meta.workgroup_size == 128 and meta.grid_size == 512 and meta.vgpr_count == 96


def test_kernel_trace_old_header_by_name(tmp_path):
    path = tmp_path / "old_kernel_trace.csv"
    path.write_text(
        '"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
        '"Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size","Workgroup_Size_X",'
        '"Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"\n'
        '"KERNEL_DISPATCH",1,1,9,3,4,"k(int)",3,10,30,256,8192,128,1,1,1024,1,1\n'
    )
    (row,) = read_kernel_trace(path)
    assert row.lds_bytes == 8192 and row.scratch_bytes == 256 and row.vgpr_count is None
    assert row.agent_number == 1


def test_kernel_trace_without_kernel_name_is_refused(tmp_path):
    path = tmp_path / "x_kernel_trace.csv"
    path.write_text('"A","B"\n1,2\n')
    with pytest.raises(InputError, match="Kernel_Name"):
        read_kernel_trace(path)


def test_agent_info_gpu_rows(tmp_path):
    agents = read_agent_info(agent_info_csv(tmp_path / "a_agent_info.csv", [(2, "gfx950"), (3, "gfx942")]))
    gpus = gpu_agents(agents)
    assert [(a.logical_node_id, a.name) for a in gpus] == [(2, "gfx950"), (3, "gfx942")]
    assert gpus[0].lds_size_kb == 160 and gpus[0].gfx_target_version == 90500


# --- filenames.json and dispatch names -------------------------------------------------------


def test_filenames_wave_index(tmp_path):
    path = write_json(tmp_path / "filenames.json", {
        "gfxip": 9, "gfxv": "vega", "version": "3.0.0", "counter_names": ["SQ_WAVES"],
        "wave_filenames": {"0": {"1": {"0": {"0": ["se0_sm1_sl0_wv0.json", 10, 90]}}}}})
    info = read_filenames(path)
    assert info.gfxip == 9 and info.counter_names == ["SQ_WAVES"] and not info.pc_sampling
    assert [(w.name, w.se, w.simd, w.begin, w.end) for w in info.wave_files] == [("se0_sm1_sl0_wv0.json", "0", "1", 10, 90)]


def test_dispatch_names():
    def as_tuple(name):
        parsed = parse_dispatch_name(name)
        return parsed.agent, parsed.id, parsed.label

    assert as_tuple("ui_output_agent_55287_dispatch_44_after_loc_fix") == (55287, 44, "_after_loc_fix")
    assert as_tuple("/x/ui_output_agent_1_dispatch_9") == (1, 9, "")
    assert as_tuple("flash_fwd_v1_ui") == (None, None, "")


def test_bundle_csvs_same_run_first_discover_after(tmp_path):
    directory = make_dispatch_dir(tmp_path / "run")
    kernel_trace_csv(tmp_path / "run" / "discover_kernel_trace.csv", [{"Dispatch_Id": 7, "Kernel_Name": "x"}])
    kernel_trace_csv(tmp_path / "run" / "att_kernel_trace.csv", [{"Dispatch_Id": 7, "Kernel_Name": "x"}])
    agent_info_csv(tmp_path / "run" / "discover_agent_info.csv", [(2, "gfx950")])
    agent_info_csv(tmp_path / "run" / "att_agent_info.csv", [(2, "gfx950")])
    nearest = next(level for level in bundle_levels(directory, KERNEL_TRACE) if level)
    assert [p.name for p in nearest] == ["att_kernel_trace.csv", "discover_kernel_trace.csv"]
    nearest = next(level for level in bundle_levels(directory, AGENT_INFO) if level)
    assert [p.name for p in nearest] == ["att_agent_info.csv", "discover_agent_info.csv"]
    assert [item.path for item in find_dispatch_dirs(tmp_path).kept] == [directory]
