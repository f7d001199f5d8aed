"""What a SLURM cluster can give one job: partitions and nodes read from `scontrol show -o` or `sinfo -N`.

Parsing only (text in, dataclasses out); the commands are run by pipeline.slurm.hook. Formats:
`scontrol show partition -o` / `scontrol show node -o` print one `Key=Value ...` line per
partition or node (values may hold spaces, e.g. `OS=Linux 6.1 #1 SMP`, `Reason=down for work`);
`sinfo -h -N -o SINFO_FORMAT` is the fallback when scontrol cannot answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# sinfo fallback: partition (`*` marks the default), node, CPUs, memory (MB), GRES, time limit, availability.
SINFO_FORMAT = "%P|%N|%c|%m|%G|%l|%a"
UNLIMITED = ("UNLIMITED", "INFINITE", "NONE", "N/A", "")
# Node states in which a node runs nothing until an admin acts (scontrol's State=, sinfo's %t/%T).
UNUSABLE_STATES = ("DOWN", "DRAIN", "FAIL", "FUTURE", "INVAL", "MAINT", "NOT_RESPONDING")

_KEY = re.compile(r"\s+(?=[A-Za-z][A-Za-z0-9_/:.]*=)")
_GRES = re.compile(r"^(?P<name>[A-Za-z0-9_]+)(?::(?P<type>[^:(]+?))?(?::(?P<count>\d+)[KMGT]?)?(?:\(.*\))?$")


@dataclass(frozen=True)
class Node:
    """One node: usable CPUs and memory (MB, after MemSpecLimit), GPUs by type ("" = untyped), state."""

    name: str
    cpus: int
    memory_mb: int
    gpus: dict[str, int] = field(default_factory=dict)
    partitions: tuple[str, ...] = ()
    state: str = "IDLE"

    def gpu_count(self, model: str | None = None) -> int:
        if model:
            return self.gpus.get(model, 0)
        return sum(self.gpus.values())

    @property
    def usable(self) -> bool:
        """False when down, drained, failed... or not responding (the `*` suffix)."""
        state = self.state.upper()
        return "*" not in state and not any(word in UNUSABLE_STATES for word in re.split(r"[+~#$@%!^-]", state))


@dataclass(frozen=True)
class Partition:
    """One partition's own limits (None = unlimited) and its nodes."""

    name: str
    nodes: tuple[Node, ...]
    default: bool = False
    state: str = "UP"
    max_time_s: int | None = None
    max_mem_per_node_mb: int | None = None
    max_cpus_per_node: int | None = None


@dataclass(frozen=True)
class ClusterLimits:
    partitions: dict[str, Partition]

    @property
    def default_partition(self) -> str | None:
        return next((p.name for p in self.partitions.values() if p.default), None)


def key_values(line: str) -> dict[str, str]:
    """`A=1 B=x y C=3` -> {"A": "1", "B": "x y", "C": "3"} (a value runs until the next `Key=`)."""
    pairs = {}
    for token in _KEY.split(line.strip()):
        key, sep, value = token.partition("=")
        if sep:
            pairs[key] = value.strip()
    return pairs


def slurm_seconds(text: str) -> int | None:
    """A SLURM time (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`) in seconds; None = unlimited."""
    text = text.strip()
    if text.upper() in UNLIMITED:
        return None
    days, _, rest = text.rpartition("-") if "-" in text else ("", "", text)
    parts = [int(p) for p in rest.split(":")]
    if days:
        hours, minutes, seconds = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:
        hours, (minutes, seconds) = 0, (parts + [0])[:2]
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds


def _limit(text: str | None) -> int | None:
    if text is None or text.upper() in UNLIMITED:
        return None
    number = re.match(r"\d+", text)
    return int(number.group()) if number else None


def gres_gpus(text: str) -> dict[str, int]:
    """GPUs of a node's GRES (`gpu:2`, `gpu:mi300x:8(S:0-1)`, `gpu:a:2,gpu:b:1,shard:8`) by type."""
    gpus: dict[str, int] = {}
    for item in re.split(r",(?![^(]*\))", text or ""):
        match = _GRES.match(item.strip())
        if not match or match["name"] != "gpu":
            continue
        kind, count = match["type"] or "", match["count"]
        if kind.isdigit() and count is None:  # gpu:4 -> untyped, four
            kind, count = "", kind
        gpus[kind] = gpus.get(kind, 0) + int(count or 1)
    return gpus


def parse_nodes(text: str) -> list[Node]:
    """`scontrol show node -o` output -> nodes (CPUEfctv where SLURM reports it, else CPUTot)."""
    nodes = []
    for line in text.splitlines():
        fields = key_values(line)
        if "NodeName" not in fields:
            continue
        cpus = _limit(fields.get("CPUEfctv")) or _limit(fields.get("CPUTot")) or 0
        memory = (_limit(fields.get("RealMemory")) or 0) - (_limit(fields.get("MemSpecLimit")) or 0)
        partitions = tuple(p for p in fields.get("Partitions", "").split(",") if p)
        nodes.append(Node(fields["NodeName"], cpus, memory, gres_gpus(fields.get("Gres", "")),
                          partitions, fields.get("State", "UNKNOWN")))
    return nodes


def parse_scontrol(partitions_text: str, nodes_text: str) -> ClusterLimits:
    """Both `scontrol show partition -o` and `scontrol show node -o` outputs -> the cluster's limits."""
    nodes = parse_nodes(nodes_text)
    found = {}
    for line in partitions_text.splitlines():
        fields = key_values(line)
        name = fields.get("PartitionName")
        if not name:
            continue
        found[name] = Partition(
            name=name,
            nodes=tuple(n for n in nodes if name in n.partitions),
            default=fields.get("Default") == "YES",
            state=fields.get("State", "UP"),
            max_time_s=slurm_seconds(fields.get("MaxTime", "UNLIMITED")),
            max_mem_per_node_mb=_limit(fields.get("MaxMemPerNode")),
            max_cpus_per_node=_limit(fields.get("MaxCPUsPerNode")),
        )
    return ClusterLimits(found)


def parse_sinfo(text: str) -> ClusterLimits:
    """`sinfo -h -N -o SINFO_FORMAT` output -> limits (no per-partition memory or CPU caps there)."""
    rows: dict[str, dict] = {}
    for line in text.splitlines():
        cells = line.strip().split("|")
        if len(cells) < 7:
            continue
        part, name, cpus, memory, gres, time_limit, avail = (c.strip() for c in cells[:7])
        default, part = part.endswith("*"), part.rstrip("*")
        entry = rows.setdefault(part, {"nodes": [], "time": time_limit, "avail": avail, "default": default})
        entry["nodes"].append(Node(name, _limit(cpus) or 0, _limit(memory) or 0, gres_gpus(gres), (part,)))
    return ClusterLimits({
        part: Partition(part, tuple(entry["nodes"]), default=entry["default"],
                        state="UP" if entry["avail"].lower() == "up" else entry["avail"].upper(),
                        max_time_s=slurm_seconds(entry["time"]))
        for part, entry in rows.items()
    })
