"""The `dir=` batch on a real one-node SLURM cluster through profiles/slurm, against a local run.

Needs root and Debian's slurm-wlm + munge (installed with apt-get when missing; skipped when that
cannot run) and ../shared/captures. The cluster (munged, slurmctld, slurmd; no accounting) lives in
a temporary directory and is stopped by the fixture, also when the test fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pipeline_helpers import double_env
from slurm_cluster import Cluster, running_cluster, this_node, why_no_cluster

REPO_ROOT = Path(__file__).resolve().parents[1]
PROFILE = REPO_ROOT / "profiles" / "slurm"

pytestmark = [pytest.mark.slurm, pytest.mark.e2e]

# Two runs, three dispatch dirs (the second run has two): two group jobs on the cluster.
RUNS = {
    "rope": "flydsl-kernel-profiling-lib/examples/fused_rope_cache",
    "fa_small": "flydsl-kernel-profiling-lib/examples/flash_attn_func/att_viewer/small",
}
DISPATCHES = 3
# Not a performance limit: a run that hangs (the executor never seeing its jobs finish, as with
# the sacct status command on a cluster without accounting) fails instead of blocking CI.
HANG_GUARD_S = 600


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A started one-node cluster; stopped (jobs cancelled, daemons ended, orphans reaped) after."""
    if why := why_no_cluster():
        pytest.skip(why)
    with running_cluster(this_node()) as started:
        yield started


def run_snakemake(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "Snakefile"),
                           "-d", str(workdir), *args], env=env, capture_output=True, text=True,
                          check=False, stdin=subprocess.DEVNULL, timeout=HANG_GUARD_S)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_dir_batch_on_slurm_is_grouped_and_plans_match_local_run(cluster, captures, tmp_path):
    dirs = {run: captures / rel for run, rel in RUNS.items()}
    missing = [str(d) for d in dirs.values() if not d.is_dir()]
    if missing:
        pytest.skip(f"captures not present: {missing}")
    config = tmp_path / "batch.yaml"
    config.write_text("runs:\n" + "".join(f"  {run}:\n    dir: {d}\n" for run, d in dirs.items()))
    env = {k: v for k, v in cluster.env.items() if not k.startswith("SNAKEMAKE_")}

    local = run_snakemake(tmp_path / "local", env, "-c", "2", "--configfile", str(config))
    assert local.returncode == 0, local.stderr[-4000:]
    on_slurm = run_snakemake(tmp_path / "slurm", env, "--workflow-profile", str(PROFILE),
                             "--configfile", str(config))
    log = on_slurm.stdout + on_slurm.stderr
    assert on_slurm.returncode == 0, log[-6000:] + cluster.logs()

    # Jobs really went through sbatch and ran to completion on the cpu partition, one group job
    # per run (three hotspot analyses in two cluster jobs).
    ids = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert len(ids) == len(RUNS) < DISPATCHES, log[-4000:]
    queue = cluster.run("squeue", "--states=all", "-h", "-o", "%i|%T|%P").stdout
    states = {i: (state, part) for i, state, part in (row.split("|") for row in queue.split())}
    assert all(states.get(i) == ("COMPLETED", "cpu") for i in ids), (ids, queue)
    ctld = cluster.site.ctld_log.read_text()
    assert all(f"Allocate JobId={i} " in ctld for i in ids)
    assert log.count("Group job analysis_") == len(RUNS)
    assert "Falling back to 'sacct'" not in log and "MinJobAge" not in log
    # The plugin (2.8) cannot guess an account without sacct. It caches the failed guess, so the
    # notice belongs to the first submission round only (jobs submitted concurrently in that round
    # may each print it: the plugin's cache is not locked), never to later submissions.
    first_submission = log.find("has been submitted with SLURM jobid")
    assert "Unable to guess SLURM account" not in log[first_submission:]
    assert log.count("Unable to guess SLURM account") <= len(RUNS)
    account_notice = re.compile(r"SLURM account|No account was given", re.I)
    noisy = Counter(line.strip() for line in log.splitlines()
                    if re.search(r"warn|unable|invalid|error", line, re.I)
                    and not account_notice.search(line))
    assert not [line for line, times in noisy.items() if times > 1], noisy

    # Same plans, summaries and kept hotspot documents as the local run, byte for byte.
    local_reports, slurm_reports = files(tmp_path / "local" / "reports"), files(tmp_path / "slurm" / "reports")
    assert sorted(local_reports) == sorted(slurm_reports)
    for run in RUNS:
        assert f"{run}/plan.md" in slurm_reports and f"{run}/summary.json" in slurm_reports
    differing = [name for name, data in local_reports.items() if slurm_reports[name] != data]
    assert not differing, differing


def test_gpu_job_takes_the_profile_gpu_block_to_the_gpu_partition(cluster, tmp_path):
    """cmd= on the rocprofv3 double, discovery only: one real GPU job with the profile's GPU block
    (att_capture and pmc_capture reuse that block; the dry run in test_pipeline_e2e checks them)."""
    env = double_env(tmp_path)
    env["SLURM_CONF"] = cluster.env["SLURM_CONF"]
    env["PATH"] = f"{cluster.site.root / 'bin'}{os.pathsep}{env['PATH']}"
    result = run_snakemake(tmp_path / "w", env, "results/bench_pa/discover/kernels.tsv",
                           "--workflow-profile", str(PROFILE), "--config", "cmd=true bench_pa.py")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:] + cluster.logs()
    ids = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert len(ids) == 1, log[-4000:]
    job = cluster.run("scontrol", "show", "job", ids[0]).stdout
    for field in ("JobState=COMPLETED", "Partition=gpu", "TresPerJob=gres:gpu:1",
                  "CpusPerTres=gres:gpu:4", "MinMemoryNode=16000M"):
        assert field in job, (field, job)
    assert "demo_gemm_kernel_0" in (tmp_path / "w" / "results" / "bench_pa" / "discover" / "kernels.tsv").read_text()
