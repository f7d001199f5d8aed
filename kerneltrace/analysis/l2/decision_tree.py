"""The L2/HBM decision tree over an L2 document, worded (thresholds: kerneltrace.thresholds.L2Thresholds)."""

from __future__ import annotations

from kerneltrace.thresholds import DEFAULT_L2, L2Thresholds


def pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def verdicts(doc: dict, limits: L2Thresholds = DEFAULT_L2) -> list[str]:
    """The L2 decision tree (sourced thresholds, plus this tool's heuristics, which say so),
    worded for any kernel."""
    agg = doc["aggregate"]
    bandwidth_fraction = doc["ratio_of_sums"]["fraction_of_peak"] or agg.get("fraction_of_peak")
    hit, frac32, overfetch = agg.get("l2_hit_rate"), agg.get("read_32b_fraction"), agg.get("overfetch")
    out: list[str] = []
    clean = {"hit": False, "frac32": False, "overfetch": False}

    if hit is None:
        out.append("L2 hit rate unknown (collect TCC_HIT_sum and TCC_MISS_sum).")
    elif hit < limits.hit_streaming:
        clean["hit"] = True
        out.append(
            f"L2 hit rate {pct(hit)} (< 5 %): streaming access, each byte is fetched about once. "
            "Raising the L2 hit rate is not a goal unless the workload itself re-reads data across "
            "workgroups or dispatches."
        )
    elif hit >= limits.hit_high:
        out.append(
            f"Heuristic: L2 hit rate {pct(hit)} is high, the working set largely fits in L2; if the "
            "kernel is still memory-bound, look at L2 bandwidth and request rate rather than DRAM."
        )
    else:
        out.append(f"L2 hit rate {pct(hit)}: some reuse through L2.")

    if frac32 is None:
        out.append("32-byte read fraction unknown (collect the read-size counters of the default plan).")
    elif frac32 < limits.frac32_clean:
        clean["frac32"] = True
        out.append(
            f"32-byte read fraction {pct(frac32)} (~0): no partial-line requests, spatial locality is fine."
        )
    elif frac32 >= limits.frac32_scattered:
        out.append(
            f"Heuristic: 32-byte read fraction {pct(frac32)} is high: scattered or misaligned accesses "
            "fetch partial lines; coalescing or realigning the loads is worthwhile."
        )
    else:
        out.append(f"32-byte read fraction {pct(frac32)}: some partial-line requests.")

    if overfetch is None:
        out.append("Over-fetch unknown: pass --ideal-gb (bytes the kernel must read per dispatch).")
    elif limits.overfetch_clean_low <= overfetch <= limits.overfetch_clean_high:
        clean["overfetch"] = True
        out.append(f"Over-fetch {overfetch:.2f}x (~1): the kernel reads what it needs, once.")
    elif overfetch > limits.overfetch_high:
        out.append(f"Over-fetch {overfetch:.2f}x: redundant fetches (re-reads or wasted partial lines).")
    elif overfetch < limits.overfetch_clean_low:
        out.append(
            f"Over-fetch {overfetch:.2f}x (< 1): the --ideal-gb figure is too high, or caching served part of the data."
        )
    else:
        out.append(f"Over-fetch {overfetch:.2f}x: slightly more than the ideal is read.")

    if bandwidth_fraction is None:
        out.append("Achieved bandwidth vs peak unknown (" + (doc["peak"]["reason"] or "no durations") + ").")
    elif all(clean.values()) and bandwidth_fraction >= limits.peak_practical:
        out.append(
            f"Loads are already at the practical limit: read bandwidth is {pct(bandwidth_fraction)} of "
            "peak with a clean memory path (low hit rate, no partial lines, no over-fetch); about 50-60 % "
            "of theoretical HBM peak is normal for gather-heavy access. Stop looking for memory-path fixes."
        )
    elif all(clean.values()) and bandwidth_fraction < limits.peak_far_below:
        out.append(
            f"Heuristic: read bandwidth is only {pct(bandwidth_fraction)} of peak with a clean memory path: "
            "probably not bandwidth-limited; check memory-level parallelism (occupancy, outstanding loads "
            "per wave, grid under-fill)."
        )
    else:
        out.append(f"Read bandwidth is {pct(bandwidth_fraction)} of peak ({doc['peak']['source']}).")
    return out
