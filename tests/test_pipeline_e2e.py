"""End-to-end runs of the Snakemake pipeline (CLI subprocess, -d into a temp working directory):
the four uses, bad input, the SLURM profile dry run, and the rerun boundary analysis/capture."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake

REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e

EXAMPLE = REPO_ROOT / "examples" / "synthetic_gemm"


@pytest.fixture()
def env(tmp_path):
    return double_env(tmp_path)


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() + str(p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def test_use4_no_config_analyses_bundled_example(tmp_path, env):
    before = tree_digest(EXAMPLE)
    result = snakemake(tmp_path / "w", env)
    assert result.returncode == 0, output(result)
    assert "use 4" in result.stderr
    plan = tmp_path / "w" / "reports" / "example"
    assert (plan / "plan.md").stat().st_size > 0 and (plan / "plan.html").stat().st_size > 0
    assert tree_digest(EXAMPLE) == before  # nothing written under the analysed folder
    # The same interpreter under another path (python vs python3 in a venv) is no rerun trigger.
    here = Path(sys.executable)
    aliases = [p for p in sorted(here.parent.glob("python*")) if p != here and p.resolve() == here.resolve()]
    assert aliases, f"no other name for {here} in {here.parent}"
    again = snakemake(tmp_path / "w", env, "-n", python=str(aliases[0]))
    assert again.returncode == 0 and "Nothing to be done" in output(again), output(again)


def test_use2_dir_on_real_capture_writes_nothing_there(tmp_path, env, captures):
    path = captures / "flydsl-kernel-profiling-lib" / "examples" / "vec_add"
    before = tree_digest(path)
    result = snakemake(tmp_path / "w", env, "--config", f"dir={path}")
    assert result.returncode == 0, output(result)
    manifest = (tmp_path / "w" / "results" / "vec_add" / "dispatches.tsv").read_text()
    assert "ui_output_agent_14705_dispatch_25" in manifest and "big_agent_info.csv" in manifest
    assert (tmp_path / "w" / "reports" / "vec_add" / "plan.md").is_file()
    assert tree_digest(path) == before


def test_use1_cmd_on_double_then_slurm_dry_run_and_rerun_boundary(tmp_path, env):
    work = tmp_path / "w"
    result = snakemake(work, env, "--config", "cmd=true bench_pa.py --tag x")
    assert result.returncode == 0, output(result)
    run = work / "results" / "bench_pa"
    table = (run / "discover" / "kernels.tsv").read_text()
    assert "demo_gemm_kernel_0" in table and "\tk000\tyes" in table
    job = (run / "jobs" / "k000.yaml").read_text()
    assert "kernel_include_regex: ^demo_gemm_kernel_0$" in job and "att_target_cu: 1" in job
    assert len(list((run / "captures" / "k000").glob("ui_output_agent_*"))) == 3  # iterations {1, 3, 4}
    assert (work / "reports" / "bench_pa" / "plan.html").is_file()
    assert "bash -c" in (work / "logs" / "bench_pa" / "att_capture" / "k000.log").read_text()
    # Re-running the analysis never re-runs a capture.
    rerun = snakemake(work, env, "-n", "--config", "cmd=true bench_pa.py --tag x", "-R", "hotspots")
    assert rerun.returncode == 0, output(rerun)
    assert "rule hotspots" in rerun.stdout and "att_capture" not in rerun.stdout
    assert "discover_kernels" not in rerun.stdout
    # SLURM profile: capture jobs resolve to the GPU partition with one GPU (plugin needed, no SLURM).
    slurm = snakemake(work, env, "-n", "--workflow-profile", str(REPO_ROOT / "profiles" / "slurm"),
                      "--config", "cmd=true bench_pa.py --tag x", "-R", "att_capture")
    assert slurm.returncode == 0, output(slurm)
    block = slurm.stdout.split("checkpoint att_capture:")[1].split("\n\n")[0]  # a checkpoint
    assert "gpu=1" in block and "slurm_partition=gpu" in block


def test_batch_runs_in_one_invocation(tmp_path, env):
    config = tmp_path / "batch.yaml"
    config.write_text(f"runs:\n  synthetic:\n    dir: {EXAMPLE}\n"
                      "  profiled:\n    cmd: \"true\"\n    kernel: vec_add\n")
    result = snakemake(tmp_path / "w", env, "--configfile", str(config))
    assert result.returncode == 0, output(result)
    for run in ("synthetic", "profiled"):
        assert (tmp_path / "w" / "reports" / run / "plan.md").is_file()
    job = (tmp_path / "w" / "results" / "profiled" / "jobs" / "k001.yaml").read_text()
    assert "vec_add_float\\(float const\\*" in job


def test_example_batch_config_is_valid(tmp_path, env):
    result = snakemake(tmp_path / "w", env, "-n", "--configfile", str(REPO_ROOT / "config" / "batch.example.yaml"))
    assert result.returncode == 0, output(result)
    assert "batch:" in result.stderr


@pytest.mark.parametrize(("args", "expected"), [
    (["--config", "cmd=echo oops; exit 3"], ["exit code 3", "logs/"]),
    (["--config", "cmd=true", "kernel=^no_such_kernel$"], ["top kernels found", "demo_gemm_kernel_0"]),
    (["--config", "cmd=true", "rocprofv3=/nonexistent/rocprofv3"], ["rocprofv3 not found", "rocprofv3:"]),
    (["--config", "kernl=x"], ["unknown config key(s): kernl", "kernel"]),
])
def test_bad_input_messages(tmp_path, env, args, expected):
    result = snakemake(tmp_path / "w", env, *args)
    assert result.returncode != 0
    for text in expected:
        assert text in output(result), output(result)


def test_dir_without_dispatch_dirs_says_what_was_searched(tmp_path, env):
    empty = tmp_path / "nothing_here"
    (empty / "sub").mkdir(parents=True)
    result = snakemake(tmp_path / "w", env, "--config", f"dir={empty}")
    assert result.returncode != 0
    assert f"recursively under {empty}" in output(result)


def test_decoder_missing_fails_with_install_instructions(tmp_path, env):
    env = {**env, "ROCPROF_ATT_LIBRARY_PATH": str(tmp_path / "no_decoder_here")}
    result = snakemake(tmp_path / "w", env, "--config", "cmd=true", "rocprofv3=rocprofv3")
    assert result.returncode != 0
    text = output(result)
    assert "librocprof-trace-decoder.so not found" in text and "ROCm 7.1.1" in text
    # The discovery result survives the failed capture.
    assert (tmp_path / "w" / "results" / "true" / "discover" / "kernels.tsv").is_file()
