"""profiles/slurm and the test cluster's slurm.conf agree with each other and with the rules (no SLURM needed)."""

from __future__ import annotations

import re
from pathlib import Path

import slurm_cluster
import yaml
from slurm_cluster import Node, Site, install_packages, slurm_conf

REPO_ROOT = Path(__file__).resolve().parents[1]
PROFILE = yaml.safe_load((REPO_ROOT / "profiles" / "slurm" / "profile.yaml").read_text())
GPU_RULES = ("discover_kernels", "att_capture", "pmc_capture")


def site(tmp_path: Path) -> Site:
    return Site(tmp_path, Node("n1", cpus=4, memory_mb=32000), ctld_port=7001, slurmd_port=7002)


def test_status_from_squeue_and_finished_jobs_stay_visible_long_enough(tmp_path):
    assert PROFILE["slurm-status-command"] == "squeue"
    first_check = PROFILE["slurm-init-seconds-before-status-checks"]
    min_job_age = int(re.search(r"^MinJobAge=(\d+)$", slurm_conf(site(tmp_path)), re.M).group(1))
    # The plugin falls back to sacct when MinJobAge < 3 x the first check; SLURM's default is 300 s.
    assert 3 * first_check <= min(min_job_age, 300)


def test_gpu_block_is_written_once_and_shared_by_every_capture_rule():
    resources = PROFILE["set-resources"]
    block = resources["discover_kernels"]
    assert block["slurm_partition"] == "gpu" and block["gpu"] == 1
    for rule in GPU_RULES:
        for key in ("slurm_partition", "gpu", "cpus_per_gpu", "mem_mb"):
            assert resources[rule][key] == block[key], (rule, key)
    text = (REPO_ROOT / "profiles" / "slurm" / "profile.yaml").read_text()
    assert text.count("slurm_partition: gpu") == 1 and text.count("<<: *gpu") == len(GPU_RULES) - 1


def test_group_components_name_the_group_of_the_hotspot_rule():
    rules = (REPO_ROOT / "workflow" / "rules" / "analysis.smk").read_text()
    group = re.search(r"rule hotspots:.*?\n    group:\n        \"([^\"]+)\"", rules, re.S).group(1)
    assert "{run}" in group  # one group per run (groups spanning runs break on checkpoint updates)
    components = dict(item.split("=") for item in PROFILE["group-components"])
    assert int(components[group]) > 1
    # A group job asks for `cores` CPUs at most, a GPU job for the GPU block's memory: the test
    # cluster's node is declared that big.
    assert PROFILE["cores"] <= slurm_cluster.MIN_CPUS
    assert PROFILE["set-resources"]["discover_kernels"]["mem_mb"] <= slurm_cluster.MIN_MEMORY_MB


def test_test_cluster_has_cpu_and_gpu_partitions_on_one_node_without_accounting(tmp_path):
    conf = slurm_conf(site(tmp_path))
    assert "PartitionName=cpu Nodes=n1 Default=YES" in conf and "PartitionName=gpu Nodes=n1" in conf
    assert "AccountingStorageType=accounting_storage/none" in conf
    assert "NodeName=n1 NodeAddr=127.0.0.1 CPUs=4 RealMemory=32000 Gres=gpu:1" in conf
    assert f"AuthInfo=socket={tmp_path}/run/munge.socket" in conf
    assert PROFILE["default-resources"]["slurm_partition"] == "cpu"


def test_packages_are_not_installed_without_root(monkeypatch):
    monkeypatch.setattr(slurm_cluster.os, "geteuid", lambda: 1000)
    assert install_packages() == "not root"
