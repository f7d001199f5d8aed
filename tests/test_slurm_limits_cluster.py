"""On a real one-node SLURM cluster whose node has 2 CPUs: the dir= batch through profiles/slurm is fitted
or stops with one error naming the resource and the setting; a job that can never start is cancelled.

Same needs as tests/test_slurm_cluster.py (root, Debian's slurm-wlm + munge); no ../shared needed:
the three dispatch dirs are synthetic. Partition `short` (MaxTime 8 min) is there for the group
job whose summed runtime only the check before sbatch can see.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from slurm_cluster import Cluster, running_cluster, this_node, why_no_cluster

REPO_ROOT = Path(__file__).resolve().parents[1]
PROFILE = REPO_ROOT / "profiles" / "slurm"
sys.path.insert(0, str(REPO_ROOT / "bench"))
from bench_pipeline import synthetic_tree  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.e2e]

CPUS = 2
DISPATCHES = 3  # one group of three analyses: 3 CPUs asked with cores: 4, more than the node has
# The bound for a run that cannot fit (a guard on a subprocess that would otherwise wait
# forever, not a performance limit); a run that completes gets the generous one.
STOP_WITHIN_S, COMPLETE_WITHIN_S = 60, 600
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+)")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    if why := why_no_cluster():
        pytest.skip(why)
    node = replace(this_node(), cpus=CPUS)  # config_overrides: declared, whatever the machine has
    with running_cluster(node, (f"PartitionName=short Nodes={node.name} MaxTime=8 State=UP OverSubscribe=NO",)) as started:
        yield started


@pytest.fixture(scope="module")
def dispatch_tree(tmp_path_factory) -> Path:
    return synthetic_tree(tmp_path_factory.mktemp("synthetic"), DISPATCHES)


def profile_with(tmp_path: Path, **default_resources) -> Path:
    """A copy of profiles/slurm with default-resources changed, as a user edits it."""
    copy = tmp_path / "profile"
    shutil.copytree(PROFILE, copy)
    settings = yaml.safe_load((copy / "profile.yaml").read_text())
    settings["default-resources"].update(default_resources)
    (copy / "profile.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return copy


def run_on_slurm(cluster: Cluster, workdir: Path, profile: Path, tree: Path, timeout: float,
                 *config: str) -> tuple[int, str]:
    env = {k: v for k, v in cluster.env.items() if not k.startswith("SNAKEMAKE_")}
    done = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "Snakefile"),
                           "-d", str(workdir), "--workflow-profile", str(profile),
                           "--config", f"dir={tree}", *config],
                          env=env, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def queued(cluster: Cluster) -> dict[str, tuple[str, str]]:
    rows = cluster.run("squeue", "--states=all", "-h", "-o", "%i|%T|%r").stdout.split("\n")
    return {i: (state, reason) for i, state, reason in (r.split("|", 2) for r in rows if r)}


def test_mem_mb_above_real_memory_stops_before_any_submission(cluster, dispatch_tree, tmp_path):
    too_much = cluster.site.node.memory_mb + 1000
    code, log = run_on_slurm(cluster, tmp_path / "w", profile_with(tmp_path, mem_mb=too_much),
                             dispatch_tree, STOP_WITHIN_S)
    assert code != 0, log[-3000:]
    line = next(x for x in log.splitlines() if x.startswith("SLURM preflight:"))
    assert f"asks for mem_mb {too_much}" in line and f"has {cluster.site.node.memory_mb} MB" in line
    assert "lower `mem_mb` under default-resources in profiles/slurm/profile.yaml" in line
    assert not SUBMITTED.search(log) and not queued(cluster)


def test_dir_batch_runs_with_group_cores_fitted_to_the_two_cpu_node(cluster, dispatch_tree, tmp_path):
    before = set(queued(cluster))
    code, log = run_on_slurm(cluster, tmp_path / "w", PROFILE, dispatch_tree, COMPLETE_WITHIN_S)
    assert code == 0, log[-6000:] + cluster.logs()
    assert "group jobs ask for 2 CPUs instead of cores: 4 (fitted for this run" in log
    (job_id,) = SUBMITTED.findall(log)
    assert job_id not in before and queued(cluster)[job_id][0] == "COMPLETED"
    job = cluster.run("scontrol", "show", "job", job_id).stdout
    assert "NumCPUs=2 " in job and "TimeLimit=00:10:00" in job, job  # 2 at a time: 2 layers of 5 min
    plans = list((tmp_path / "w" / "reports").glob("*/plan.md"))
    hotspots = list((tmp_path / "w" / "reports").glob("*/hotspots/*.json"))
    assert len(plans) == 1 and len(hotspots) == DISPATCHES


def test_group_runtime_above_maxtime_fails_before_sbatch(cluster, dispatch_tree, tmp_path):
    # one layer (5 min) fits MaxTime 8 min, so the run starts; the group of 3 on 2 CPUs needs 2 layers
    code, log = run_on_slurm(cluster, tmp_path / "w", profile_with(tmp_path, slurm_partition="short"),
                             dispatch_tree, STOP_WITHIN_S)
    assert code != 0, log[-3000:]
    assert "Finished jobid" in log  # the dispatches checkpoint ran: the error comes after it
    line = next(x for x in log.splitlines() if x.startswith("SLURM preflight: group job"))
    assert "asks for runtime 10 min, above partition 'short' MaxTime 8 min" in line
    assert "`runtime` under set-resources: hotspots" in line
    assert not SUBMITTED.search(log)


def test_job_behind_a_drained_node_is_reported_then_cancelled(cluster, dispatch_tree, tmp_path):
    name = cluster.site.node.name
    assert cluster.run("scontrol", "update", f"NodeName={name}", "State=DRAIN", "Reason=kta test").returncode == 0
    try:
        code, log = run_on_slurm(cluster, tmp_path / "w", PROFILE, dispatch_tree, STOP_WITHIN_S,
                                 "slurm_pending_timeout=5")
    finally:
        cluster.run("scontrol", "update", f"NodeName={name}", "State=RESUME")
    assert code != 0, log[-3000:]
    (job_id,) = SUBMITTED.findall(log)
    warning = next(x for x in log.splitlines() if x.startswith(f"SLURM job {job_id} "))
    assert "is pending with reason" in warning and "every node of partition 'cpu' is down or drained" in warning
    assert f"SLURM job {job_id} (group job analysis_" in log and "cancelled: pending 5 s" in log
    assert log.index(warning) < log.index("cancelled: pending")
    assert queued(cluster)[job_id][0] == "CANCELLED"
