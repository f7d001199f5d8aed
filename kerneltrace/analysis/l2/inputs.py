"""L2 analysis inputs: the kernel to analyse, its dispatches paired across PMC runs, arch and peak."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from kerneltrace.counters import table
from kerneltrace.errors import InputError
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun


@dataclass(frozen=True)
class ArchChoice:
    name: str | None  # gfx target, or None
    family: str | None  # formula family gfx90a / gfx942 / gfx950
    source: str


@dataclass
class MatchedDispatch:
    """The i-th dispatch of the kernel in every run (runs matched by order, never by id)."""

    index: int
    per_run: list[CounterDispatch | None]  # one entry per run (None: run had no such kernel)
    counters: dict[str, float] = field(default_factory=dict)
    counter_run: dict[str, int] = field(default_factory=dict)  # counter -> run index it came from


def kernel_names(runs: Sequence[CounterRun]) -> list[str]:
    return sorted({name for run in runs for name in run.kernels()})


def select_run_kernel(runs: Sequence[CounterRun], substring: str | None) -> str:
    """The one kernel to analyse: exact name, else the single name containing `substring`."""
    names = kernel_names(runs)
    if not names:
        raise InputError("no dispatches with counters in the input", ", ".join(r.source for r in runs),
                         "check the PMC capture")
    if substring:
        if substring in names:
            return substring
        names = [name for name in names if substring in name]
        if not names:
            raise InputError(
                f"no kernel name contains {substring!r}",
                "--kernel",
                "available: " + "; ".join(_short(n) for n in kernel_names(runs)[:10]),
            )
    if len(names) > 1:
        raise InputError(
            f"{len(names)} kernels in the input: " + "; ".join(_short(n) for n in names[:10])
            + (" ..." if len(names) > 10 else ""),
            "--kernel",
            "pass --kernel with a substring (or the exact name) that selects one kernel",
        )
    return names[0]


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


def match_runs(runs: Sequence[CounterRun], kernel: str) -> tuple[list[MatchedDispatch], list[str]]:
    """Pair the kernel's dispatches across runs by their order within each run.

    Dispatch ids restart in every run, so ids are never compared or unioned. Runs with different
    numbers of dispatches of the kernel cannot be paired: refuse.
    """
    warnings: list[str] = []
    per_run = [[d for d in run.dispatches if d.kernel == kernel] for run in runs]
    counts = {i: len(ds) for i, ds in enumerate(per_run) if ds}
    for i, ds in enumerate(per_run):
        if not ds:
            warnings.append(f"{runs[i].source}: no dispatch of the kernel; input ignored")
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{runs[i].source}: {n}" for i, n in counts.items())
        raise InputError(
            f"runs cannot be matched: different numbers of dispatches of the kernel ({detail})",
            "inputs",
            "capture every PMC job with the same application arguments and kernel_iteration_range, "
            "or analyse the runs separately",
        )
    total = next(iter(counts.values()), 0)
    matched = [MatchedDispatch(index=index, per_run=[ds[index] if ds else None for ds in per_run])
               for index in range(total)]
    merged = merge_passes(matched)
    for index, run, counter, value in zip(merged["index"].tolist(), merged["run"].tolist(),
                                          merged["counter"].tolist(), merged["value"].tolist(), strict=True):
        matched[index].counters[counter] = value
        matched[index].counter_run[counter] = run
    return matched, warnings


def merge_passes(matched: Sequence[MatchedDispatch]) -> pd.DataFrame:
    """The single-pass jobs merged per matched dispatch: one row (index, run, counter, value) per
    (dispatch, counter), from the first run that collected it, in the order first seen (run by run)."""
    long = pd.DataFrame(
        [(entry.index, run, name, value) for entry in matched
         for run, dispatch in enumerate(entry.per_run) if dispatch is not None
         for name, value in dispatch.counters.items()],
        columns=["index", "run", "counter", "value"])
    return long.drop_duplicates(["index", "counter"], keep="first")


def resolve_run_arch(explicit: str | None, runs: Sequence[CounterRun]) -> tuple[ArchChoice, list[str]]:
    """--arch, else what the runs say (agent info, sysinfo, rocpd), else the counter names."""
    warnings: list[str] = []
    if explicit:
        family = table.arch_family(explicit)
        if family is None:
            raise InputError(f"unknown arch {explicit!r}", "--arch",
                             "use gfx908, gfx90a, gfx940, gfx941, gfx942 or gfx950")
        return ArchChoice(explicit, family[1], "--arch"), warnings
    stated = [(run.arch, run.arch_source) for run in runs if run.arch]
    if len({a for a, _ in stated}) > 1:
        warnings.append("inputs disagree on the arch: " + ", ".join(sorted({a for a, _ in stated})))
    for arch, source in stated:
        family = table.arch_family(arch)
        if family is not None:
            return ArchChoice(arch, family[1], source), warnings
    names = {name for run in runs for d in run.dispatches for name in d.counters}
    ea0, ea = table.ea_prefix("gfx942"), table.ea_prefix("gfx90a")
    if any(n.startswith(ea0) for n in names):
        only_gfx950 = {table.counter_base(key, "gfx950") for key in ("rdreq_64b", "rdreq_128b")}
        family = "gfx950" if only_gfx950 & names else "gfx942"
        return ArchChoice(None, family, f"inferred from {ea0}* counter names"), warnings
    if any(n.startswith(ea) for n in names):
        return ArchChoice(None, "gfx90a", f"inferred from {ea}* counter names"), warnings
    stated_name = stated[0][0] if stated else None
    warnings.append("arch unknown: counter names below are spelled for gfx942; pass --arch")
    return ArchChoice(stated_name, None, "unknown"), warnings


def resolve_peak(override: float | None, runs: Sequence[CounterRun], arch: ArchChoice) -> dict:
    """Peak HBM GB/s: --peak-gbps, else a peak shipped with the data, else the product table, else unknown."""
    if override:
        return {"gbps": override, "source": "--peak-gbps", "reason": None}
    for run in runs:
        if run.peak_gbps:
            return {"gbps": run.peak_gbps, "source": run.peak_source, "reason": None}
    from kerneltrace.arch.table import get_product

    products = [run.product for run in runs if run.product]
    for product in products:
        spec = get_product(product)
        if spec is not None and spec.peak_hbm_gbps:
            confirmed = "" if spec.peak_confirmed else ", unconfirmed"
            return {"gbps": spec.peak_hbm_gbps, "reason": None,
                    "source": f"arch table: {spec.name} ({spec.source}{confirmed})"}
    if products:
        reason = (f"no peak bandwidth known for product {products[0]!r}"
                  f"{f' ({arch.name})' if arch.name else ''}; pass --peak-gbps (a measured peak is best)")
    else:
        reason = "no product name in the input; pass --peak-gbps"
    return {"gbps": None, "source": None, "reason": reason}
