"""SLURM preflight, group fit and pending watch against recorded scontrol/sinfo/squeue outputs (no SLURM needed)."""

from __future__ import annotations

import asyncio
import re
import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.resources import Resources

from kerneltrace.pipeline.slurm import hook
from kerneltrace.pipeline.slurm.limits import (
    gres_gpus,
    parse_nodes,
    parse_scontrol,
    parse_sinfo,
    slurm_seconds,
)
from kerneltrace.pipeline.slurm.pending import PendingWatch, QueuedJob, parse_squeue, stuck_because
from kerneltrace.pipeline.slurm.preflight import Request, group_width, problem, request_of

RECORDED = Path(__file__).parent / "slurm_recorded"
REPO_ROOT = Path(__file__).resolve().parents[1]


def recorded(shape: str, kind: str) -> str:
    return (RECORDED / f"{shape}.{kind}.txt").read_text()


def scontrol(shape: str):
    return parse_scontrol(recorded(shape, "partition"), recorded(shape, "node"))


ONE_NODE = scontrol("debian-22.05-one-node")
MULTI = scontrol("multi-gpu")
OLDER = scontrol("older-sinfo-style")


def test_one_node_cluster_without_accounting():
    assert sorted(ONE_NODE.partitions) == ["cpu", "gpu"] and ONE_NODE.default_partition == "cpu"
    (node,) = ONE_NODE.partitions["cpu"].nodes
    assert (node.name, node.cpus, node.memory_mb, node.gpus) == ("vm", 2, 8000, {"": 1})
    assert ONE_NODE.partitions["gpu"].nodes == (node,) and node.usable
    assert ONE_NODE.partitions["cpu"].max_time_s is None  # MaxTime=UNLIMITED
    drained = parse_nodes(recorded("debian-22.05-one-node", "node-drained"))
    assert drained[0].state == "IDLE+DRAIN" and not drained[0].usable
    assert not replace(node, state="IDLE*").usable and replace(node, state="IDLE~").usable  # not responding / powered off


def test_sinfo_gives_the_same_nodes_as_scontrol():
    for shape in ("debian-22.05-one-node", "multi-gpu"):
        from_sinfo, from_scontrol = parse_sinfo(recorded(shape, "sinfo")), scontrol(shape)
        assert from_sinfo.default_partition == from_scontrol.default_partition
        assert sorted(from_sinfo.partitions) == sorted(from_scontrol.partitions)
        for name, part in from_scontrol.partitions.items():
            other = from_sinfo.partitions[name]
            assert other.max_time_s == part.max_time_s, name
            assert sorted((n.name, n.cpus, sorted(n.gpus.items())) for n in other.nodes) == sorted(
                (n.name, n.cpus, sorted(n.gpus.items())) for n in part.nodes)
    assert parse_sinfo(recorded("multi-gpu", "sinfo")).partitions["maint"].state == "DOWN"


def test_several_partitions_with_limits_and_typed_gpus():
    cpu, gpu, debug = (MULTI.partitions[p] for p in ("cpu", "gpu", "debug"))
    assert MULTI.default_partition == "cpu" and len(cpu.nodes) == 4
    assert cpu.max_time_s == 2 * 86400 and cpu.max_mem_per_node_mb == 256000
    assert {n.memory_mb for n in cpu.nodes} == {515000 - 15000}  # RealMemory - MemSpecLimit
    assert gpu.max_time_s == 12 * 3600 and gpu.max_cpus_per_node == 64 and debug.max_time_s == 30 * 60
    assert {n.name: n.gpus for n in gpu.nodes} == {
        "mi300x01": {"mi300x": 8}, "mi300x02": {"mi300x": 8},
        "mi25001": {"mi250": 4, "mi210": 2}, "mi25002": {"mi250": 4, "mi210": 2}}
    assert MULTI.partitions["maint"].state == "DOWN"


def test_older_layout_cputot_socket_bound_gres_and_reasons_with_spaces():
    gpu_a01, gpu_a02 = OLDER.partitions["gpu"].nodes
    assert (gpu_a01.cpus, gpu_a01.memory_mb, gpu_a01.gpus) == (128, 500000, {"mi250x": 8})
    assert gpu_a01.usable and not gpu_a02.usable  # State=DOWN*+DRAIN
    short = OLDER.partitions["short"]
    assert short.default and short.max_time_s == 3600 and short.max_mem_per_node_mb is None  # MaxMemPerCPU only
    assert OLDER.partitions["long"].max_time_s == 7 * 86400


@pytest.mark.parametrize(("text", "seconds"), [
    ("UNLIMITED", None), ("infinite", None), ("30", 1800), ("30:00", 1800), ("01:00:00", 3600),
    ("2-00:00:00", 172800), ("1-12", 129600), ("1-00:30", 88200)])
def test_slurm_time_formats(text, seconds):
    assert slurm_seconds(text) == seconds


def test_gres_strings():
    assert gres_gpus("(null)") == {}
    assert gres_gpus("gpu:4") == {"": 4} and gres_gpus("gpu") == {"": 1}
    assert gres_gpus("gpu:mi300x:8(S:0-1),shard:16") == {"mi300x": 8}
    assert gres_gpus("gpu:a:2(S:0,1),gpu:b:1") == {"a": 2, "b": 1}


def hotspots(**resources) -> Request:
    return request_of("the group jobs of rule hotspots", {"slurm_partition": "cpu", "mem_mb": 2000,
                                                          "runtime": 5, **resources}, 1,
                      grouped=True, rule_name="hotspots", overridden=frozenset({"runtime"}))


def gpu_job(**resources) -> Request:
    base = {"slurm_partition": "gpu", "gpu": 1, "cpus_per_gpu": 4, "mem_mb": 16000, "runtime": 60}
    return request_of("rule att_capture", {**base, **resources}, 1, grouped=False,
                      rule_name="att_capture", overridden=frozenset(base))


def test_group_cores_are_fitted_to_the_node_and_memory_counts_per_member():
    member = hotspots()
    assert (member.cpus, member.mem_mb) == (1, 2000)
    assert group_width(member, 4, ONE_NODE) == 2  # 2 CPUs
    assert group_width(hotspots(mem_mb=5000), 4, ONE_NODE) == 1  # 8000 MB holds one
    assert group_width(hotspots(mem_mb=9000), 4, ONE_NODE) == 0
    assert group_width(hotspots(), 4, MULTI) == 4 and group_width(hotspots(), 200, MULTI) == 128


def test_group_asking_three_cpus_of_a_two_cpu_node_names_cores():
    error = problem(Request("the group jobs of rule hotspots", "cpu", 3, 6000, cpu_setting="cores:"), ONE_NODE)
    assert error == ("SLURM preflight: the group jobs of rule hotspots asks for 3 CPUs (cores:), but "
                     "the largest node of partition 'cpu' has 2 (vm); lower `cores:` in "
                     "profiles/slurm/profile.yaml")


def test_memory_above_every_node_names_mem_mb_and_where_it_is_set():
    error = problem(hotspots(mem_mb=9000), ONE_NODE)
    assert "mem_mb 9000" in error and "has 8000 MB (vm)" in error
    assert error.endswith("lower `mem_mb` under default-resources in profiles/slurm/profile.yaml")
    # MaxMemPerNode of the partition caps below the node's memory
    assert "has 256000 MB" in problem(hotspots(mem_mb=300000), MULTI)
    assert problem(hotspots(mem_mb=250000), MULTI) is None


def test_gpus_via_gres_count_and_model():
    small = {"cpus_per_gpu": 1, "mem_mb": 4000}
    assert problem(gpu_job(**small), ONE_NODE) is None is problem(gpu_job(gpu=8, gpu_model="mi300x", cpus_per_gpu=8), MULTI)
    error = problem(gpu_job(gpu=2, **small), ONE_NODE)
    assert "asks for gpu 2" in error and "has 1 (vm)" in error and "`gpu` under set-resources: att_capture" in error
    error = problem(gpu_job(gpu=5, gpu_model="mi250", cpus_per_gpu=1), MULTI)
    assert "has 4 mi250 (mi25001)" in error and "`gpu_model`" in error
    gres = request_of("rule x", {"slurm_partition": "gpu", "gres": "gpu:mi210:2", "cpus_per_gpu": 1}, 1, grouped=False)
    assert (gres.gpus, gres.gpu_model) == (2, "mi210") and problem(gres, MULTI) is None


def test_cpus_per_gpu_above_the_partitions_cpu_cap():
    error = problem(gpu_job(gpu=8, gpu_model="mi300x", cpus_per_gpu=12), MULTI)  # 96 > MaxCPUsPerNode 64
    assert "asks for 96 CPUs (cpus_per_gpu)" in error and "has 64 (mi300x01)" in error
    assert "`cpus_per_gpu` under set-resources: att_capture" in error
    assert "CPUs (cpus_per_gpu)" in problem(gpu_job(cpus_per_gpu=4), ONE_NODE)  # 4 CPUs on a 2-CPU node


def test_runtime_above_maxtime_and_missing_partitions():
    error = problem(hotspots(slurm_partition="debug", runtime=45), MULTI)
    assert error == ("SLURM preflight: the group jobs of rule hotspots asks for runtime 45 min, above "
                     "partition 'debug' MaxTime 30 min; lower `runtime` under set-resources: hotspots "
                     "in profiles/slurm/profile.yaml (or choose a partition with a longer MaxTime)")
    error = problem(gpu_job(slurm_partition="mi300"), ONE_NODE)
    assert "partition 'mi300', which does not exist (partitions: cpu, gpu)" in error
    assert "`slurm_partition` under set-resources: att_capture" in error
    assert problem(hotspots(slurm_partition=None), ONE_NODE) is None  # the default partition


def test_pending_reasons_that_cannot_clear():
    config, behind_drained = parse_squeue(recorded("debian-22.05-one-node", "squeue"))
    assert (config.reason, behind_drained.partition) == ("PartitionConfig", "gpu")
    assert "never meet" in stuck_because(config, partition_usable=True, user_has_running=True)
    assert stuck_because(behind_drained, partition_usable=True, user_has_running=False) is None
    assert "down or drained" in stuck_because(behind_drained, partition_usable=False, user_has_running=True)

    def why(reason: str, running: bool = False) -> str | None:
        return stuck_because(QueuedJob("1", "PENDING", reason, "cpu"), True, running)

    assert why("AssocMaxJobsLimit") and why("AssocMaxJobsLimit", running=True) is None
    assert why("QOSMaxCpuPerJobLimit", running=True) and why("PartitionTimeLimit", running=True)
    assert why("JobHeldAdmin", running=True) and why("InvalidAccount", running=True)
    assert not any(why(r) for r in ("Resources", "Priority", "Dependency", "None", "AssocGrpCpuLimit"))
    assert stuck_because(QueuedJob("1", "RUNNING", "None", "cpu"), False, False) is None


def test_pending_watch_reports_once_and_cancels_after_the_timeout():
    watch = PendingWatch(timeout_s=30)
    assert watch.observe(100, {"7": "PartitionConfig"}) == (["7"], [])
    assert watch.observe(110, {"7": "PartitionConfig"}) == ([], []) and watch.remaining(110) == 20
    assert watch.observe(125, {"7": "PartitionConfig", "8": "JobHeldAdmin"}) == (["8"], [])
    assert watch.observe(130, {"7": "PartitionConfig", "8": "JobHeldAdmin"}) == ([], ["7"])
    assert watch.observe(140, {}) == ([], []) and watch.remaining(140) is None  # started: forgotten


def test_cluster_rules_are_exactly_the_rules_without_localrule():
    text = "\n".join(p.read_text() for p in sorted((REPO_ROOT / "workflow" / "rules").glob("*.smk")))
    blocks = re.split(r"^(?=(?:rule|checkpoint) )", text, flags=re.M)
    remote = {re.match(r"\w+ (\w+):", b).group(1) for b in blocks
              if re.match(r"(rule|checkpoint) \w+:", b) and "localrule: True" not in b}
    assert remote == set(hook.cluster_rules({"cmd", "dir"}, pmc_enabled=True))
    assert hook.cluster_rules({"dir"}, pmc_enabled=True) == ["hotspots"]
    assert "pmc_capture" not in hook.cluster_rules({"cmd"}, pmc_enabled=False)


class FakeRule(SimpleNamespace):
    pass


def fake_workflow(cores: int, **rules: dict) -> SimpleNamespace:
    made = {name: FakeRule(name=name, group=spec.pop("group", None), resources=Resources.from_mapping(spec))
            for name, spec in rules.items()}
    return SimpleNamespace(
        resource_settings=SimpleNamespace(cores=cores, overwrite_resources={"hotspots": {"runtime": 5}}),
        global_resources={"_cores": cores}, get_rule=made.__getitem__, is_rule=made.__contains__)


def test_preflight_fits_group_cores_and_says_so():
    workflow = fake_workflow(4, hotspots={"group": "analysis_{run}", "slurm_partition": "cpu",
                                          "mem_mb": 2000, "runtime": 5, "_cores": 1})
    said = []
    hook.preflight(workflow, ["hotspots"], ONE_NODE, said.append)
    assert workflow.resource_settings.cores == 2 and workflow.global_resources["_cores"] == 2
    (line,) = said
    assert "group jobs ask for 2 CPUs instead of cores: 4" in line and "set `cores: 2`" in line
    hook.preflight(workflow, ["hotspots"], ONE_NODE, said.append)  # already fitted: silent
    assert len(said) == 1


def test_preflight_stops_on_memory_and_on_gpu_rules_of_the_run():
    workflow = fake_workflow(4, hotspots={"group": "analysis_{run}", "slurm_partition": "cpu",
                                          "mem_mb": 9000, "runtime": 5, "_cores": 1},
                             att_capture={"slurm_partition": "gpu", "gpu": 1, "cpus_per_gpu": 4,
                                          "mem_mb": 16000, "runtime": 120, "_cores": 1})
    with pytest.raises(hook.SlurmPreflightError, match=r"rule hotspots asks for mem_mb 9000.*`mem_mb`"):
        hook.preflight(workflow, ["hotspots"], ONE_NODE, print)
    with pytest.raises(hook.SlurmPreflightError, match=r"rule att_capture asks for 4 CPUs \(cpus_per_gpu\)"):
        hook.preflight(workflow, ["att_capture"], ONE_NODE, print)
    hook.preflight(workflow, ["att_capture"], MULTI, print)  # fits a mi300x node


class FakeExecutor:
    def __init__(self):
        self.logger = SimpleNamespace(warnings=[], errors=[])
        self.logger.warning, self.logger.error = self.logger.warnings.append, self.logger.errors.append
        self.failed, self.checked, self.next_seconds_between_status_checks = [], [], 42
        self.failed_infos = []

    async def check_active_jobs(self, active_jobs):
        self.checked.append([j.external_jobid for j in active_jobs])
        for job in active_jobs:
            yield job

    def report_job_error(self, info, msg=None):
        self.failed.append((info.external_jobid, msg))
        self.failed_infos.append((info, msg))


def test_pending_watch_on_the_executor_reports_then_cancels_and_fails_the_job():
    executor, commands, now = FakeExecutor(), [], [1000.0]
    squeue = recorded("debian-22.05-one-node", "squeue")
    drained = recorded("debian-22.05-one-node", "node-drained")

    def run(argv):
        commands.append(argv)
        out = {"squeue": squeue, "scontrol": drained}.get(argv[0], "")
        return subprocess.CompletedProcess(argv, 0, out, "")

    hook.watch_pending(executor, PendingWatch(timeout_s=20), run, clock=lambda: now[0])
    job = SimpleNamespace(is_group=lambda: True, groupid="analysis_rope")
    active = [SimpleNamespace(external_jobid=i, job=job) for i in ("5", "6", "99")]

    async def check():
        return [j.external_jobid async for j in executor.check_active_jobs(active)]

    assert asyncio.run(check()) == ["5", "6", "99"]
    assert len(executor.logger.warnings) == 2 and "'PartitionConfig'" in executor.logger.warnings[0]
    assert "every node of partition 'gpu' is down or drained" in executor.logger.warnings[1]
    assert executor.next_seconds_between_status_checks == 21  # the next check comes when 5 and 6 are due
    now[0] += 21
    assert asyncio.run(check()) == ["99"]
    assert ["scancel", "5"] in commands and ["scancel", "6"] in commands
    assert [i for i, _ in executor.failed] == ["5", "6"] and executor.checked[-1] == ["99"]
    assert "cancelled: pending 20 s with reason 'PartitionConfig'" in executor.failed[0][1]
    assert executor.logger.errors == [msg for _, msg in executor.failed]


class FakeGroupJob:
    """What check_before_submission reads of a Snakemake GroupJob (its resources after layering)."""

    groupid, rules = "analysis_rope", ["hotspots", "hotspots", "hotspots"]

    def __init__(self, runtime: int):
        self.resources = SimpleNamespace(items=lambda: {"_cores": 2, "mem_mb": 4000, "runtime": runtime,
                                                        "slurm_partition": "debug"}.items())
        self.threads = 2

    def is_group(self):
        return True

    def __iter__(self):
        return iter(range(3))


def test_group_job_is_checked_exactly_right_before_sbatch():
    executor, submitted = FakeExecutor(), []
    executor.run_jobs = submitted.extend
    workflow = SimpleNamespace(resource_settings=SimpleNamespace(overwrite_resources={"hotspots": {"runtime": 5}}))
    hook.check_before_submission(workflow, executor, MULTI)
    short, long = FakeGroupJob(runtime=20), FakeGroupJob(runtime=40)
    executor.run_jobs([short, long])
    assert submitted == [short]  # only the fitting one reaches the plugin's run_jobs
    ((refused, message),) = [(info, msg) for info, msg in executor.failed_infos]
    assert refused.job is long and executor.logger.errors == [message]
    assert message.startswith("SLURM preflight: group job analysis_rope (3 jobs of rule hotspots) "
                              "asks for runtime 40 min, above partition 'debug' MaxTime 30 min")


def test_preflight_warns_when_the_partition_runs_nothing_now():
    drained = parse_scontrol(recorded("debian-22.05-one-node", "partition"),
                             recorded("debian-22.05-one-node", "node-drained"))
    said = []
    workflow = fake_workflow(2, hotspots={"group": "analysis_{run}", "slurm_partition": "cpu",
                                          "mem_mb": 2000, "runtime": 5, "_cores": 1})
    hook.preflight(workflow, ["hotspots"], drained, said.append)
    assert said == ["SLURM preflight: partition 'cpu' has no node up (all down or drained): jobs of "
                    "rule hotspots wait until an admin changes it, and are cancelled after "
                    "slurm_pending_timeout"]
    maint = request_of("rule x", {"slurm_partition": "maint", "runtime": 5}, 1, grouped=False)
    assert "is DOWN" in hook.idle_notice(maint, MULTI) and hook.idle_notice(gpu_job(), MULTI) is None


def test_rules_with_job_dependent_resources_are_left_to_the_check_before_sbatch():
    workflow = fake_workflow(4, hotspots={"slurm_partition": lambda wildcards: "cpu", "mem_mb": 900000})
    hook.preflight(workflow, ["hotspots"], ONE_NODE, print)  # no error: known only per job
    assert hook.rule_request(workflow, workflow.get_rule("hotspots")) is None


def test_a_failing_pending_watch_never_stops_the_plugins_status_check():
    executor = FakeExecutor()

    def broken(argv):
        raise RuntimeError("squeue exploded")

    hook.watch_pending(executor, PendingWatch(timeout_s=5), broken)
    active = [SimpleNamespace(external_jobid="1", job=None)]

    async def check():
        return [j.external_jobid async for j in executor.check_active_jobs(active)]

    assert asyncio.run(check()) == ["1"] and asyncio.run(check()) == ["1"]
    assert len(executor.logger.warnings) == 1 and "squeue exploded" in executor.logger.warnings[0]
