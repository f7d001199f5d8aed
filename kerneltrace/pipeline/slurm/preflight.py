"""Preflight of SLURM requests: can any node of the partition ever run a job, and how wide may a group job be?

A request is what snakemake-executor-plugin-slurm 2.8 would pass to sbatch for a job (`request_of`
mirrors its choice of CPUs, memory and GPUs); `problem` compares it with a partition's nodes and
limits and words the one error line (rule, resource, request, largest node or limit, the profile
setting to change). `group_width` is the one safe fit: a group job runs its members at most
`cores` at a time, so fewer at a time is slower but the same work. Nothing else is ever changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kerneltrace.pipeline.slurm.limits import ClusterLimits, Node, Partition

PROFILE = "profiles/slurm/profile.yaml"


@dataclass(frozen=True)
class Request:
    """One sbatch request: CPUs, memory (MB per node; None = not asked), GPUs, minutes."""

    rule: str  # what the error names: "rule att_capture" or "group analysis_rope (rule hotspots)"
    partition: str | None
    cpus: int
    mem_mb: int | None = None
    gpus: int = 0
    gpu_model: str | None = None
    runtime_min: int | None = None
    cpu_setting: str = "threads"  # the profile key behind `cpus` (cores:, cpus_per_gpu, ...)
    rule_name: str = ""  # the rule whose set-resources entry holds the keys in `overridden`
    overridden: frozenset[str] = frozenset()

    def where(self, key: str) -> str:
        """Where `key` of this request is set in the profile (set-resources wins over default-resources)."""
        if key == "cores:":
            return f"`cores:` in {PROFILE}"
        section = f"set-resources: {self.rule_name}" if key in self.overridden else "default-resources"
        return f"`{key}` under {section} in {PROFILE}"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def gpus_asked(resources: Mapping[str, object]) -> tuple[int, str | None]:
    """GPUs and model the plugin asks for: `gpu` (+ `gpu_model`), else a `gres` of gpu[:type]:N."""
    model = resources.get("gpu_model") or None
    if _int(resources.get("gpu")):
        return int(resources["gpu"]), str(model) if model else None
    gres = str(resources.get("gres") or "")
    if gres.startswith("gpu"):
        parts = gres.split(":")
        count = int(parts[-1]) if parts[-1].isdigit() else 1
        kind = parts[1] if len(parts) == 3 else None
        return count, kind
    return (1, str(model)) if model else (0, None)


def request_of(rule: str, resources: Mapping[str, object], threads: int, *, grouped: bool,
               rule_name: str = "", overridden: frozenset[str] = frozenset()) -> Request:
    """The request of a job (or of a rule, from its resolved resources) as the plugin builds it."""
    gpus, model = gpus_asked(resources)
    per_task, per_gpu = _int(resources.get("cpus_per_task")), _int(resources.get("cpus_per_gpu"))
    if per_task is not None:
        cpus, setting = max(1, per_task), "cpus_per_task"
    elif gpus and per_gpu:
        cpus, setting = per_gpu * gpus, "cpus_per_gpu"
    else:
        cpus, setting = max(1, threads), "cores:" if grouped else "threads"
    mem = _int(resources.get("mem_mb"))
    per_cpu = _int(resources.get("mem_mb_per_cpu"))
    if per_cpu:
        mem = per_cpu * cpus
    partition = resources.get("slurm_partition")
    return Request(rule, str(partition) if partition else None, cpus, mem, gpus, model,
                   _int(resources.get("runtime")), setting, rule_name, frozenset(overridden))


def _cpu_cap(node: Node, part: Partition) -> int:
    return min(node.cpus, part.max_cpus_per_node or node.cpus)


def _mem_cap(node: Node, part: Partition) -> int:
    return min(node.memory_mb, part.max_mem_per_node_mb or node.memory_mb)


def fits(request: Request, node: Node, part: Partition) -> bool:
    return (request.cpus <= _cpu_cap(node, part)
            and (request.mem_mb is None or request.mem_mb <= _mem_cap(node, part))
            and request.gpus <= node.gpu_count(request.gpu_model))


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds / 60:.1f} min"


def problem(request: Request, limits: ClusterLimits) -> str | None:
    """None when some node of the partition can run the request, else the one-line error."""
    name = request.partition or limits.default_partition
    known = ", ".join(sorted(limits.partitions)) or "none"
    head = f"SLURM preflight: {request.rule}"
    if name is None:
        return (f"{head} names no partition and the cluster has no default one (partitions: "
                f"{known}); set {request.where('slurm_partition')}")
    part = limits.partitions.get(name)
    if part is None:
        return (f"{head} asks for partition '{name}', which does not exist (partitions: {known}); "
                f"set {request.where('slurm_partition')}")
    if not part.nodes:
        return f"{head} asks for partition '{name}', which has no nodes; set {request.where('slurm_partition')}"
    if request.runtime_min and part.max_time_s is not None and request.runtime_min * 60 > part.max_time_s:
        return (f"{head} asks for runtime {request.runtime_min} min, above partition '{name}' "
                f"MaxTime {_minutes(part.max_time_s)}; lower {request.where('runtime')} (or choose "
                f"a partition with a longer MaxTime)")
    if any(fits(request, node, part) for node in part.nodes):
        return None
    gpu_node = max(part.nodes, key=lambda n: n.gpu_count(request.gpu_model))
    cpu_node = max(part.nodes, key=lambda n: _cpu_cap(n, part))
    mem_node = max(part.nodes, key=lambda n: _mem_cap(n, part))
    largest = f"the largest node of partition '{name}'"
    if request.gpus > gpu_node.gpu_count(request.gpu_model):
        kind = f" {request.gpu_model}" if request.gpu_model else ""
        return (f"{head} asks for gpu {request.gpus} ({request.gpus}{kind} GPU(s)), but {largest} "
                f"has {gpu_node.gpu_count(request.gpu_model)}{kind} ({gpu_node.name}); lower "
                f"{request.where('gpu')}" + (f" or change {request.where('gpu_model')}" if kind else ""))
    if request.cpus > _cpu_cap(cpu_node, part):
        return (f"{head} asks for {request.cpus} CPUs ({request.cpu_setting}), but {largest} has "
                f"{_cpu_cap(cpu_node, part)} ({cpu_node.name}); lower {request.where(request.cpu_setting)}")
    if request.mem_mb is not None and request.mem_mb > _mem_cap(mem_node, part):
        return (f"{head} asks for mem_mb {request.mem_mb}, but {largest} has "
                f"{_mem_cap(mem_node, part)} MB ({mem_node.name}); lower {request.where('mem_mb')}")
    return (f"{head} asks for {request.cpus} CPUs, mem_mb {request.mem_mb} and gpu {request.gpus}, "
            f"which no single node of partition '{name}' has together; lower "
            f"{request.where(request.cpu_setting)}, {request.where('mem_mb')} or {request.where('gpu')}")


def group_width(member: Request, cores: int, limits: ClusterLimits) -> int:
    """How many members of a group may run at once (<= cores // member CPUs) on the partition's best node.

    0 when not even one member fits (then `problem(member)` says why).
    """
    part = limits.partitions.get(member.partition or limits.default_partition or "")
    if part is None or not part.nodes:
        return 0
    wanted = max(1, cores // member.cpus)
    best = 0
    for node in part.nodes:
        width = min(wanted, _cpu_cap(node, part) // member.cpus)
        if member.mem_mb:
            width = min(width, _mem_cap(node, part) // member.mem_mb)
        if member.gpus:
            width = min(width, node.gpu_count(member.gpu_model) // member.gpus)
        best = max(best, width)
    return best
