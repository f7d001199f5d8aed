"""Single-pass PMC job planning: pack the requested metrics' counters into jobs that each fit one hardware pass."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kerneltrace.counters import table
from kerneltrace.errors import InputError


@dataclass(frozen=True)
class PmcJob:
    """One rocprofv3 job = one application run = one hardware pass."""

    counters: tuple[str, ...]  # rocprofv3 names, e.g. "TCC_HIT_sum"
    metrics: tuple[str, ...]  # metrics whose counters all sit in this job
    path_kind: str  # "read", "write" or "neutral"

    def block_usage(self) -> dict[str, int]:
        return block_usage(self.counters)


def block_usage(counters: Iterable[str]) -> dict[str, int]:
    """Hardware events used per block. '_sum' and the raw name are one event, counted once."""
    events = {table.strip_sum(name) for name in counters}
    usage: Counter[str] = Counter()
    for event in events:
        block = table.block_of(event)
        if block is None:
            raise InputError(
                f"counter {event!r} belongs to no known hardware block",
                "counter plan",
                f"use counters whose prefix is one of {sorted(table.BLOCK_LIMITS)}",
            )
        usage[block] += 1
    return dict(usage)


def fits_one_pass(counters: Iterable[str]) -> bool:
    """True when no block exceeds its per-pass limit."""
    return all(n <= table.BLOCK_LIMITS[block] for block, n in block_usage(counters).items())


def _path_kind(keys: Iterable[str]) -> str:
    keys = set(keys)
    if keys & table.FETCH_KEYS and keys & table.WRITE_KEYS:
        return "mixed"
    if keys & table.FETCH_KEYS:
        return "read"
    if keys & table.WRITE_KEYS:
        return "write"
    return "neutral"


@dataclass
class _OpenJob:
    keys: list[str]
    metrics: list[str]
    kind: str


def plan_jobs(arch: str, metrics: Sequence[str] | None = None) -> list[PmcJob]:
    """Jobs covering every requested metric; each job fits one pass and keeps read and write apart.

    A metric's counters always land in the same job, so every metric can be computed per dispatch
    within one run. Metrics that do not exist on the arch are skipped only when they come from the
    default set; an explicitly requested one is an error.
    """
    if table.arch_family(arch) is None or arch.split(":")[0] not in table.SUPPORTED_ARCHES:
        raise InputError(
            f"no counter table for arch {arch!r}",
            "--arch",
            f"use one of {', '.join(table.SUPPORTED_ARCHES)}",
        )
    explicit = metrics is not None
    requested = list(dict.fromkeys(metrics if explicit else table.DEFAULT_METRICS))
    groups: list[tuple[str, tuple[str, ...]]] = []
    for metric in requested:
        if metric not in table.METRICS:
            raise InputError(
                f"unknown metric {metric!r}", "--metrics", f"choose from {', '.join(table.METRICS)}"
            )
        keys = table.metric_keys(metric, arch)
        if keys is None:
            if explicit:
                raise InputError(
                    f"metric {metric!r} has no counters on {arch}",
                    "--metrics",
                    "drop it for this arch",
                )
            continue
        groups.append((metric, keys))

    # Read- and write-path groups first (they constrain the packing), largest TCC demand first;
    # each group goes to the fitting job it shares most counters with.
    def order(group: tuple[str, tuple[str, ...]]) -> tuple[bool, int]:
        tcc = sum(1 for key in group[1] if table.block_of(table.counter_base(key, arch) or "") == "TCC")
        return (_path_kind(group[1]) == "neutral", -tcc)

    jobs: list[_OpenJob] = []
    for metric, keys in sorted(groups, key=order):
        kind = _path_kind(keys)
        if kind == "mixed" or not _fits(keys, arch):
            raise InputError(
                f"metric {metric!r} cannot be collected in one pass on {arch}",
                "counter table",
                "split the metric definition",
            )
        candidates = [
            job
            for job in jobs
            if {kind, job.kind} != {"read", "write"} and _fits(job.keys + list(keys), arch)
        ]
        if not candidates:
            jobs.append(_OpenJob(list(keys), [metric], kind))
            continue
        best = min(candidates, key=lambda job: len(set(keys) - set(job.keys)))
        best.keys = list(dict.fromkeys(best.keys + list(keys)))
        best.metrics.append(metric)
        if best.kind == "neutral":
            best.kind = kind

    planned = []
    for job in jobs:
        names = tuple(table.request_name(key, arch) or key for key in job.keys)
        planned.append(PmcJob(names, tuple(job.metrics), job.kind))
    return planned


def _fits(keys: Iterable[str], arch: str) -> bool:
    return fits_one_pass(table.counter_base(key, arch) or key for key in keys)
