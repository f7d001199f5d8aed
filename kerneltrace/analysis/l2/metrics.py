"""L2/HBM metrics of one matched dispatch (docs/pmc-counters.md §3), their median/spread and ratio of sums."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from kerneltrace.analysis.l2.inputs import ArchChoice, MatchedDispatch
from kerneltrace.counters import table
from kerneltrace.readers.counter_run import CounterRun
from kerneltrace.thresholds import DEFAULT_L2

PLAUSIBLE_COUNT = 2.0**53  # per dispatch; beyond this a counter value is garbage (and not exact as a float)

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

# A representative target per formula family, used to spell counter names.
_FAMILY_ARCH = {"gfx90a": "gfx90a", "gfx942": "gfx942", "gfx950": "gfx950"}


def _div(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def implausible_counter(value: float) -> str | None:
    """Why a counter value cannot be a real count (negative, non-finite, too large), or None."""
    if not math.isfinite(value):
        return "not a finite number"
    if value < 0:
        return "negative"
    if value > PLAUSIBLE_COUNT:
        return "implausibly large (> 2^53)"
    return None


@dataclass
class _Ctx:
    counters: dict[str, float]
    spelling_arch: str
    missing: dict[str, set[str]]  # metric -> counter request names not found
    implausible: dict[str, set[str]]  # metric -> "COUNTER = value (why)" for values that cannot be counts

    def get(self, metric: str, *keys: str) -> list[float] | None:
        """Values of the keys, or None (and the metric recorded as unavailable) when any is absent
        or not a plausible count."""
        values, absent, bad = [], [], []
        for key in keys:
            base = table.counter_base(key, self.spelling_arch)
            if base is None or base not in self.counters:
                absent.append(table.request_name(key, self.spelling_arch) or key)
                continue
            value = self.counters[base]
            why = implausible_counter(value)
            if why:
                bad.append(f"{base} = {value:.0f} ({why})" if math.isfinite(value) else f"{base} ({why})")
            values.append(value)
        if absent:
            self.missing.setdefault(metric, set()).update(absent)
            return None
        if bad:
            self.implausible.setdefault(metric, set()).update(bad)
            return None
        return values

    def value(self, key: str, metric: str) -> float | None:
        """One optional counter's value, or None when absent or implausible (recorded)."""
        if not self.has(key):
            return None
        values = self.get(metric, key)
        return values[0] if values else None

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
        rdreq = ctx.value("rdreq", "read_mix")
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
    implausible: dict[str, set[str]],
) -> dict:
    """Every metric of one matched dispatch; null where a counter, the ideal or a duration is absent."""
    family = arch.family or "gfx942"
    ctx = _Ctx(matched.counters, _FAMILY_ARCH[family], missing, implausible)
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
        if gap is not None and gap > DEFAULT_L2.alt_form_tolerance:
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
    values["l2_requests"] = ctx.value("req", "l2_requests")
    if ctx.has("rdreq", "rdreq_level"):
        latency = ctx.get("l2_read_latency_cycles", "rdreq_level", "rdreq")
        values["l2_read_latency_cycles"] = _div(*latency) if latency else None

    if ideal_read_bytes:
        values["overfetch"] = _div(fabric, ideal_read_bytes)

    # Bandwidth uses the duration of the run that supplied the read counters (section 3.9 rule 1).
    read_run = _run_of(matched, table.spellings("rdreq_32b"))
    write_run = _run_of(matched, table.spellings("wrreq"))
    duration = _duration(matched, read_run)
    values["duration_ns"] = duration
    values["achieved_gbps"] = _div(fabric, duration)  # bytes per ns == GB/s
    write_duration = _duration(matched, write_run)
    values["write_gbps"] = _div(values["write_bytes"], write_duration)
    if values["achieved_gbps"] is not None and values["write_gbps"] is not None:
        values["total_gbps"] = values["achieved_gbps"] + values["write_gbps"]
    if values["l2_requests"] is not None and family in ("gfx942", "gfx950"):
        req_run = _run_of(matched, table.spellings("req"))
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


def aggregate_dispatches(dispatches: list[dict]) -> tuple[dict, dict]:
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


def ratio_of_sums(dispatches: list[dict], peak_gbps: float | None) -> dict:
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


def counter_medians(matched: list[MatchedDispatch]) -> dict[str, float]:
    """Median of every collected counter (as named in the input, without '_sum') over the dispatches."""
    names = sorted({name for m in matched for name in m.counters})
    return {name: statistics.median(m.counters[name] for m in matched if name in m.counters) for name in names}


def _sum_or_none(dispatches: list[dict], key: str) -> float | None:
    values = [d[key] for d in dispatches if d.get(key) is not None]
    return sum(values) if values else None
