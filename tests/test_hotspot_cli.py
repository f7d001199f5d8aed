"""hotspot_analyzer CLI and analyze_dispatch: document fields, flags, and exit-2 bad inputs."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys

from hotspot_fixtures import (
    KERNEL_FILE,
    agent_info_csv,
    demo_rows,
    kernel_trace_csv,
    make_dispatch_dir,
    make_legacy_dir,
    make_multi_kernel_dir,
    make_pcsampling_dir,
    write_json,
)

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.errors import run_cli

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "hotspot_analyzer.py")
spec = importlib.util.spec_from_file_location("hotspot_analyzer_cli", SCRIPT)
cli = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cli)


def run(argv, capsys):
    code = run_cli(cli.main, [str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def digest(directory):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_document_totals_and_fields(tmp_path):
    directory = make_dispatch_dir(tmp_path)
    doc = analyze_dispatch(directory, arch="gfx942")
    rows = demo_rows()[1:]
    assert doc["schema"] == "kerneltrace.hotspots/1" and doc["format"] == "v3"
    assert doc["totals"] == {
        "instructions": len(rows),
        "executed_instructions": sum(1 for r in rows if r[6] > 0),
        "stall_cycles": sum(r[8] for r in rows),
        "latency_cycles": sum(r[7] for r in rows),
        "idle_cycles": sum(r[9] for r in rows),
        "hits": sum(r[6] for r in rows),
    }
    assert doc["dispatch"] == {"agent": 1234, "id": 7, "label": ""}
    assert doc["kernel"] == "demo_kernel_0"
    assert doc["arch"]["name"] == "gfx942" and doc["arch"]["source"] == "--arch" and doc["arch"]["certain"]
    assert {"waves_per_simd", "limited_by"} <= set(doc["occupancy"])
    assert [i["index"] for i in doc["instructions"]][0] == 6
    assert {line["artifact"] for line in doc["source_lines"]} == {None, "kernel-entry"}
    json.dumps(doc)   # serialisable


def test_json_stdout_and_text_modes(tmp_path, capsys):
    directory = make_dispatch_dir(tmp_path)
    code, out, err = run([directory, "--json", "-", "--arch", "gfx950"], capsys)
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["arch"]["name"] == "gfx950"
    code, out, _ = run([directory, "--mode", "src", "--arch", "gfx950"], capsys)
    assert "Hotspot Source Lines" in out and "Hotspot Instructions" not in out
    assert "[kernel-entry]" in out
    code, out, _ = run([directory, "--mode", "asm", "--topk", "2", "--arch", "gfx950"], capsys)
    assert "Hotspot Instructions" in out and "Hotspot Source Lines" not in out
    assert "s_waitcnt vmcnt(0) lgkmcnt(0)" in out


def test_detail_shows_snippet_with_context(tmp_path, capsys):
    directory = make_dispatch_dir(tmp_path)
    code, out, _ = run([directory, "--detail", "--context", "1", "--mode", "src"], capsys)
    assert code == 0
    assert ">>>     7 |     z = mma(x, y)" in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if ">>>     7 |" in line)
    assert lines[at - 1].endswith("6 |     y = load(b)") and lines[at + 1].endswith("8 |     store(c, z)")
    assert " | " not in lines[at - 2] and " | " not in lines[at + 2]   # context 1 only


def test_json_file_written_and_inputs_untouched(tmp_path, capsys):
    directory = make_dispatch_dir(tmp_path)
    before = digest(directory)
    out_path = tmp_path / "out" / "doc.json"
    code, out, _ = run([directory, "--json", out_path], capsys)
    assert code == 0 and "Summary" in out
    assert json.loads(out_path.read_text())["schema"] == "kerneltrace.hotspots/1"
    assert digest(directory) == before


def test_multi_kernel_default_and_selection(tmp_path, capsys):
    directory = make_multi_kernel_dir(tmp_path)
    doc = analyze_dispatch(directory)
    assert doc["kernel"] == "demo_kernel_0"
    assert doc["totals"]["instructions"] == len(demo_rows()) - 1
    assert any("several kernels" in w and "fill_kernel" in w for w in doc["warnings"])
    doc = analyze_dispatch(directory, kernel="FILL")
    assert doc["kernel"] == "at::native::fill_kernel()" and doc["totals"]["stall_cycles"] == 20
    code, _, err = run([directory, "--kernel", "nosuch"], capsys)
    assert code == 2 and "matches no kernel" in err and "demo_kernel_0" in err


def test_pcsampling_document(tmp_path):
    doc = analyze_dispatch(make_pcsampling_dir(tmp_path))
    assert doc["format"] == "pcsampling" and doc["ranked_by"] == "pc_stalled"
    assert [i["pc_stalled"] for i in doc["instructions"]][:2] == [30, 9]
    assert doc["instructions"][0]["stall_reasons"]["WAITCNT"] == 30
    reasons = {r["reason"]: r["samples"] for r in doc["pc_sampling"]["stall_reasons"]}
    assert reasons["WAITCNT"] == 30 and reasons["ARBITER_WIN_EX_STALL"] == 5 and reasons["ALU_DEPENDENCY"] == 7
    assert doc["totals"]["pc_stalled"] == 48 and doc["totals"]["pc_issued"] == 19


def test_pcsampling_text_has_reason_distribution(tmp_path, capsys):
    code, out, _ = run([make_pcsampling_dir(tmp_path)], capsys)
    assert code == 0 and "PC-Sampling Stall Reasons" in out and "WAITCNT" in out


def test_legacy_document_has_null_stall(tmp_path, capsys):
    doc = analyze_dispatch(make_legacy_dir(tmp_path))
    assert doc["format"] == "legacy" and doc["ranked_by"] == "latency_cycles"
    assert doc["totals"]["stall_cycles"] is None and doc["totals"]["idle_cycles"] is None
    assert doc["totals"]["latency_cycles"] == 100 + 700 + 300 + 2000 + 16
    assert doc["instructions"][0]["latency_cycles"] == 2000
    assert any("legacy" in w and "Stall" in w for w in doc["warnings"])
    code, out, _ = run([make_legacy_dir(tmp_path / "b")], capsys)
    assert code == 0 and "legacy format has no Stall column" in out


def test_kernel_trace_join_by_dispatch_id_same_run_only(tmp_path):
    directory = make_dispatch_dir(tmp_path)
    kernel_trace_csv(tmp_path / "discover_kernel_trace.csv", [{"Dispatch_Id": 7, "Kernel_Name": "wrong", "VGPR_Count": 8}])
    doc = analyze_dispatch(directory)
    assert doc["metadata"]["kernel_trace"] is None            # a discover_* CSV is another run
    kernel_trace_csv(tmp_path / "att_kernel_trace.csv", [
        {"Dispatch_Id": 6, "Kernel_Name": "demo_kernel_0", "VGPR_Count": 8},
        {"Dispatch_Id": 7, "Kernel_Name": "demo_kernel_0", "VGPR_Count": 128},
    ])
    doc = analyze_dispatch(directory)
    assert doc["metadata"]["kernel_trace_join"] == "dispatch_id"
    assert doc["metadata"]["kernel_trace"]["vgpr_count"] == 128


def test_explicit_discover_csv_joined_by_name(tmp_path):
    directory = make_dispatch_dir(tmp_path)
    csv_path = kernel_trace_csv(tmp_path / "elsewhere" / "discover_kernel_trace.csv", [
        {"Dispatch_Id": 7, "Kernel_Name": "other_kernel", "VGPR_Count": 8},
        {"Dispatch_Id": 99, "Kernel_Name": "demo_kernel_0", "VGPR_Count": 96},
    ])
    doc = analyze_dispatch(directory, kernel_trace_csv=csv_path)
    assert doc["metadata"]["kernel_trace_join"] == "kernel_name"
    assert doc["metadata"]["kernel_trace"]["vgpr_count"] == 96


def test_arch_from_agent_info_next_to_dir(tmp_path):
    directory = make_dispatch_dir(tmp_path)
    agent_info_csv(tmp_path / "discover_agent_info.csv", [(2, "gfx90a")])
    doc = analyze_dispatch(directory)
    assert doc["arch"]["name"] == "gfx90a" and doc["arch"]["certain"]
    assert doc["metadata"]["agent_info_csv"].endswith("discover_agent_info.csv")
    doc = analyze_dispatch(directory, arch="gfx950")
    assert doc["arch"]["name"] == "gfx950" and doc["arch"]["source"] == "--arch"


def test_arch_unknown_without_evidence(tmp_path):
    rows = [["; k", 0, 0, "", 2, 0, 0, 0, 0, 0], ["s_waitcnt vmcnt(0)", 0, 1, "/k.cpp:1", 2, 0, 4, 100, 90, 0]]
    # three folders deep: the capture bundle (3 levels up) stays inside this test's tmp_path, so
    # another test's agent_info CSV beside it (same pytest or xdist worker folder) is never found
    doc = analyze_dispatch(make_dispatch_dir(tmp_path / "a" / "b" / "c", rows, snapshots=False))
    assert doc["arch"]["name"] is None and doc["arch"]["certain"] is False
    assert len(doc["arch"]["candidates"]) > 1


def test_waves_flag(tmp_path):
    from kerneltrace.synth import spec as synth_spec
    from kerneltrace.synth.writers import write_dispatch_dir

    doc = analyze_dispatch(write_dispatch_dir(tmp_path / "w", synth_spec.demo_vec_add()), waves=True)
    assert doc["schema"] == "kerneltrace.hotspots/2" and doc["waves"]["waves"] > 0
    # no wave file in the dir: the document without the flag, and a warning saying why
    bare = analyze_dispatch(make_dispatch_dir(tmp_path / "b"), waves=True)
    assert bare["schema"] == "kerneltrace.hotspots/1" and "waves" not in bare
    assert any(w.startswith("--waves: no wave files") for w in bare["warnings"])


# --- bad inputs: exit 2, one stderr line naming file, problem and fix ---------------------------

def _bad_dirs(root):
    cases = {}
    cases["missing dir"] = (root / "nope", "not found")
    empty_dir = root / "emptydir"
    empty_dir.mkdir()
    cases["missing code.json"] = (empty_dir, "no code.json")
    d = make_dispatch_dir(root / "null", [], snapshots=False)
    write_json(d / "code.json", {"code": None, "header": "x", "version": "3.0.0"})
    cases["code null"] = (d, "att_target_cu")
    rows = [[*r[:6], 0, 0, 0, 0] for r in demo_rows()]
    cases["all hit 0"] = (make_dispatch_dir(root / "hit0", rows), "empty trace")
    rows = [[*r[:7], 0, 0, 0] for r in demo_rows()]
    cases["zero latency"] = (make_dispatch_dir(root / "lat0", rows), "zero total latency")
    d = make_dispatch_dir(root / "trunc")
    (d / "code.json").write_bytes((d / "code.json").read_bytes()[:100])
    cases["truncated"] = (d, "not valid JSON")
    rows = demo_rows()
    rows[3].append(1)
    cases["width"] = (make_dispatch_dir(root / "width", rows), "11 columns")
    d = make_dispatch_dir(root / "escape")
    write_json(d / "snapshots.json", {"/": {"k.py": "../../etc/passwd"}})
    cases["snapshot escape"] = (d, "outside the dispatch dir")
    d = make_dispatch_dir(root / "badsnap")
    (d / "snapshots.json").write_text("{not json")
    cases["snapshots not json"] = (d, "snapshots.json")
    cases["legacy empty"] = (make_legacy_dir(root / "legacy", empty=True), "kernel_include_regex")
    return cases


def test_bad_inputs_exit_2_with_one_line(tmp_path, capsys):
    for label, (directory, fragment) in _bad_dirs(tmp_path).items():
        before = digest(directory) if directory.exists() else None
        code, out, err = run([directory], capsys)
        assert code == 2, label
        assert out == "", label
        assert err.startswith("error: ") and err.count("\n") == 1, (label, err)
        assert fragment in err, (label, err)
        assert "fix:" in err, label
        if before is not None:
            assert digest(directory) == before, label


def test_non_utf8_source_warns_and_renders(tmp_path, capsys):
    directory = make_dispatch_dir(tmp_path)
    (directory / "source_0_demo_kernel.py").write_bytes(
        b"import flydsl as flyc\n\n@flyc.kernel\ndef k(a, b, c):\n    x = load(a)\n    y = load(b)\n    z = mma(x, y) # \xff\xfe\n"
    )
    code, out, err = run([directory, "--detail", "--mode", "src"], capsys)
    assert code == 0
    assert "\ufffd" in out and "not UTF-8" in err


def test_subprocess_bad_input_has_no_traceback(tmp_path):
    directory = make_dispatch_dir(tmp_path, [], snapshots=False)
    result = subprocess.run([sys.executable, SCRIPT, str(directory)], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.startswith("error: ")
    assert str(directory / "code.json") in result.stderr


def test_subprocess_help_and_json(tmp_path):
    result = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "--kernel-trace" in result.stdout and "--waves" in result.stdout
    result = subprocess.run([sys.executable, SCRIPT, str(make_dispatch_dir(tmp_path)), "--json", "-"],
                            capture_output=True, text=True)
    assert result.returncode == 0
    assert json.loads(result.stdout)["source_lines"][0]["location"] in (f"{KERNEL_FILE}:7",)


def test_the_hotspot_cli_start_up_path_imports_no_pandas(tmp_path):
    """pandas is for tables (counter CSVs, batch and compare tables); one hotspot run — the
    start-up path an agent calls per dispatch — must not pay for importing it."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    script = repo / "scripts" / "hotspot_analyzer.py"
    dispatch = next((repo / "examples" / "synthetic_gemm").glob("ui_output_agent_*_dispatch_*"))
    probe = ("import runpy, sys\n"
             f"sys.argv = [{str(script)!r}, {str(dispatch)!r}, '--json', {str(tmp_path / 'h.json')!r}]\n"
             "try:\n"
             f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
             "except SystemExit as stop:\n"
             "    assert not stop.code, stop.code\n"
             "print('pandas' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip().splitlines()[-1] == "False"
    assert (tmp_path / "h.json").is_file()


def test_structure_thresholds_are_applied_and_recorded(tmp_path, capsys):
    """--thresholds (the config's plan.thresholds.structure) changes what the hotspot stage
    detects, on the JSON and the text path, and the document records the values used."""
    from kerneltrace.thresholds import DEFAULT_STRUCTURE, values_of

    directory = make_dispatch_dir(tmp_path)
    plain, changed = tmp_path / "plain.json", tmp_path / "changed.json"
    assert run([directory, "--json", plain], capsys)[0] == 0
    doc = json.loads(plain.read_text())
    assert doc["thresholds"] == {"structure": values_of(DEFAULT_STRUCTURE)}
    assert [line["artifact"] for line in doc["source_lines"]].count("kernel-entry") == 1
    assert any(w.startswith("one line,") for w in doc["warnings"])  # one line holds > 50 %
    override = json.dumps({"structure": {"dominant_line_share": 1, "kernel_entry_min_types": 99}})
    assert run([directory, "--json", changed, "--thresholds", override], capsys)[0] == 0
    doc = json.loads(changed.read_text())
    assert doc["thresholds"]["structure"] == {**values_of(DEFAULT_STRUCTURE),
                                              "dominant_line_share": 1.0, "kernel_entry_min_types": 99}
    assert "kernel-entry" not in [line["artifact"] for line in doc["source_lines"]]
    assert not any(w.startswith("one line,") for w in doc["warnings"])
    code, out, _ = run([directory], capsys)
    assert code == 0 and "one line," in out and "kernel-entry" in out
    code, out, _ = run([directory, "--thresholds", override], capsys)
    assert code == 0 and "one line," not in out and "kernel-entry" not in out
    for bad, fragment in (('{"verdict": {"tail_share": 0.5}}', "unknown thresholds concern 'verdict'"),
                          ('{"structure": {"min_chain": 2.5}}', "must be a whole number"),
                          ('{"structure": {"nope": 1}}', "unknown threshold(s)"),
                          ("[1]", "must be a JSON object"), ("{nope", "is not JSON")):
        code, out, err = run([directory, "--thresholds", bad], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and fragment in err, (bad, err)
