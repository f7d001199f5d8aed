"""Regression gate through Snakemake: a planted regression fails the run with one block (no
traceback), identical captures are "no change", a missing baselined kernel fails closed unless
allow_missing, a baseline without the run's summary is an error (issue 22 points 5 and 8)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.synth import demo_vec_add, write_att_run

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
WAIT_INDEX = 10  # demo_vec_add: the `s_waitcnt vmcnt(0)` on source line 8


def capture(folder: Path, extra_stall: int = 0, name: str | None = None) -> Path:
    """A synthetic ATT run of vec_add; ``extra_stall`` cycles per issue planted on the wait;
    ``name`` renames the kernel."""
    spec = demo_vec_add()
    if name:
        spec = dataclasses.replace(spec, name=name, demangled=name)
    assert spec.instructions[WAIT_INDEX].asm.startswith("s_waitcnt vmcnt")
    if extra_stall:
        instructions = list(spec.instructions)
        instructions[WAIT_INDEX] = dataclasses.replace(
            instructions[WAIT_INDEX],
            stall_cycles=instructions[WAIT_INDEX].stall_cycles + extra_stall)
        spec = dataclasses.replace(spec, instructions=tuple(instructions))
    write_att_run(folder, [spec], calls=1)
    return folder


def snakemake(workdir: Path, **config: str) -> subprocess.CompletedProcess:
    args = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(workdir), "-c", "2",
            "--config", *(f"{key}={value}" for key, value in config.items())]
    return subprocess.run(args, capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    capture(root / "cap_before")
    proc = snakemake(root / "base", dir=str(root / "cap_before"), run="demo")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (root / "base" / "reports" / "demo" / "summary.json").is_file()
    # A baseline is the reports/ folder alone: the earlier run's results/ is gone.
    shutil.rmtree(root / "base" / "results")
    return root


def test_planted_regression_fails_the_gate_and_keeps_the_report(baseline):
    root = baseline
    capture(root / "cap_after", extra_stall=3000)
    proc = snakemake(root / "new", dir=str(root / "cap_after"), run="demo",
                     baseline=str(root / "base" / "reports"))
    assert proc.returncode != 0, proc.stderr[-3000:]
    report_dir = root / "new" / "reports" / "demo"
    result = json.loads((report_dir / "regression.json").read_text())
    assert result["schema"] == "kerneltrace.compare/1"
    assert result["verdict"] == "regressed"
    (entry,) = result["kernels"]
    comparison = entry["comparison"]
    # Every wave pays the planted stall once: +3000 cycles per wave on the wait's line.
    assert comparison["totals"]["stall_cycles"]["delta_per_wave"] == pytest.approx(3000, rel=0.01)
    # Line and instruction deltas come from reports/demo/hotspots/ of the baseline folder.
    assert comparison["lines"]["items"][0]["location"].endswith(":8")
    top = comparison["instructions"]["items"][0]
    assert top["asm_after"].startswith("s_waitcnt vmcnt") and top["source_after"].endswith(":8")
    assert top["delta_per_wave"] == pytest.approx(3000, rel=0.01)
    # The verdict follows the estimated time change: +3000 cycles on every wave's lifetime.
    estimate = comparison["estimated_time_change"]
    assert estimate["basis"] == "wave_lifetime" and estimate["low"] > 0
    assert result["reasons"][0].split(": ", 1)[1].startswith(
        f"estimated time change {estimate['value']:+.1%}")
    markdown = (report_dir / "regression.md").read_text()
    assert "regressed" in markdown
    assert "estimated time change" in markdown
    assert proc.returncode == 1
    # the gate speaks last and alone: one block, the estimated time change and band first
    block = proc.stderr[proc.stderr.index("regression gate: FAILED"):]
    assert "REGRESSED vec_add_float" in block
    assert f"estimated time change {estimate['value']:+.1%} (band {estimate['low']:+.1%}" in block
    assert "why:" in block and "details: reports/demo/regression.md" in block
    for noise in ("RuleException", "WorkflowError", "Traceback", 'File "', "Error in rule"):
        assert noise not in proc.stderr, noise
    assert not (root / "new" / "results" / "demo" / "regression.gate.json").exists()
    # a re-run with nothing changed still fails: a failed outcome is never left as an output
    again = snakemake(root / "new", dir=str(root / "cap_after"), run="demo",
                      baseline=str(root / "base" / "reports"))
    assert again.returncode == 1 and "regression gate: FAILED" in again.stderr


def test_neutral_change_passes_the_gate(baseline):
    root = baseline
    capture(root / "cap_same")  # the same kernel captured again
    proc = snakemake(root / "same", dir=str(root / "cap_same"), run="demo",
                     baseline=str(root / "base" / "reports"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((root / "same" / "reports" / "demo" / "regression.json").read_text())
    assert result["verdict"] == "neutral"
    assert result["kernels"][0]["status"] == "matched"
    estimate = result["kernels"][0]["comparison"]["estimated_time_change"]
    assert estimate["value"] == 0 and estimate["basis"] == "identical_capture"
    outcome = json.loads((root / "same" / "results" / "demo" / "regression.gate.json").read_text())
    assert outcome["passed"] is True
    assert "regression gate: passed" in proc.stderr and "no change" in proc.stderr
    assert "cannot see" not in proc.stderr
    markdown = (root / "same" / "reports" / "demo" / "regression.md").read_text()
    assert "no change" in markdown and "cannot see" not in markdown
    index = (root / "same" / "reports" / "index.html").read_text()
    assert 'href="demo/plan.html"' in index
    assert "vec_add_float" in index


def test_slurm_dry_run_plans_gate_and_index_without_gpu_jobs(baseline):
    """docs/scale-out.md: a dir run with the SLURM profile plans gate and index, no GPU job."""
    root = baseline
    proc = subprocess.run(
        [str(SNAKEMAKE), "-n", "-s", str(REPO / "Snakefile"), "-d", str(root / "slurm"),
         "--workflow-profile", str(REPO / "profiles" / "slurm"),
         "--config", f"dir={root / 'cap_before'}", "run=demo",
         f"baseline={root / 'base' / 'reports'}"],
        capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    planned = {line.split()[-1].rstrip(":") for line in proc.stdout.splitlines()
               if line.startswith(("rule ", "localrule ", "checkpoint "))}
    assert {"regression_report", "regression_gate", "batch_index", "plan"} <= planned
    assert "gpu=1" not in proc.stdout  # analysis of cached captures never asks for a GPU


def test_missing_baselined_kernel_fails_the_gate_unless_allowed(baseline):
    root = baseline
    capture(root / "cap_renamed", name="vec_add_renamed")  # the baselined kernel is gone
    args = dict(dir=str(root / "cap_renamed"), run="demo", baseline=str(root / "base" / "reports"))
    proc = snakemake(root / "renamed", **args)
    assert proc.returncode == 1, proc.stderr[-3000:]
    block = proc.stderr[proc.stderr.index("regression gate: FAILED"):]
    assert "MISSING vec_add_float" in block and "allow_missing" in block, block
    assert "RuleException" not in proc.stderr
    report = json.loads((root / "renamed" / "reports" / "demo" / "regression.json").read_text())
    assert report["missing"] == ["vec_add_float(float const*, float const*, float*, int)#1"]
    allowed = snakemake(root / "renamed", **args, allow_missing="True")
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert "regression gate: passed" in allowed.stderr and "MISSING vec_add_float" in allowed.stderr


def test_baseline_without_the_runs_summary_is_an_error_not_a_pass(baseline):
    root = baseline
    proc = snakemake(root / "other", dir=str(root / "cap_before"), run="renamed_run",
                     baseline=str(root / "base" / "reports"))
    assert proc.returncode != 0
    assert "baseline holds no summary for run 'renamed_run' (it holds runs: demo)" in proc.stderr
    assert not (root / "other" / "reports" / "renamed_run").exists()  # no job ran
