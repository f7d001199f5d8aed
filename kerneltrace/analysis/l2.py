"""L2/HBM metrics per dispatch (within one run), runs matched by dispatch order, aggregates and verdicts.

Formulas: ../shared/docs/counters.md section 3; decision tree: section 5. Produces kerneltrace.l2/1.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kerneltrace import __version__
from kerneltrace.counters import table
from kerneltrace.errors import InputError
from kerneltrace.readers.counter_csv import CounterDispatch, CounterRun

SCHEMA = "kerneltrace.l2/1"

# Decision-tree thresholds. Sourced: hit < 5 %, 32-byte ~ 0, over-fetch ~ 1, 50-60 % of peak
# (counters.md section 5). The "high" / "far below" thresholds are this tool's heuristics.
HIT_STREAMING = 0.05
HIT_HIGH = 0.50  # heuristic
FRAC32_CLEAN = 0.05
FRAC32_HIGH = 0.25  # heuristic
OVERFETCH_CLEAN = (0.9, 1.1)
OVERFETCH_HIGH = 1.5
PEAK_PRACTICAL = 0.50
PEAK_FAR_BELOW = 0.30  # heuristic
ALT_FORM_TOLERANCE = 0.03  # gfx950: the two read-byte forms should agree within a few percent

# Keys of a dispatch entry, in output order (aggregate uses the same metric keys).
METRIC_KEYS: tuple[str, ...] = (
    "l2_hit_rate",
    "read_32b_fraction",
    "read_64b_fraction",
    "read_128b_fraction",
    "read_32b_byte_fraction",
    "fabric_read_bytes",
    "fabric_read_bytes_alt",
    "dram_read_fraction",
    "remote_read_requests",
    "dram_read_bytes_estimate",
    "write_bytes",
    "l1_l2_read_requests",
    "l2_requests",
    "l2_bandwidth_gbps",
    "l2_read_latency_cycles",
    "overfetch",
    "duration_ns",
    "achieved_gbps",
    "write_gbps",
    "total_gbps",
    "fraction_of_peak",
    "total_fraction_of_peak",
)

# Which planner metric (and so which counters) each output key depends on.
_KEY_METRIC: dict[str, str] = {
    "l2_hit_rate": "l2_hit_rate",
    "read_32b_fraction": "read_mix",
    "read_64b_fraction": "read_mix",
    "read_128b_fraction": "read_mix",
    "read_32b_byte_fraction": "read_mix",
    "fabric_read_bytes": "read_mix",
    "dram_read_fraction": "dram_share",
    "remote_read_requests": "dram_share",
    "write_bytes": "write_bytes",
    "l1_l2_read_requests": "l1_l2_requests",
    "l2_requests": "l2_bandwidth",
    "l2_read_latency_cycles": "l2_read_latency",
}

# A representative target per formula family, used to spell counter names.
_FAMILY_ARCH = {"gfx90a": "gfx90a", "gfx942": "gfx942", "gfx950": "gfx950"}


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


def select_kernel(runs: Sequence[CounterRun], substring: str | None) -> str:
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
    matched = []
    for index in range(total):
        entry = MatchedDispatch(index=index, per_run=[ds[index] if ds else None for ds in per_run])
        for run_index, dispatch in enumerate(entry.per_run):
            if dispatch is None:
                continue
            for name, value in dispatch.counters.items():
                if name not in entry.counters:  # the first run that has a counter provides it
                    entry.counters[name] = value
                    entry.counter_run[name] = run_index
        matched.append(entry)
    return matched, warnings


def resolve_arch(explicit: str | None, runs: Sequence[CounterRun]) -> tuple[ArchChoice, list[str]]:
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
    if any(n.startswith("TCC_EA0_") for n in names):
        family = "gfx950" if {"TCC_EA0_RDREQ_64B", "TCC_EA0_RDREQ_128B"} & names else "gfx942"
        return ArchChoice(None, family, "inferred from TCC_EA0_* counter names"), warnings
    if any(n.startswith("TCC_EA_") for n in names):
        return ArchChoice(None, "gfx90a", "inferred from TCC_EA_* counter names"), warnings
    stated_name = stated[0][0] if stated else None
    warnings.append("arch unknown: counter names below are spelled for gfx942; pass --arch")
    return ArchChoice(stated_name, None, "unknown"), warnings


def _div(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


@dataclass
class _Ctx:
    counters: dict[str, float]
    spelling_arch: str
    missing: dict[str, set[str]]  # metric -> counter request names not found

    def get(self, metric: str, *keys: str) -> list[float] | None:
        """Values of the keys, or None (and the metric recorded as unavailable) when any is absent."""
        values, absent = [], []
        for key in keys:
            base = table.counter_base(key, self.spelling_arch)
            if base is None or base not in self.counters:
                absent.append(table.request_name(key, self.spelling_arch) or key)
            else:
                values.append(self.counters[base])
        if absent:
            self.missing.setdefault(metric, set()).update(absent)
            return None
        return values

    def has(self, *keys: str) -> bool:
        return all((table.counter_base(k, self.spelling_arch) or "") in self.counters for k in keys)


def _read_terms(ctx: _Ctx, family: str) -> dict[str, float | None]:
    """Request counts by size (32/64/128 B), total read requests, and fabric read bytes (section 3.3)."""
    out: dict[str, float | None] = {"n32": None, "n64": None, "n128": None, "requests": None,
                                    "bytes": None, "bytes_alt": None}

    def bubble_form() -> tuple[float, float, float, float] | None:
        values = ctx.get("read_mix", "rdreq", "rdreq_32b", "bubble")
        if values is None:
            return None
        rdreq, n32, n128 = values
        # clamp: the 64-byte term can go negative on MI300 (rocprof-compute 3.3.0)
        n64 = max(0.0, rdreq - n128 - n32)
        return n32, n64, n128, rdreq

    if family == "gfx90a":
        values = ctx.get("read_mix", "rdreq", "rdreq_32b")
        if values is not None:
            rdreq, n32 = values
            out.update(n32=n32, n64=max(0.0, rdreq - n32), requests=rdreq)
            out["bytes"] = 32 * n32 + 64 * out["n64"]
        return out
    if family == "gfx950" and ctx.has("rdreq_32b", "rdreq_64b", "rdreq_128b"):
        n32, n64, n128 = ctx.get("read_mix", "rdreq_32b", "rdreq_64b", "rdreq_128b") or (0, 0, 0)
        rdreq = ctx.counters.get(table.counter_base("rdreq", ctx.spelling_arch) or "")
        out.update(n32=n32, n64=n64, n128=n128, requests=rdreq if rdreq else n32 + n64 + n128)
        out["bytes"] = 32 * n32 + 64 * n64 + 128 * n128
        if ctx.has("rdreq", "rdreq_32b", "bubble"):
            alt = bubble_form()
            if alt is not None:
                out["bytes_alt"] = 32 * alt[0] + 64 * alt[1] + 128 * alt[2]
        return out
    form = bubble_form()
    if form is not None:
        n32, n64, n128, rdreq = form
        out.update(n32=n32, n64=n64, n128=n128, requests=rdreq, bytes=32 * n32 + 64 * n64 + 128 * n128)
    elif family == "gfx950":
        # neither form complete: report the explicit-size counters as the ones to collect
        ctx.missing["read_mix"] = set()
        ctx.get("read_mix", "rdreq_32b", "rdreq_64b", "rdreq_128b")
    return out


def dispatch_metrics(
    matched: MatchedDispatch,
    runs: Sequence[CounterRun],
    arch: ArchChoice,
    ideal_read_bytes: float | None,
    peak_gbps: float | None,
    missing: dict[str, set[str]],
    warnings: list[str],
) -> dict:
    """Every metric of one matched dispatch; null where a counter, the ideal or a duration is absent."""
    family = arch.family or "gfx942"
    ctx = _Ctx(matched.counters, _FAMILY_ARCH[family], missing)
    first = next(d for d in matched.per_run if d is not None)
    entry: dict = {
        "index": matched.index,
        "dispatch_id": first.dispatch_id,
        "dispatch_ids": [d.dispatch_id if d else None for d in matched.per_run],
    }
    values: dict[str, float | None] = dict.fromkeys(METRIC_KEYS)

    hit_miss = ctx.get("l2_hit_rate", "hit", "miss")
    if hit_miss:
        values["l2_hit_rate"] = _div(hit_miss[0], hit_miss[0] + hit_miss[1])

    reads = _read_terms(ctx, family)
    fabric = reads["bytes"]
    values["fabric_read_bytes"] = fabric
    values["fabric_read_bytes_alt"] = reads["bytes_alt"]
    values["read_32b_fraction"] = _div(reads["n32"], reads["requests"])
    values["read_64b_fraction"] = _div(reads["n64"], reads["requests"])
    values["read_128b_fraction"] = _div(reads["n128"], reads["requests"])
    values["read_32b_byte_fraction"] = _div(None if reads["n32"] is None else 32 * reads["n32"], fabric)
    if fabric is not None and reads["bytes_alt"] is not None:
        gap = _div(abs(fabric - reads["bytes_alt"]), max(fabric, reads["bytes_alt"]))
        if gap is not None and gap > ALT_FORM_TOLERANCE:
            warnings.append(
                f"dispatch {matched.index}: gfx950 read-byte forms disagree by {gap:.1%} "
                f"(explicit 32/64/128B: {fabric:.0f} B, TCC_BUBBLE form: {reads['bytes_alt']:.0f} B)"
            )

    dram = ctx.get("dram_share", "rdreq", "rdreq_dram")
    if dram:
        rdreq, dram_requests = dram
        values["dram_read_fraction"] = _div(dram_requests, rdreq)
        values["remote_read_requests"] = max(0.0, rdreq - dram_requests)
        if fabric is not None and values["dram_read_fraction"] is not None:
            # approximation: assumes the same size mix for DRAM and non-DRAM requests
            values["dram_read_bytes_estimate"] = fabric * values["dram_read_fraction"]

    writes = ctx.get("write_bytes", "wrreq", "wrreq_64b")
    if writes:
        wrreq, wr64 = writes
        values["write_bytes"] = 64 * wr64 + 32 * max(0.0, wrreq - wr64)

    l1 = ctx.get("l1_l2_requests", "tcp_tcc_read_req")
    values["l1_l2_read_requests"] = l1[0] if l1 else None

    # Optional extras: only reported when their counters were collected (not listed as unavailable).
    if ctx.has("req"):
        values["l2_requests"] = ctx.counters[table.counter_base("req", ctx.spelling_arch) or ""]
    if ctx.has("rdreq", "rdreq_level"):
        level = ctx.counters[table.counter_base("rdreq_level", ctx.spelling_arch) or ""]
        values["l2_read_latency_cycles"] = _div(level, ctx.counters[table.counter_base("rdreq", ctx.spelling_arch) or ""])

    if ideal_read_bytes:
        values["overfetch"] = _div(fabric, ideal_read_bytes)

    # Bandwidth uses the duration of the run that supplied the read counters (section 3.9 rule 1).
    read_run = _run_of(matched, ("TCC_EA0_RDREQ_32B", "TCC_EA_RDREQ_32B"))
    write_run = _run_of(matched, ("TCC_EA0_WRREQ", "TCC_EA_WRREQ"))
    duration = _duration(matched, read_run)
    values["duration_ns"] = duration
    values["achieved_gbps"] = _div(fabric, duration)  # bytes per ns == GB/s
    write_duration = _duration(matched, write_run)
    values["write_gbps"] = _div(values["write_bytes"], write_duration)
    if values["achieved_gbps"] is not None and values["write_gbps"] is not None:
        values["total_gbps"] = values["achieved_gbps"] + values["write_gbps"]
    if values["l2_requests"] is not None and family in ("gfx942", "gfx950"):
        req_run = _run_of(matched, ("TCC_REQ",))
        values["l2_bandwidth_gbps"] = _div(values["l2_requests"] * 128, _duration(matched, req_run))
    if peak_gbps:
        values["fraction_of_peak"] = _div(values["achieved_gbps"], peak_gbps)
        values["total_fraction_of_peak"] = _div(values["total_gbps"], peak_gbps)
    entry.update(values)
    return entry


def _run_of(matched: MatchedDispatch, names: tuple[str, ...]) -> int | None:
    for name in names:
        if name in matched.counter_run:
            return matched.counter_run[name]
    return None


def _duration(matched: MatchedDispatch, run_index: int | None) -> float | None:
    if run_index is None:
        run_index = next(i for i, d in enumerate(matched.per_run) if d is not None)
    dispatch = matched.per_run[run_index]
    return None if dispatch is None or dispatch.duration_ns is None else float(dispatch.duration_ns)


def _aggregate(dispatches: list[dict]) -> tuple[dict, dict]:
    """Median per metric, and its spread (min, p25, p75, max)."""
    aggregate: dict = {"dispatches": len(dispatches)}
    spread: dict = {}
    for key in METRIC_KEYS:
        values = sorted(d[key] for d in dispatches if d.get(key) is not None)
        if not values:
            aggregate[key] = None
            continue
        aggregate[key] = statistics.median(values)
        if len(values) >= 2:
            p25, _, p75 = statistics.quantiles(values, n=4, method="inclusive")
        else:
            p25 = p75 = values[0]
        spread[key] = {"min": values[0], "p25": p25, "p75": p75, "max": values[-1], "n": len(values)}
    return aggregate, spread


def _ratio_of_sums(dispatches: list[dict], peak_gbps: float | None) -> dict:
    """Across dispatches: sum(bytes) / sum(duration), not the mean of per-dispatch ratios."""

    def ratio(numerator_key: str) -> float | None:
        pairs = [(d[numerator_key], d["duration_ns"]) for d in dispatches
                 if d.get(numerator_key) is not None and d.get("duration_ns")]
        return _div(sum(p[0] for p in pairs), sum(p[1] for p in pairs)) if pairs else None

    read = ratio("fabric_read_bytes")
    write = ratio("write_bytes")
    out = {
        "achieved_gbps": read,
        "write_gbps": write,
        "total_gbps": read + write if read is not None and write is not None else None,
        "fabric_read_bytes_total": _sum_or_none(dispatches, "fabric_read_bytes"),
        "write_bytes_total": _sum_or_none(dispatches, "write_bytes"),
        "duration_ns_total": _sum_or_none(dispatches, "duration_ns"),
    }
    out["fraction_of_peak"] = _div(read, peak_gbps) if peak_gbps else None
    return out


def _counter_medians(matched: list[MatchedDispatch]) -> dict[str, float]:
    """Median of every collected counter (as named in the input, without '_sum') over the dispatches."""
    names = sorted({name for m in matched for name in m.counters})
    return {name: statistics.median(m.counters[name] for m in matched if name in m.counters) for name in names}


def _sum_or_none(dispatches: list[dict], key: str) -> float | None:
    values = [d[key] for d in dispatches if d.get(key) is not None]
    return sum(values) if values else None


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


def analyze(
    runs: Sequence[CounterRun],
    *,
    kernel: str | None = None,
    arch: str | None = None,
    ideal_gb: float | None = None,
    peak_gbps: float | None = None,
) -> dict:
    """The kerneltrace.l2/1 document for one kernel over one or more runs."""
    if not runs:
        raise InputError("no PMC input", "inputs", "pass counter CSVs, a workload dir or a rocpd .db")
    name = select_kernel(runs, kernel)
    matched, warnings = match_runs(runs, name)
    arch_choice, arch_warnings = resolve_arch(arch, runs)
    warnings.extend(arch_warnings)
    for run in runs:
        warnings.extend(f"{run.source}: {note}" for note in run.notes)
    peak = resolve_peak(peak_gbps, runs, arch_choice)
    ideal_bytes = ideal_gb * 1e9 if ideal_gb else None
    missing: dict[str, set[str]] = {}
    dispatches = [
        dispatch_metrics(m, runs, arch_choice, ideal_bytes, peak["gbps"], missing, warnings) for m in matched
    ]
    if sum(1 for d in dispatches if d["duration_ns"] is None) and dispatches:
        warnings.append("some dispatches have no Start/End timestamps: no bandwidth for them")
    aggregate, spread = _aggregate(dispatches)
    unavailable = [{"metric": metric, "collect": sorted(counters)} for metric, counters in missing.items() if counters]
    if ideal_bytes is None:
        unavailable.append({"metric": "overfetch", "collect": [], "needs": "--ideal-gb (bytes the kernel must read per dispatch)"})
    if peak["gbps"] is None:
        unavailable.append({"metric": "fraction_of_peak", "collect": [], "needs": peak["reason"]})
    doc = {
        "schema": SCHEMA,
        "tool": {"name": "kernel-trace-analysis", "version": __version__},
        "kernel": name,
        "arch": {"name": arch_choice.name, "formula_family": arch_choice.family, "source": arch_choice.source},
        "inputs": [{"source": run.source, "format": run.format, "run": i,
                    "dispatches": sum(1 for d in run.dispatches if d.kernel == name)}
                   for i, run in enumerate(runs)],
        "matching": "dispatches paired by order within each run (dispatch ids restart per run)",
        "ideal_read_bytes": ideal_bytes,
        "peak": peak,
        "dispatches": dispatches,
        "aggregate": aggregate,
        "spread": spread,
        "ratio_of_sums": _ratio_of_sums(dispatches, peak["gbps"]),
        "counter_medians": _counter_medians(matched),
        "unavailable": unavailable,
        "warnings": list(dict.fromkeys(warnings)),
    }
    doc["verdicts"] = verdicts(doc)
    return doc


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def verdicts(doc: dict) -> list[str]:
    """The counters.md section 5 decision tree, worded for any kernel; heuristics say so."""
    agg = doc["aggregate"]
    bandwidth_fraction = doc["ratio_of_sums"]["fraction_of_peak"] or agg.get("fraction_of_peak")
    hit, frac32, overfetch = agg.get("l2_hit_rate"), agg.get("read_32b_fraction"), agg.get("overfetch")
    out: list[str] = []
    clean = {"hit": False, "frac32": False, "overfetch": False}

    if hit is None:
        out.append("L2 hit rate unknown (collect TCC_HIT_sum and TCC_MISS_sum).")
    elif hit < HIT_STREAMING:
        clean["hit"] = True
        out.append(
            f"L2 hit rate {_pct(hit)} (< 5 %): streaming access, each byte is fetched about once. "
            "Raising the L2 hit rate is not a goal unless the workload itself re-reads data across "
            "workgroups or dispatches."
        )
    elif hit >= HIT_HIGH:
        out.append(
            f"Heuristic: L2 hit rate {_pct(hit)} is high, the working set largely fits in L2; if the "
            "kernel is still memory-bound, look at L2 bandwidth and request rate rather than DRAM."
        )
    else:
        out.append(f"L2 hit rate {_pct(hit)}: some reuse through L2.")

    if frac32 is None:
        out.append("32-byte read fraction unknown (collect the read-size counters of the default plan).")
    elif frac32 < FRAC32_CLEAN:
        clean["frac32"] = True
        out.append(
            f"32-byte read fraction {_pct(frac32)} (~0): no partial-line requests, spatial locality is fine."
        )
    elif frac32 >= FRAC32_HIGH:
        out.append(
            f"Heuristic: 32-byte read fraction {_pct(frac32)} is high: scattered or misaligned accesses "
            "fetch partial lines; coalescing or realigning the loads is worthwhile."
        )
    else:
        out.append(f"32-byte read fraction {_pct(frac32)}: some partial-line requests.")

    if overfetch is None:
        out.append("Over-fetch unknown: pass --ideal-gb (bytes the kernel must read per dispatch).")
    elif OVERFETCH_CLEAN[0] <= overfetch <= OVERFETCH_CLEAN[1]:
        clean["overfetch"] = True
        out.append(f"Over-fetch {overfetch:.2f}x (~1): the kernel reads what it needs, once.")
    elif overfetch > OVERFETCH_HIGH:
        out.append(f"Over-fetch {overfetch:.2f}x: redundant fetches (re-reads or wasted partial lines).")
    elif overfetch < OVERFETCH_CLEAN[0]:
        out.append(
            f"Over-fetch {overfetch:.2f}x (< 1): the --ideal-gb figure is too high, or caching served part of the data."
        )
    else:
        out.append(f"Over-fetch {overfetch:.2f}x: slightly more than the ideal is read.")

    if bandwidth_fraction is None:
        out.append("Achieved bandwidth vs peak unknown (" + (doc["peak"]["reason"] or "no durations") + ").")
    elif all(clean.values()) and bandwidth_fraction >= PEAK_PRACTICAL:
        out.append(
            f"Loads are already at the practical limit: read bandwidth is {_pct(bandwidth_fraction)} of "
            "peak with a clean memory path (low hit rate, no partial lines, no over-fetch); about 50-60 % "
            "of theoretical HBM peak is normal for gather-heavy access. Stop looking for memory-path fixes."
        )
    elif all(clean.values()) and bandwidth_fraction < PEAK_FAR_BELOW:
        out.append(
            f"Heuristic: read bandwidth is only {_pct(bandwidth_fraction)} of peak with a clean memory path: "
            "probably not bandwidth-limited; check memory-level parallelism (occupancy, outstanding loads "
            "per wave, grid under-fill)."
        )
    else:
        out.append(f"Read bandwidth is {_pct(bandwidth_fraction)} of peak ({doc['peak']['source']}).")
    return out


_TEXT_ROWS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("l2_hit_rate", "L2 hit rate", _pct),
    ("read_32b_fraction", "32-byte reads (of requests)", _pct),
    ("read_64b_fraction", "64-byte reads (of requests)", _pct),
    ("read_128b_fraction", "128-byte reads (of requests)", _pct),
    ("fabric_read_bytes", "L2->fabric read bytes", lambda v: f"{v / 1e9:.4f} GB"),
    ("fabric_read_bytes_alt", "  (TCC_BUBBLE form)", lambda v: f"{v / 1e9:.4f} GB"),
    ("dram_read_fraction", "DRAM share of read requests", _pct),
    ("write_bytes", "L2->fabric write bytes", lambda v: f"{v / 1e9:.4f} GB"),
    ("l1_l2_read_requests", "L1->L2 read requests", lambda v: f"{v:.0f}"),
    ("l2_bandwidth_gbps", "L2 bandwidth", lambda v: f"{v:.1f} GB/s"),
    ("overfetch", "over-fetch vs ideal", lambda v: f"{v:.2f}x"),
    ("duration_ns", "duration", lambda v: f"{v / 1e3:.1f} us"),
    ("achieved_gbps", "read bandwidth", lambda v: f"{v:.1f} GB/s"),
    ("write_gbps", "write bandwidth", lambda v: f"{v:.1f} GB/s"),
    ("fraction_of_peak", "read bandwidth / peak", _pct),
)


def format_text(doc: dict) -> str:
    """Plain-text report of a kerneltrace.l2/1 document."""
    agg, spread = doc["aggregate"], doc["spread"]
    arch = doc["arch"]
    lines = [
        f"Kernel: {doc['kernel']}",
        f"Arch: {arch['name'] or 'unknown'} (formulas: {arch['formula_family'] or 'n/a'}; {arch['source']})",
        f"Runs: {len(doc['inputs'])}   dispatches matched: {agg['dispatches']} (by order within each run)",
        "Peak: " + (f"{doc['peak']['gbps']:.0f} GB/s ({doc['peak']['source']})" if doc["peak"]["gbps"]
                    else f"unknown -- {doc['peak']['reason']}"),
        "",
        f"{'metric':32s} {'median':>14s} {'min':>14s} {'max':>14s}",
    ]
    for key, label, fmt in _TEXT_ROWS:
        if agg.get(key) is None:
            continue
        s = spread.get(key, {})
        lines.append(f"{label:32s} {fmt(agg[key]):>14s} {fmt(s['min']):>14s} {fmt(s['max']):>14s}")
    ros = doc["ratio_of_sums"]
    if ros["achieved_gbps"] is not None:
        lines.append(f"{'read bandwidth (sum B / sum ns)':32s} {ros['achieved_gbps']:>9.1f} GB/s")
    lines += ["", "Verdict"] + [f"  - {v}" for v in doc["verdicts"]]
    if doc["unavailable"]:
        lines += ["", "Unavailable"]
        for item in doc["unavailable"]:
            need = ", ".join(item["collect"]) if item["collect"] else item.get("needs", "")
            lines.append(f"  - {item['metric']}: {'collect ' if item['collect'] else ''}{need}")
    if doc["warnings"]:
        lines += ["", "Warnings"] + [f"  - {w}" for w in doc["warnings"]]
    return "\n".join(lines) + "\n"
