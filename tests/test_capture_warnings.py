"""Truncated or partial captures are stated in the hotspot JSON, summary.json and the plan (issue 14 point 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.model.assembly import assembly_target
from kerneltrace.plan.summary import build_summary
from kerneltrace.render.plan import render_html, render_markdown
from kerneltrace.synth import spec as synth_spec
from kerneltrace.synth.writers import write_dispatch_dir


@pytest.fixture
def dispatch(tmp_path) -> Path:
    return write_dispatch_dir(tmp_path / "caps", synth_spec.demo_vec_add())


def _plan(doc: dict) -> tuple[dict, str, str]:
    summary = build_summary([doc], [], run="r")
    return summary, render_markdown(summary, [doc]), render_html(summary, [doc], [], {})


def test_missing_wave_files_are_a_partial_capture_everywhere(dispatch):
    gone = sorted(dispatch.glob("se*_sm*_sl*_wv*.json"))[-2:]
    for path in gone:
        path.unlink()
    doc = analyze_dispatch(dispatch, arch="gfx942", waves=True)
    assert any("partial capture: 2 of" in w and gone[0].name in w for w in doc["capture_warnings"])
    summary, markdown, html = _plan(doc)
    assert summary["capture_warnings"] and summary["capture_warnings"][0]["dispatch_dir"] == str(dispatch)
    assert summary["kernels"][0]["dispatches"][0]["capture_warnings"] == doc["capture_warnings"]
    assert "Incomplete capture" in markdown and "partial capture" in markdown
    assert "Incomplete capture" in html


def test_no_wave_file_at_all_is_said_as_such_and_the_arch_note_names_the_candidates(dispatch):
    """A capture published without its wave files (filenames.json lists them, none is there):
    not 'results cover only the waves present' (there are none); an unknown arch names the
    candidates the ISA leaves, not 'unknown (unknown)'."""
    for path in dispatch.glob("se*_sm*_sl*_wv*.json"):
        path.unlink()
    doc = analyze_dispatch(dispatch, waves=True)
    assert doc["arch"]["name"] is None and doc["arch"]["candidates"]
    (warning,) = doc["capture_warnings"]
    assert warning.startswith("no wave files: none of the") and "waves present" not in warning
    summary, markdown, html = _plan(doc)
    candidates = ", ".join(doc["arch"]["candidates"])
    assert f"| Arch | unknown (candidates: {candidates}) |" in markdown
    assert f"unknown (candidates: {candidates})" in html and "from unknown" not in html
    notes = summary["kernels"][0]["dispatches"][0]["capture_quality"]
    (arch_note,) = [n["note"] for n in notes if n["kind"] == "arch-uncertain"]
    assert arch_note.startswith(f"architecture unknown (candidates: {candidates}): pass --arch")
    # --waves with no wave file: the document the pipeline writes without the flag (no zero-wave
    # section that would read as wave-level evidence), so the plan says there are none
    assert "waves" not in doc and doc["schema"] == "kerneltrace.hotspots/1"
    assert doc == analyze_dispatch(dispatch)
    assert "no-wave-files" in {n["kind"] for n in notes}
    (dispatch / "filenames.json").unlink()  # nothing listed: the analyzer says it itself
    assert any(w.startswith("--waves: no wave files") for w in analyze_dispatch(dispatch, waves=True)["warnings"])


def test_truncated_capture_report_is_stated(dispatch, tmp_path):
    report = tmp_path / "decode.json"
    report.write_text(json.dumps({"truncated": True, "findings": [{"code": "buffer-full"}]}))
    doc = analyze_dispatch(dispatch, arch="gfx942", capture_report=report)
    assert any(w.startswith("truncated capture (buffer full)") for w in doc["capture_warnings"])
    assert "truncated capture" in _plan(doc)[1]


def test_unreadable_capture_report_is_not_silence(dispatch, tmp_path):
    report = tmp_path / "decode.json"
    report.mkdir()
    doc = analyze_dispatch(dispatch, arch="gfx942", capture_report=report)
    assert any("capture report unreadable" in w for w in doc["capture_warnings"])


def test_complete_capture_has_no_capture_warning(dispatch):
    doc = analyze_dispatch(dispatch, arch="gfx942", waves=True)
    assert doc["capture_warnings"] == []
    summary, markdown, _ = _plan(doc)
    assert summary["capture_warnings"] == [] and "Incomplete capture" not in markdown


@pytest.mark.e2e
def test_buffer_full_through_the_pipeline_reaches_summary_and_plan(tmp_path):
    env = double_env(tmp_path)
    env["ROCPROF_DOUBLE_FAIL"] = "buffer-full-persistent"
    work = tmp_path / "w"
    result = snakemake(work, env, "--config", "cmd=true bench_pa.py", "run=trunc")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((work / "reports" / "trunc" / "summary.json").read_text())
    assert summary["capture_warnings"] and "truncated capture" in summary["capture_warnings"][0]["warning"]
    assert "truncated capture" in (work / "reports" / "trunc" / "plan.md").read_text()
    hotspot = next((work / "results" / "trunc" / "hotspots").glob("*.json"))
    assert any("truncated capture" in w for w in json.loads(hotspot.read_text())["capture_warnings"])


def test_the_arch_comes_from_the_device_assembly_a_save_temps_build_left_beside_the_capture(dispatch):
    """No agent_info (a ThunderKittens build folder): the `.amdgcn_target` of the hipcc
    --save-temps assembly that defines the traced kernel names the GPU; assembly of another
    kernel, or two files naming different targets, decide nothing."""
    import json

    symbol = json.loads((dispatch / "code.json").read_text())["code"][0][0].lstrip("; ")
    folder = dispatch.parent
    other = folder / "other-hip-amdgcn-amd-amdhsa-gfx950.s"
    other.write_text('\t.amdgcn_target "amdgcn-amd-amdhsa--gfx950"\nunrelated_kernel:\n')
    assert analyze_dispatch(dispatch)["arch"]["name"] is None
    mine = folder / "k-hip-amdgcn-amd-amdhsa-gfx942.s"
    mine.write_text(f'\t.amdgcn_target "amdgcn-amd-amdhsa--gfx942"\n{symbol}:    ; @{symbol}\n\ts_endpgm\n')
    assert assembly_target(dispatch, [symbol]) == ("gfx942", mine)
    assert assembly_target(dispatch, ["another_kernel"]) is None
    arch = analyze_dispatch(dispatch)["arch"]
    assert (arch["name"], arch["source"], arch["certain"]) == ("gfx942", "assembly", True)
    assert arch["source_file"].endswith(mine.name)
    assert analyze_dispatch(dispatch, arch="gfx950")["arch"]["name"] == "gfx950"  # --arch wins
    from kerneltrace.render.timeline.export import export_timeline

    timeline = export_timeline(dispatch, folder / "t.pftrace")  # the arch its clock falls back on
    assert timeline.arch == "gfx942"
    other.write_text(f'\t.amdgcn_target "amdgcn-amd-amdhsa--gfx950"\n{symbol}:\n')
    assert analyze_dispatch(dispatch)["arch"]["name"] is None  # the two disagree
