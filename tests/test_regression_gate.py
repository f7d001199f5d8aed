"""Regression gate through Snakemake: a planted regression fails the run, a neutral change passes."""

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


def capture(folder: Path, extra_stall: int = 0) -> Path:
    """A synthetic ATT run of vec_add; ``extra_stall`` cycles per issue planted on the wait."""
    spec = demo_vec_add()
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
    assert not (root / "new" / "results" / "demo" / "regression.passed").exists()
    assert "regress" in proc.stderr


def test_neutral_change_passes_the_gate(baseline):
    root = baseline
    capture(root / "cap_same")  # the same kernel captured again
    proc = snakemake(root / "same", dir=str(root / "cap_same"), run="demo",
                     baseline=str(root / "base" / "reports"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((root / "same" / "reports" / "demo" / "regression.json").read_text())
    assert result["verdict"] == "neutral"
    assert result["kernels"][0]["status"] == "matched"
    assert result["kernels"][0]["comparison"]["estimated_time_change"]["value"] == 0
    assert (root / "same" / "results" / "demo" / "regression.passed").is_file()
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
