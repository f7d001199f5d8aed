"""Plain-text rendering of a kerneltrace.l2/1 document (metric table, verdicts, gaps, warnings)."""

from __future__ import annotations

from collections.abc import Callable

from kerneltrace.analysis.l2.decision_tree import pct

_TEXT_ROWS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("l2_hit_rate", "L2 hit rate", pct),
    ("read_32b_fraction", "32-byte reads (of requests)", pct),
    ("read_64b_fraction", "64-byte reads (of requests)", pct),
    ("read_128b_fraction", "128-byte reads (of requests)", pct),
    ("fabric_read_bytes", "L2->fabric read bytes", lambda v: f"{v / 1e9:.4f} GB"),
    ("fabric_read_bytes_alt", "  (TCC_BUBBLE form)", lambda v: f"{v / 1e9:.4f} GB"),
    ("dram_read_fraction", "DRAM share of read requests", pct),
    ("write_bytes", "L2->fabric write bytes", lambda v: f"{v / 1e9:.4f} GB"),
    ("l1_l2_read_requests", "L1->L2 read requests", lambda v: f"{v:.0f}"),
    ("l2_bandwidth_gbps", "L2 bandwidth", lambda v: f"{v:.1f} GB/s"),
    ("overfetch", "over-fetch vs ideal", lambda v: f"{v:.2f}x"),
    ("duration_ns", "duration", lambda v: f"{v / 1e3:.1f} us"),
    ("achieved_gbps", "read bandwidth", lambda v: f"{v:.1f} GB/s"),
    ("write_gbps", "write bandwidth", lambda v: f"{v:.1f} GB/s"),
    ("fraction_of_peak", "read bandwidth / peak", pct),
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
