"""The SLURM checks hooked into a Snakemake run (from the Snakefile's onstart): preflight, fit, pending watch.

`install_slurm_checks(workflow, ...)` does nothing unless the executor is snakemake-executor-plugin-
slurm. Then, before the first submission: it reads the cluster's limits once (scontrol, else
sinfo), fits `cores` of group jobs down to what the partition's best node holds (said on the
console), and checks every rule this run submits (grouped ones as the group job asks) — a request
that can never fit raises SlurmPreflightError (one line). On the executor instance it wraps `run_jobs`
(each job's exact request checked again right before sbatch: group jobs formed after a checkpoint,
their summed runtime) and `check_active_jobs` (every status check: jobs pending for a reason that
cannot clear are reported, and cancelled and failed after the timeout). Both are methods of the
executor-plugin interface the scheduler calls; nothing of the plugin's own logic is replaced.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kerneltrace.pipeline.slurm.limits import (
    SINFO_FORMAT,
    ClusterLimits,
    parse_nodes,
    parse_scontrol,
    parse_sinfo,
)
from kerneltrace.pipeline.slurm.pending import (
    NODE_NOT_AVAILABLE,
    SQUEUE_FORMAT,
    PendingWatch,
    parse_squeue,
    reason_code,
    stuck_because,
)
from kerneltrace.pipeline.slurm.preflight import PROFILE, Request, group_width, problem, request_of

# Rules that run as cluster jobs, by the kind of run that has them; every other rule is a
# localrule (tests/test_slurm_preflight.py keeps this true against workflow/rules/*.smk).
CLUSTER_RULES = {"dir": ("hotspots",), "cmd": ("discover_kernels", "att_capture", "hotspots")}
PMC_RULES = ("pmc_capture",)
COMMAND_TIMEOUT_S = 30

Runner = Callable[[list[str]], subprocess.CompletedProcess]


class SlurmPreflightError(Exception):
    """A request no node can ever run; Snakemake prints it as one line and stops before any submission."""


@dataclass
class UnsubmittedJob:
    """The executor interface's job record (SubmittedJobInfo's fields) for a job refused before sbatch."""

    job: object
    external_jobid: str | None = None
    aux: dict | None = None


def cluster_rules(modes: Iterable[str], pmc_enabled: bool) -> list[str]:
    """The rules of this run that go to SLURM (the runs' modes; PMC capture only with cmd runs)."""
    modes = set(modes)
    names = [rule for mode in sorted(modes) for rule in CLUSTER_RULES.get(mode, ())]
    if pmc_enabled and "cmd" in modes:
        names += PMC_RULES
    return list(dict.fromkeys(names))


def run_command(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_S)


def read_limits(run: Runner = run_command) -> tuple[ClusterLimits | None, str]:
    """The cluster's limits and where they came from, or (None, why they could not be read)."""
    why = ""
    try:
        parts = run(["scontrol", "show", "partition", "-o"])
        nodes = run(["scontrol", "show", "node", "-o"])
        if parts.returncode == 0 and nodes.returncode == 0:
            limits = parse_scontrol(parts.stdout, nodes.stdout)
            if limits.partitions:
                return limits, "scontrol"
        why = (parts.stderr or nodes.stderr).strip() or "scontrol listed no partition"
    except (OSError, subprocess.TimeoutExpired) as err:
        why = str(err)
    try:
        info = run(["sinfo", "-h", "-N", "-o", SINFO_FORMAT])
        if info.returncode == 0 and (limits := parse_sinfo(info.stdout)).partitions:
            return limits, "sinfo"
        why += f"; sinfo: {info.stderr.strip() or 'no partition'}"
    except (OSError, subprocess.TimeoutExpired) as err:
        why += f"; sinfo: {err}"
    return None, why


def _plain(resource: object) -> object:
    """A rule-level Snakemake Resource as a value: its value, the raw string of a wildcard-free
    string resource, else None (evaluated per job; run_jobs checks it then)."""
    if not hasattr(resource, "is_evaluable"):
        return resource
    if not resource.is_evaluable():
        return resource.value
    raw = getattr(resource, "raw", None)
    return raw if isinstance(raw, str) and "{" not in raw else None


# Keys a rule-level request needs as plain values; when one is a function of the job, the rule is
# left to the exact check before sbatch.
REQUEST_KEYS = ("slurm_partition", "mem_mb", "mem_mb_per_cpu", "gpu", "gpu_model", "gres",
                "cpus_per_task", "cpus_per_gpu", "runtime", "_cores")


def rule_request(workflow, rule) -> Request | None:
    """The request of a rule's jobs from its resources (profile applied), None if job-dependent."""
    resources = {name: _plain(value) for name, value in rule.resources.items()}
    if any(key in rule.resources and resources[key] is None for key in REQUEST_KEYS):
        return None
    cores = resources.get("_cores")
    return request_of(f"rule {rule.name}", resources, cores if isinstance(cores, int) else 1,
                      grouped=False, rule_name=rule.name, overridden=_overridden(workflow, rule.name))


def job_request(workflow, job) -> Request:
    """The exact request of a job or group job about to be submitted."""
    resources = dict(job.resources.items())
    if job.is_group():
        rules = sorted(set(job.rules))
        label = f"group job {job.groupid} ({len(list(job))} jobs of rule {', '.join(rules)})"
        return request_of(label, resources, job.threads, grouped=True, rule_name=rules[0],
                          overridden=_overridden(workflow, rules[0]))
    return request_of(f"rule {job.rule.name}", resources, job.threads, grouped=False,
                      rule_name=job.rule.name, overridden=_overridden(workflow, job.rule.name))


def _overridden(workflow, rule_name: str) -> frozenset[str]:
    return frozenset(workflow.resource_settings.overwrite_resources.get(rule_name, {}))


def idle_notice(request: Request, limits: ClusterLimits) -> str | None:
    """A warning when the partition exists but runs nothing now (down, or every node down/drained)."""
    part = limits.partitions.get(request.partition or limits.default_partition or "")
    if part is None or not part.nodes:
        return None
    if part.state.upper() != "UP":
        now = f"is {part.state}"
    elif not any(node.usable for node in part.nodes):
        now = "has no node up (all down or drained)"
    else:
        return None
    return (f"SLURM preflight: partition '{part.name}' {now}: jobs of {request.rule} wait until an "
            f"admin changes it, and are cancelled after slurm_pending_timeout")


def preflight(workflow, rule_names: Iterable[str], limits: ClusterLimits, log: Callable[[str], None]) -> None:
    """Fit group cores, then raise SlurmPreflightError for the first rule that can never run."""
    rules = [workflow.get_rule(name) for name in rule_names if workflow.is_rule(name)]
    cores = workflow.resource_settings.cores
    for rule in rules:
        member = rule_request(workflow, rule)
        if member is None:
            continue
        if notice := idle_notice(member, limits):
            log(notice)
        if rule.group is None or not isinstance(cores, int):
            if error := problem(member, limits):
                raise SlurmPreflightError(error)
            continue
        width = group_width(member, cores, limits)
        if width == 0:
            raise SlurmPreflightError(problem(member, limits) or f"SLURM preflight: rule {rule.name} fits no node")
        if width * member.cpus < cores:
            part = member.partition or limits.default_partition
            log(f"SLURM preflight: the best node of partition '{part}' runs {width} job(s) of rule "
                f"{rule.name} at a time ({member.cpus} CPU(s), mem_mb {member.mem_mb} each): group "
                f"jobs ask for {width * member.cpus} CPUs instead of cores: {cores} (fitted for this "
                f"run; set `cores: {width * member.cpus}` in {PROFILE} to make it the default)")
            cores = width * member.cpus
            workflow.resource_settings.cores = cores
            workflow.global_resources["_cores"] = cores
        group = Request(f"the group jobs of rule {rule.name}", member.partition,
                        width * member.cpus, member.mem_mb and width * member.mem_mb, 0, None,
                        member.runtime_min, "cores:", rule.name, member.overridden)
        if error := problem(group, limits):
            raise SlurmPreflightError(error)


def watch_pending(executor, watch: PendingWatch, run: Runner = run_command,
                  clock: Callable[[], float] = time.monotonic) -> None:
    """Wrap the executor's status check: stuck jobs reported, then cancelled and failed when due."""
    original = executor.check_active_jobs
    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # no passwd entry (some containers): squeue -u takes the uid too
        user = str(os.getuid())
    failed_once = []

    def usable_partitions() -> dict[str, bool]:
        try:
            done = run(["scontrol", "show", "node", "-o"])
        except (OSError, subprocess.TimeoutExpired):
            return {}
        if done.returncode:
            return {}
        usable: dict[str, bool] = {}
        for node in parse_nodes(done.stdout):
            for part in node.partitions:
                usable[part] = usable.get(part, False) or node.usable
        return usable

    def cancel_stuck(active: list) -> set[str]:
        try:
            done = run(["squeue", "-h", "-u", user, "-t", "PENDING,RUNNING", "-o", SQUEUE_FORMAT])
        except (OSError, subprocess.TimeoutExpired):
            return set()
        if done.returncode:
            return set()
        queue = parse_squeue(done.stdout)
        ours = {info.external_jobid: info for info in active}
        running = any(q.state == "RUNNING" for q in queue)
        mine = [q for q in queue if q.job_id in ours]
        usable = (usable_partitions() if any(reason_code(q.reason).startswith(NODE_NOT_AVAILABLE)
                                             for q in mine) else {})
        why = {q.job_id: w for q in mine
               if (w := stuck_because(q, usable.get(q.partition, True), running))}
        reasons = {q.job_id: q.reason for q in mine}
        report, due = watch.observe(clock(), {i: f"{reasons[i]} ({w})" for i, w in why.items()})
        for job_id in report:
            executor.logger.warning(
                f"SLURM job {job_id} ({_name(ours[job_id].job)}) is pending with reason "
                f"'{reasons[job_id]}': {why[job_id]}. It is cancelled after "
                f"{watch.timeout_s:g} s of this (config slurm_pending_timeout) unless it starts.")
        for job_id in due:
            run(["scancel", job_id])
            watch.forget(job_id)
            message = (f"SLURM job {job_id} ({_name(ours[job_id].job)}) cancelled: pending "
                       f"{watch.timeout_s:g} s with reason '{reasons[job_id]}' ({why[job_id]})")
            executor.logger.error(message)  # Snakemake's error block of a group drops the message
            executor.report_job_error(ours[job_id], msg=message)
        return set(due)

    async def check_active_jobs(active_jobs):
        cancelled: set[str] = set()
        try:
            if active_jobs:
                cancelled = cancel_stuck(list(active_jobs))
        except Exception as err:
            if not failed_once:
                failed_once.append(err)
                executor.logger.warning(f"SLURM pending watch stopped working ({err!r}); status "
                                        f"checks go on without it")
        async for info in original([j for j in active_jobs if j.external_jobid not in cancelled]):
            yield info
        left = watch.remaining(clock())
        if left is not None:  # check again no later than when the first stuck job is due
            executor.next_seconds_between_status_checks = max(
                1, min(executor.next_seconds_between_status_checks, left + 1))

    executor.check_active_jobs = check_active_jobs


def check_before_submission(workflow, executor, limits: ClusterLimits) -> None:
    """Wrap run_jobs: a job whose exact request can never fit fails at once instead of queueing."""
    original = executor.run_jobs

    def run_jobs(jobs):
        fitting = []
        for job in jobs:
            error = problem(job_request(workflow, job), limits)
            if error:
                executor.logger.error(error)
                executor.report_job_error(UnsubmittedJob(job), msg=error)
            else:
                fitting.append(job)
        if fitting:
            original(fitting)

    executor.run_jobs = run_jobs


def _name(job) -> str:
    return f"group job {job.groupid}" if job.is_group() else f"rule {job.rule.name}"


def install_slurm_checks(workflow, rule_names: Iterable[str], pending_timeout_s: float,
                         run: Runner = run_command) -> None:
    """From the Snakefile's onstart; a no-op unless this run submits to SLURM."""
    plugin = getattr(workflow, "executor_plugin", None)
    if plugin is None or plugin.name != "slurm" or workflow.dryrun:
        return
    executor = getattr(getattr(workflow, "scheduler", None), "_executor", None)
    log = executor.logger.info if executor is not None else print
    limits, source = read_limits(run)
    if limits is None:
        log(f"SLURM preflight skipped: the cluster's limits could not be read ({source})")
    else:
        preflight(workflow, rule_names, limits, log)
    if executor is None:
        return
    if limits is not None:
        check_before_submission(workflow, executor, limits)
    watch_pending(executor, PendingWatch(pending_timeout_s), run)

