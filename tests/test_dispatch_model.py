"""The dispatch-dir model: CSV metadata found by content in the capture bundle (same answer for the CLI
and the pipeline, for a dispatch dir or its parent), the `arch` config key, and discovery that survives
bad entries (odd names, unreadable folders, broken code.json) while analysing the good captures."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import snakemake

from kerneltrace import synth
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.errors import InputError
from kerneltrace.model import dispatchdir
from kerneltrace.model.naming import parse_dispatch_name
from kerneltrace.pipeline import manifest
from kerneltrace.pipeline.runs import build_runs

REPO = Path(__file__).resolve().parents[1]
FIND = REPO / "scripts" / "find_dispatch_dirs.py"


def _trace_csv(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = ["Kind", "Agent_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "VGPR_Count",
               "Accum_VGPR_Count", "SGPR_Count", "LDS_Block_Size", "Workgroup_Size_X",
               "Workgroup_Size_Y", "Workgroup_Size_Z"]
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({"Kind": "KERNEL_DISPATCH", "Agent_Id": "Agent 2", "Kernel_Id": 1,
                             "Accum_VGPR_Count": 0, "SGPR_Count": 32, "LDS_Block_Size": 0,
                             "Workgroup_Size_X": 256, "Workgroup_Size_Y": 1, "Workgroup_Size_Z": 1, **row})
    return path


def _agent_csv(path: Path, gfx: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("Logical_Node_Id,Agent_Type,Name,Cu_Count,Simd_Per_Cu,Max_Waves_Per_Simd,Wave_Front_Size\n"
                    f"0,CPU,cpu,0,0,0,0\n2,GPU,{gfx},304,4,8,64\n")
    return path


def _flydsl_bundle(root: Path) -> tuple[Path, str]:
    """FlyDSL's layout: att_viewer/{big,small}/ui_output_* and compute_viewer/*.csv beside them."""
    spec = synth.demo_vec_add()
    big = synth.write_dispatch_dir(root / "att_viewer" / "big", spec, agent_handle=11, dispatch_id=5)
    synth.write_dispatch_dir(root / "att_viewer" / "small", spec, agent_handle=12, dispatch_id=5)
    name = dispatchdir.describe(big).kernel
    _trace_csv(root / "compute_viewer" / "discover_kernel_trace.csv",
               [{"Dispatch_Id": 1, "Kernel_Name": "other_kernel", "VGPR_Count": 8},
                {"Dispatch_Id": 2, "Kernel_Name": name, "VGPR_Count": 96}])
    _agent_csv(root / "compute_viewer" / "discover_agent_info.csv", "gfx950")
    _agent_csv(root / "compute_viewer" / "big_agent_info.csv", "gfx942")
    return big, name


def test_flydsl_bundle_csvs_found_by_content_from_the_dispatch_dir(tmp_path):
    big, _ = _flydsl_bundle(tmp_path / "kernel")
    doc = analyze_dispatch(big)
    meta = doc["metadata"]
    assert meta["kernel_trace_join"] == "kernel_name" and meta["kernel_trace"]["vgpr_count"] == 96
    assert meta["agent_info_csv"].endswith("compute_viewer/big_agent_info.csv")  # named after big/
    assert doc["arch"]["name"] == "gfx942" and doc["arch"]["source"] == "agent_info"


def test_cli_and_pipeline_agree_for_a_dispatch_dir_and_its_parents(tmp_path):
    big, _ = _flydsl_bundle(tmp_path / "kernel")
    doc = analyze_dispatch(big)
    for pointed_at in (big, big.parent, tmp_path / "kernel" / "att_viewer", tmp_path / "kernel"):
        kept = {item.path: item for item in dispatchdir.find_dispatch_dirs(pointed_at).kept}
        item = kept[big.resolve()]
        assert str(item.agent_info_csv).endswith("big_agent_info.csv"), pointed_at
        assert str(item.kernel_trace_csv) == doc["metadata"]["kernel_trace"]["source"]


def test_other_captures_csvs_are_never_borrowed(tmp_path):
    spec = synth.demo_vec_add()
    mine = synth.write_dispatch_dir(tmp_path / "runs" / "mine", spec, agent_handle=1, dispatch_id=3)
    name = dispatchdir.describe(mine).kernel
    # a sibling capture of the same kernel with its own CSVs: another run, another bundle
    synth.write_dispatch_dir(tmp_path / "runs" / "theirs", spec, agent_handle=2, dispatch_id=3)
    _trace_csv(tmp_path / "runs" / "theirs" / "att_kernel_trace.csv",
               [{"Dispatch_Id": 3, "Kernel_Name": name, "VGPR_Count": 200}])
    _agent_csv(tmp_path / "runs" / "theirs" / "att_agent_info.csv", "gfx90a")
    doc = analyze_dispatch(mine)
    assert doc["metadata"]["kernel_trace"] is None and doc["metadata"]["agent_info_csv"] is None


def test_same_dispatch_id_of_another_kernel_is_not_joined(tmp_path):
    directory = synth.write_dispatch_dir(tmp_path / "run", synth.demo_vec_add(), agent_handle=1, dispatch_id=4)
    _trace_csv(tmp_path / "run" / "att_kernel_trace.csv",
               [{"Dispatch_Id": 4, "Kernel_Name": "some_unrelated_kernel", "VGPR_Count": 200}])
    assert analyze_dispatch(directory)["metadata"]["kernel_trace"] is None


def test_arch_config_key_reaches_the_runs_and_is_checked(tmp_path):
    runs, _ = build_runs({"dir": str(tmp_path), "arch": "gfx942"}, tmp_path, tmp_path)
    assert [spec.arch for spec in runs.values()] == ["gfx942"]
    runs, _ = build_runs({"runs": {"a": {"dir": str(tmp_path), "arch": "gfx90a"}, "b": {"dir": str(tmp_path)}},
                          "arch": "gfx950"}, tmp_path, tmp_path)
    assert {name: spec.arch for name, spec in runs.items()} == {"a": "gfx90a", "b": "gfx950"}
    with pytest.raises(InputError, match="unknown arch"):
        build_runs({"dir": str(tmp_path), "arch": "gfx123"}, tmp_path, tmp_path)
    import yaml

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert "arch" in schema["properties"] and "arch" in schema["$defs"]["run"]["properties"]


# ---- discovery survives bad entries (issue 14 points 2 and 9) --------------------------------

def _find(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(FIND), os.fsdecode(root), "-o", str(out)],
                          capture_output=True, text=True, check=False)


def test_odd_names_are_skipped_with_one_warning_and_never_mapped_onto_another(tmp_path):
    root = tmp_path / "caps"
    good = synth.write_dispatch_dir(root / "a b", synth.demo_vec_add(), agent_handle=1, dispatch_id=1)
    odd = []
    for name in ("a\nb", "tab\there"):
        odd.append(synth.write_dispatch_dir(root / name, synth.demo_gemm(), agent_handle=2, dispatch_id=2))
    raw = os.path.join(os.fsencode(root), b"bytes\xff")
    os.makedirs(raw)
    odd_bytes = synth.write_dispatch_dir(Path(os.fsdecode(raw)), synth.demo_gemm(), agent_handle=3, dispatch_id=3)
    out = tmp_path / "dispatches.tsv"
    result = _find(root, out)
    assert result.returncode == 0, result.stderr
    rows = manifest.read_manifest(out)
    assert [row["dispatch_dir"] for row in rows] == [str(good.resolve())]
    assert rows[0]["kernel"] == dispatchdir.describe(good).kernel
    warnings = [line for line in result.stderr.splitlines() if line.startswith("skipped")]
    assert len(warnings) == 3
    assert any("a\\nb" in line for line in warnings) and any("tab\\there" in line for line in warnings)
    assert any("bytes\\xff" in line for line in warnings)
    assert all(path.exists() for path in [*odd, odd_bytes])


def test_manifest_refuses_a_path_it_would_rewrite(tmp_path):
    item = dispatchdir.DispatchDir(tmp_path / "a\nb", parse_dispatch_name("x"))
    with pytest.raises(InputError, match="manifest"):
        manifest.manifest_tsv(manifest.manifest_rows([item]))


def _bad_tree(root: Path) -> Path:
    good = synth.write_dispatch_dir(root / "good", synth.demo_vec_add(), agent_handle=1, dispatch_id=1)
    broken = synth.write_dispatch_dir(root / "broken", synth.demo_vec_add(), agent_handle=2, dispatch_id=2)
    (broken / "code.json").write_text('{"code": [[')
    nested = synth.write_dispatch_dir(root / "nested", synth.demo_vec_add(), agent_handle=3, dispatch_id=3)
    (nested / "code.json").write_text("[" * 200_000 + "]" * 200_000)
    (root / "locked").mkdir()
    return good


def test_dir_discovery_skips_bad_entries_and_keeps_the_good_capture(tmp_path, monkeypatch):
    good = _bad_tree(tmp_path / "caps")
    locked = (tmp_path / "caps" / "locked").resolve()
    real_scandir = os.scandir

    def scandir(path="."):  # root reads every folder: refuse this one as a permission error would
        if Path(os.fsdecode(path)).resolve() == locked:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = dispatchdir.find_dispatch_dirs(tmp_path / "caps")
    assert [item.path for item in found.kept] == [good.resolve()]
    reasons = "\n".join(found.notes)
    assert len(found.notes) == 3
    assert "broken" in reasons and "nested" in reasons and "locked" in reasons and "Permission denied" in reasons


@pytest.mark.e2e
def test_dir_run_lists_skipped_entries_in_dispatches_md(tmp_path):
    good = _bad_tree(tmp_path / "caps")
    result = snakemake(tmp_path / "work", dict(os.environ), "results/t/dispatches.md",
                       "--config", f"dir={tmp_path / 'caps'}", "run=t")
    assert result.returncode == 0, result.stderr[-2000:]
    notes = (tmp_path / "work" / "results" / "t" / "dispatches.md").read_text()
    assert str(good.resolve()) in notes
    dropped = notes.split("Dropped:")[1]
    assert "broken" in dropped and "nested" in dropped and "code.json" in dropped
