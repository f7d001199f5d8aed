"""Text and Markdown rendering of kerneltrace.compare/1 documents."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# md_text_cell escapes text: kernel names, paths, asm and labels are user data (never markup), and
# Markdown tables break on '|' and newlines.
from kerneltrace.numfmt import percent
from kerneltrace.render.markdown import html_comment, md_code, md_code_cell, md_text_cell
from kerneltrace.safetext import terminal_page

TOP_LINES = 10
TOP_INSTRUCTIONS = 10
TOP_TYPES = 8


def _pct(value: float | None) -> str:
    if value is None:
        return "new"
    return percent(value, sign=True)  # not finite: "n/a"


def _cyc(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:,.1f}"


def _known(*values: Any) -> bool:
    return any(value is not None for value in values)


def _text_change(row: Mapping[str, Any], width: int, delta: bool = False) -> str:
    """Fixed-width 'before → after  [delta]  change' per wave, for the text report's tables."""
    text = f"{_cyc(row['before_per_wave']):>{width}s} → {_cyc(row['after_per_wave']):>{width}s}  "
    if delta:
        text += f"{row['delta_per_wave']:+{width}.1f}  "
    return text + f"{_pct(row['relative_per_wave']):>8s}"


def _md_change(row: Mapping[str, Any], delta: bool = False) -> str:
    """The 'before/wave | after/wave | [delta/wave |] change' cells of the Markdown tables."""
    cells = [_cyc(row["before_per_wave"]), _cyc(row["after_per_wave"])]
    if delta:
        cells.append(f"{row['delta_per_wave']:+.1f}")
    return " | ".join([*cells, _pct(row["relative_per_wave"])])


def _threshold_text(thresholds: Mapping[str, Any]) -> str:
    parts = []
    for name, value in thresholds.items():
        if value is None:
            parts.append(f"{name}=off")
        elif name == "min_stall_per_wave":
            parts.append(f"{name}={value:g}")
        else:
            parts.append(
                f"{name}={value:.0%}" if value * 100 == int(value * 100) else f"{name}={value:.2%}"
            )
    return ", ".join(parts)


def estimate_lines(c: Mapping[str, Any]) -> list[str]:
    """The estimated time change in words: value, band, basis and why, and what it cannot see."""
    est = c.get("estimated_time_change")
    if not isinstance(est, Mapping):
        return []
    if est.get("value") is None:
        if c.get("verdict") == "not-comparable":
            out = [f"no time change estimated: {est.get('why')}"]
            units = (c.get("work_per_wave") or {}).get("per_unit_of_work") or []
            if units:
                out.append("  per unit of work (these do not grow with the work a wave does):")
                out.extend(f"    {u['unit']}: {_cyc(u['before'])} → {_cyc(u['after'])} "
                           f"({_pct(u['relative'])})" for u in units)
            return out
        return [f"estimated time change: unavailable ({est.get('why')}); verdict from stall checks"]
    if est.get("basis") == "identical_capture":
        return [f"no change: {est.get('why')}"]
    out = [
        f"estimated time change: {est['value']:+.1%} (band {est['low']:+.1%} … {est['high']:+.1%}, "
        f"noise floor ±{est['noise_floor']:.0%}), basis {est['basis']}",
        f"  why: {est['why']}",
    ]
    if not est.get("visible", True):
        out.append("  the traces cannot see this change (same instruction stream, same per-CU "
                   "timing): re-time the kernel")
    return out


def _est_cell(c: Mapping[str, Any] | None) -> str:
    est = (c or {}).get("estimated_time_change") or {}
    if est.get("value") is None:
        return "not comparable" if (c or {}).get("verdict") == "not-comparable" else "-"
    return f"{est['value']:+.1%} ({est['low']:+.1%} … {est['high']:+.1%})"


def keyed_name(entry: Mapping[str, Any]) -> str:
    """``kernel#n`` plus the path labels that tell same-name, same-id dispatches apart."""
    labels = entry.get("labels") or {}
    before, after = labels.get("before") or "", labels.get("after") or ""
    if not before and not after:
        return str(entry["key"])
    shown = before if before == after else f"{before or '-'} → {after or '-'}"
    return f"{entry['key']} ({shown})"


def _sections(result: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(title, hotspot comparison) pairs: one for a dispatch, one per kernel for summaries."""
    if result.get("kind") == "hotspots":
        return [("", result)]
    return [
        (keyed_name(entry) if "key" in entry else "?", entry["comparison"])
        for entry in result.get("kernels", [])
        if entry.get("comparison")
    ]


# ---------------------------------------------------------------------------- text


def _side_text(side: Mapping[str, Any]) -> str:
    """'dir (kernel, arch, N waves)', leaving out what is unknown."""
    facts = [str(side[key]) for key in ("kernel", "arch") if side.get(key)]
    if side.get("traced_waves") is not None:
        facts.append(f"{side['traced_waves']} waves")
    return f"{side.get('dispatch_dir')}" + (f" ({', '.join(facts)})" if facts else "")


def occupancy_text(occ: Mapping[str, Any]) -> str:
    """'3 → 4 waves/SIMD (limited by vgpr → lds)', with unknown parts left out ("" if all are)."""
    before, after = occ.get("before") or {}, occ.get("after") or {}
    waves = (before.get("waves_per_simd"), after.get("waves_per_simd"))
    limits = (before.get("limited_by"), after.get("limited_by"))
    if not _known(*waves, *limits):
        return ""
    text = f"{waves[0] if waves[0] is not None else '?'} → {waves[1] if waves[1] is not None else '?'} waves/SIMD"
    if _known(*limits):
        text += f" (limited by {limits[0] or '?'} → {limits[1] or '?'})"
    return text


def render_text(result: Mapping[str, Any]) -> str:
    """Plain-text report of a comparison (the terminal view)."""
    out = [
        f"verdict: {result['verdict'].upper()}",
        f"thresholds: {_threshold_text(result['thresholds'])}",
    ]
    out.extend(f"  reason: {reason}" for reason in result.get("reasons", []))
    out.extend(f"  note: {note}" for note in result.get("notes", []))
    if result.get("kind") != "hotspots":
        for entry in result.get("kernels", []):
            out.append(f"  [{entry['status']}] {keyed_name(entry)}: {entry.get('verdict', '-')}")
    for title, comparison in _sections(result):
        out.append("")
        if title:
            out.append(f"== {title}: {comparison['verdict']}")
        out.extend(_text_one(comparison))
    return terminal_page("\n".join(out) + "\n")


def _text_one(c: Mapping[str, Any]) -> list[str]:
    before, after, norm = c["before"], c["after"], c["normalization"]
    out = [
        f"before: {_side_text(before)}",
        f"after:  {_side_text(after)}",
        f"normalization: {norm['basis']}",
        *estimate_lines(c),
        "",
        "totals (per wave):",
    ]
    for metric, row in c["totals"].items():
        out.append(f"  {metric:24s} {_text_change(row, 14)}")
    out += ["", "stall by type (per wave):"]
    for row in c["stall_by_type"][:TOP_TYPES]:
        out.append(f"  {str(row['type']):16s} {_text_change(row, 12, delta=True)}")
    lines = c["lines"]
    out += ["", f"source lines ({lines['status']}):"]
    if lines.get("reason"):
        out.append(f"  {lines['reason']}")
    for row in lines["items"][:TOP_LINES]:
        out.append(
            f"  [{row['status']:8s}] {row['location']}  {_cyc(row['before_per_wave'])} → "
            f"{_cyc(row['after_per_wave'])}  ({row['delta_per_wave']:+.1f}, "
            f"{_pct(row['relative_per_wave'])})"
        )
    ins = c["instructions"]
    out += [
        "",
        f"instructions: {ins['matched']} matched, {ins['deleted']} deleted, "
        f"{ins['inserted']} inserted"
        + (" (identical opcode sequence)" if ins["identical_sequence"] else ""),
    ]
    for item in ins["items"][:TOP_INSTRUCTIONS]:
        if item["delta_per_wave"] == 0:
            continue
        out.append(
            f"  {item['key']:28s} #{item['index_before']}→#{item['index_after']}  "
            f"{item['delta_per_wave']:+.1f}/wave  {item['asm_after']}"
        )
    hot = c["hotspots"]
    for label in ("new", "vanished"):
        for h in hot[label]:
            out.append(
                f"  {label} hotspot ({h['kind']}): {h['key']}  "
                f"{h['share_before']:.1%} → {h['share_after']:.1%}"
            )
    occupancy = occupancy_text(c["occupancy"])
    if occupancy:
        out += ["", f"occupancy: {occupancy}"]
    if c["l2"]["status"] == "compared":
        out.append(
            "L2: "
            + ", ".join(
                f"{m['metric']} {m['before']:.4g} → {m['after']:.4g}" for m in c["l2"]["metrics"]
            )
        )
    return out


# ---------------------------------------------------------------------------- markdown


def render_markdown(result: Mapping[str, Any]) -> str:
    """Markdown report of a comparison (CI summaries, regression.md)."""
    out = [
        f"# Comparison: **{md_text_cell(result['verdict'])}**",
        "",
        f"Thresholds: {md_code(_threshold_text(result['thresholds']))} — a check fires when the "
        "per-wave relative change reaches its threshold and the absolute change clears the "
        "floor.",
        "",
    ]
    if result.get("reasons"):
        out += ["Reasons:", ""] + [f"* {md_text_cell(r)}" for r in result["reasons"]] + [""]
    if result.get("notes"):
        out += ["Notes:", ""] + [f"* {md_text_cell(n)}" for n in result["notes"]] + [""]
    if result.get("kind") != "hotspots":
        out += [
            "| kernel / dispatch | status | verdict | est. time change (band) "
            "| stall/wave before | after | change |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for entry in result.get("kernels", []):
            comp = entry.get("comparison")
            stall = comp["totals"]["stall_cycles"] if comp else None
            out.append(
                f"| {md_text_cell(keyed_name(entry))} | {md_text_cell(entry['status'])} | "
                f"{md_text_cell(entry.get('verdict') or '-')} | {_est_cell(comp)} | "
                f"{_md_change(stall) if stall else '- | - | -'} |"
            )
        out.append("")
    for title, comparison in _sections(result):
        if title:
            out += [f"## {md_text_cell(title)}: {md_text_cell(comparison['verdict'])}", ""]
        out.extend(_md_one(comparison))
    return terminal_page("\n".join(out) + "\n")


def _md_one(c: Mapping[str, Any]) -> list[str]:
    before, after = c["before"], c["after"]
    out = [
        f"Before: {md_code(before.get('dispatch_dir'))} ({md_text_cell(before.get('traced_waves'))} traced waves); "
        f"after: {md_code(after.get('dispatch_dir'))} ({md_text_cell(after.get('traced_waves'))} traced waves); "
        f"normalization: {md_text_cell(c['normalization']['basis'])}.",
        "",
        *[f"{'' if line.startswith(' ') else '**'}{md_text_cell(line.strip())}"
          f"{'' if line.startswith(' ') else '**'}  " for line in estimate_lines(c)],
        "",
        "| total | before/wave | after/wave | change |",
        "|---|---:|---:|---:|",
    ]
    for metric, row in c["totals"].items():
        out.append(f"| {md_text_cell(metric)} | {_md_change(row)} |")
    out += [
        "",
        "| stall type | before/wave | after/wave | delta/wave | change |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in c["stall_by_type"][:TOP_TYPES]:
        out.append(f"| {md_text_cell(row['type'])} | {_md_change(row, delta=True)} |")
    lines = c["lines"]
    out += [
        "",
        f"Source lines: **{md_text_cell(lines['status'])}**"
        + (f" — {md_text_cell(lines['reason'])}" if lines.get("reason") else ""),
        "",
    ]
    if lines["items"]:
        out += [
            "| line | status | before/wave | after/wave | delta/wave | change |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for row in lines["items"][:TOP_LINES]:
            out.append(f"| {md_code_cell(row['location'])} | {md_text_cell(row['status'])} | {_md_change(row, delta=True)} |")
        out.append("")
    ins = c["instructions"]
    out += [
        f"Instructions: {ins['matched']} matched, {ins['deleted']} deleted, "
        f"{ins['inserted']} inserted (opcode-sequence alignment).",
        "",
    ]
    changed = [item for item in ins["items"][:TOP_INSTRUCTIONS] if item["delta_per_wave"]]
    if changed:
        out += ["| key | index | asm (after) | delta/wave | stall/hit |", "|---|---|---|---:|---|"]
        for item in changed:
            out.append(
                f"| {md_text_cell(item['key'])} | {item['index_before']}→{item['index_after']}"
                f" | {md_code_cell(item['asm_after'])} | {item['delta_per_wave']:+.1f} | "
                f"{_cyc(item['stall_per_hit_before'])}→{_cyc(item['stall_per_hit_after'])} |"
            )
        out.append("")
    hot = c["hotspots"]
    for label in ("new", "vanished"):
        if hot[label]:
            out.append(
                f"{label.capitalize()} hotspots (≥ {hot['share_threshold']:.0%} of stall): "
                + ", ".join(
                    f"{md_text_cell(h['kind'])} {md_code_cell(h['key'])} "
                    f"({h['share_before']:.1%} → {h['share_after']:.1%})"
                    for h in hot[label]
                )
            )
            out.append("")
    occupancy = occupancy_text(c["occupancy"])
    if occupancy:
        out += [f"Occupancy: {md_text_cell(occupancy)}.", ""]
    if c["l2"]["status"] == "compared":
        out += ["| L2 metric | before | after | change |", "|---|---:|---:|---:|"]
        for m in c["l2"]["metrics"]:
            out.append(
                f"| {md_text_cell(m['metric'])} | {m['before']:.4g} | {m['after']:.4g} | "
                f"{_pct(m['relative'])} |"
            )
        out.append("")
    return out


def render_regression_markdown(result: dict, run: str) -> str:
    """regression.md: the comparison's Markdown under a header comment naming the run and baseline."""
    header = f"<!-- regression report: run {html_comment(run)} vs {html_comment(result['baseline'])} -->\n"
    return terminal_page(header) + render_markdown(result)
