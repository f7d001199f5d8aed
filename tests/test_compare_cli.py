"""scripts/compare.py: exit codes 0/1/2, JSON on stdout with '-', Markdown, summary inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_compare import BASE_ROWS, make_doc, with_stall

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "compare.py"


def run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, cwd=REPO)


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_self_compare_exit_0_and_json_on_stdout(tmp_path):
    doc = write(tmp_path / "a.json", make_doc(BASE_ROWS))
    proc = run(doc, doc, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # stdout is pure JSON
    assert result["schema"] == "kerneltrace.compare/1"
    assert result["verdict"] == "neutral"
    for key in ("totals", "lines", "thresholds", "instructions", "hotspots", "occupancy", "l2"):
        assert key in result


def test_regression_exit_1_with_reports(tmp_path):
    before = write(tmp_path / "before.json", make_doc(BASE_ROWS))
    after = write(tmp_path / "after.json", make_doc(with_stall(BASE_ROWS, 3, 600)))
    out_json, out_md = tmp_path / "cmp.json", tmp_path / "cmp.md"
    proc = run(before, after, "--json", out_json, "--markdown", out_md)
    assert proc.returncode == 1
    assert "REGRESSED" in proc.stdout
    assert "estimated time change: +" in proc.stdout and "basis latency_per_wave" in proc.stdout
    assert json.loads(out_json.read_text())["verdict"] == "regressed"
    markdown = out_md.read_text()
    assert markdown.startswith("# Comparison: **regressed**")
    assert "`/src/kernel.py:12`" in markdown
    assert "**estimated time change: +" in markdown


def test_fail_on_loosened_thresholds_exit_0(tmp_path):
    before = write(tmp_path / "before.json", make_doc(BASE_ROWS))
    after = write(tmp_path / "after.json", make_doc(with_stall(BASE_ROWS, 3, 600)))
    proc = run(before, after, "--fail-on", "time_change=50%", "--quiet")
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout == ""


def test_bad_input_exit_2_one_line(tmp_path):
    good = write(tmp_path / "a.json", make_doc(BASE_ROWS))
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"schema": "something/9"}))
    cases = [
        (tmp_path / "missing.json", good),
        (tmp_path / "broken.json", good),
        (tmp_path / "other.json", good),
        (tmp_path, good),  # a folder with nothing comparable
    ]
    for before, after in cases:
        proc = run(before, after)
        assert proc.returncode == 2, (before, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
        assert "Traceback" not in proc.stderr
    proc = run(good, good, "--fail-on", "total_stall=lots")
    assert proc.returncode == 2 and "total_stall" in proc.stderr


def summary_of(docs: list[dict], run_name: str) -> dict:
    """A kerneltrace.summary/1-shaped document (per kernel, per dispatch) for the given docs."""
    kernels: dict[str, dict] = {}
    for doc in docs:
        kernels.setdefault(doc["kernel"], {"name": doc["kernel"], "dispatches": []})
        kernels[doc["kernel"]]["dispatches"].append(
            {key: doc[key] for key in ("dispatch_dir", "dispatch", "format", "totals",
                                       "stall_by_type", "occupancy", "source_mapping")})
    return {"schema": "kerneltrace.summary/1", "run": run_name, "kernels": list(kernels.values())}


def make_workdir(root: Path, run_name: str, doc: dict, keep_hotspots: bool) -> Path:
    reports = root / "reports"
    (reports / run_name).mkdir(parents=True)
    write(reports / run_name / "summary.json", summary_of([doc], run_name))
    if keep_hotspots:
        (reports / run_name / "hotspots").mkdir(parents=True)
        write(reports / run_name / "hotspots" / "d0.json", doc)
    return reports


def test_reports_folders_compared_by_run(tmp_path):
    before = make_workdir(tmp_path / "old", "demo", make_doc(BASE_ROWS), keep_hotspots=True)
    after = make_workdir(tmp_path / "new", "demo", make_doc(with_stall(BASE_ROWS, 3, 600)),
                         keep_hotspots=True)
    proc = run(before, after, "--json", "-")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["kind"] == "set"
    (entry,) = result["kernels"]
    assert entry["key"] == "k#1" and entry["verdict"] == "regressed"
    # Hotspot JSONs were found beside the reports, so line deltas are present.
    assert entry["comparison"]["lines"]["items"][0]["location"] == "/src/kernel.py:12"


def test_summary_only_baseline_compares_totals(tmp_path):
    before = make_workdir(tmp_path / "old", "demo", make_doc(BASE_ROWS), keep_hotspots=False)
    after = make_workdir(tmp_path / "new", "demo", make_doc(with_stall(BASE_ROWS, 3, 600)),
                         keep_hotspots=True)
    proc = run(before / "demo" / "summary.json", after / "demo", "--json", "-")
    assert proc.returncode == 1, proc.stderr
    comparison = json.loads(proc.stdout)["kernels"][0]["comparison"]
    assert comparison["lines"]["status"] == "unavailable"
    assert comparison["totals"]["stall_cycles"]["delta"] == 600 * 8
    assert any("summary-level" in note for note in comparison["notes"])


def test_index_html_escapes_and_links(tmp_path):
    reports = tmp_path / "reports"
    doc = make_doc(BASE_ROWS)
    doc["kernel"] = "void gemm<float, 4>(A&, B*)"
    for run_name in ("alpha", "beta"):
        (reports / run_name).mkdir(parents=True)
        write(reports / run_name / "summary.json", summary_of([doc], run_name))
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "render_index.py"),
                           str(reports)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    html = (reports / "index.html").read_text()
    assert 'href="alpha/plan.html"' in html and 'href="beta/plan.md"' in html
    assert "gemm&lt;float, 4&gt;(A&amp;, B*)" in html
    assert "gemm<float" not in html
    assert "<script" not in html and "http" not in html  # self-contained, nothing fetched


def test_compare_thresholds_flag_is_recorded_and_checked(tmp_path):
    doc = write(tmp_path / "a.json", make_doc(BASE_ROWS))
    proc = run(doc, doc, "--json", "-", "--thresholds", '{"compare": {"matched_line_share": 0.9}}')
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["compare_thresholds"]["matched_line_share"] == 0.9
    assert result["thresholds"]["time_noise"] == 0.07  # the gate's, from --fail-on
    for bad, fragment in (('{"gate": {"total_stall": 0.1}}', "--fail-on"),
                          ('{"compare": {"noise_floor": 0.1}}', "unknown threshold(s)"),
                          ('{"compare": {"work_ratio": "big"}}', "must be a number")):
        proc = run(doc, doc, "--thresholds", bad)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and fragment in lines[0], proc.stderr


def test_regression_report_and_gate_record_the_thresholds_in_use(tmp_path):
    """The pipeline's regression_report (config regression_thresholds → --thresholds, config
    plan.thresholds.compare → --compare-thresholds) and regression_gate write them down."""
    baseline = make_workdir(tmp_path / "old", "demo", make_doc(BASE_ROWS), keep_hotspots=True)
    current = make_workdir(tmp_path / "new", "demo", make_doc(BASE_ROWS), keep_hotspots=True)
    report, gate = tmp_path / "regression.json", tmp_path / "gate.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "regression_report.py"), "--baseline", str(baseline),
         "--run", "demo", "--thresholds=total_stall=5%", "--compare-thresholds",
         '{"compare": {"work_ratio": 3}}', "--json", str(report), "--markdown", str(tmp_path / "r.md"),
         str(current / "demo" / "hotspots" / "d0.json")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(report.read_text())
    assert result["thresholds"]["total_stall"] == 0.05 and result["compare_thresholds"]["work_ratio"] == 3.0
    assert result["kernels"][0]["comparison"]["work_per_wave"]["threshold"] == 3.0
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "regression_gate.py"), str(report),
                           str(gate), "--record"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(gate.read_text())
    assert outcome["thresholds"] == {"gate": result["thresholds"], "compare": result["compare_thresholds"]}
