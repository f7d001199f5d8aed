"""Hotspot text report: summary, occupancy, stall types with bars, top lines/instructions, PC sampling."""

from __future__ import annotations

from kerneltrace.errors import InputError
from kerneltrace.numfmt import percent
from kerneltrace.readers.codejson import CodeFormat
from kerneltrace.readers.snapshots import SourceIndex
from kerneltrace.render.fmt import bar, cycles, head, tail
from kerneltrace.safetext import terminal_page
from kerneltrace.sourceloc import innermost_location, split_location

RULE = "═" * 90
DETAIL_INSTRUCTIONS = 6


def section(title: str) -> list[str]:
    return ["", RULE, f"  {title}", RULE]


def _metric_label(document: dict) -> tuple[str, str]:
    ranked_by = document.get("ranked_by", "stall_cycles")
    return {
        "stall_cycles": ("stall_cycles", "Stall"),
        "pc_stalled": ("pc_stalled", "Stalled"),
        "latency_cycles": ("latency_cycles", "Latency"),
    }[ranked_by]


def _summary(document: dict) -> list[str]:
    totals = document["totals"]
    arch = document["arch"]
    dispatch = document["dispatch"]
    lines = section("Summary")
    lines.append(f"  Kernel:          {document.get('kernel') or '(unknown)'}")
    if dispatch.get("id") is not None:
        label = f" {dispatch['label']}" if dispatch.get("label") else ""
        lines.append(
            f"  Dispatch:        {dispatch['id']} (agent handle {dispatch.get('agent')}){label}"
        )
    lines.append(f"  Format:          {document['format']}")
    if arch.get("name"):
        certainty = "certain" if arch.get("certain") else "not certain"
        source = arch.get("source_file") or arch["source"]
        lines.append(f"  Architecture:    {arch['name']} (from {source}, {certainty})")
    else:
        candidates = ", ".join(arch.get("candidates") or []) or "any"
        lines.append(
            f"  Architecture:    unknown (candidates: {candidates}; pass --arch or --agent-info)"
        )
    lines.append(
        f"  Instructions:    {totals['instructions']} listed, {totals['executed_instructions']} executed"
    )
    if document["format"] == CodeFormat.PCSAMPLING:
        lines.append(
            f"  PC samples:      {totals.get('pc_issued', 0)} issued, {totals.get('pc_stalled', 0)} stalled"
        )
        return lines
    latency = totals["latency_cycles"]
    stall = totals["stall_cycles"]
    lines.append(f"  Hits:            {totals['hits']} (wave executions)")
    lines.append(
        f"  Latency:         {cycles(latency)} cycles (summed over traced waves; includes stall; not kernel time)"
    )
    if stall is None:
        lines.append("  Stall:           n/a (legacy format has no Stall column)")
    else:
        share = stall / latency if latency else None
        lines.append(
            f"  Stall:           {cycles(stall)} cycles ({percent(share)} of latency)"
        )
    lines.append(
        f"  Idle:            {cycles(totals['idle_cycles'])} cycles (gaps before instructions)"
    )
    return lines


def _occupancy(document: dict) -> list[str]:
    occupancy = document.get("occupancy") or {}
    lines = section("Register Pressure & Occupancy")
    meta = (document.get("metadata") or {}).get("kernel_trace")
    if meta is None:
        lines.append(
            "  (no kernel_trace row for this dispatch: registers from the ISA scan; LDS and workgroup unknown;"
        )
        lines.append("   pass --kernel-trace CSV from the same run)")
    registers = occupancy.get("registers") or {}
    for key, value in registers.items():
        lines.append(f"  {key + ':':<22} {value}")
    waves = occupancy.get("waves_per_simd")
    limited = occupancy.get("limited_by")
    lines.append(
        f"  {'occupancy:':<22} {waves if waves is not None else 'n/a'} waves/SIMD (limited by {limited or 'n/a'})"
    )
    limits = occupancy.get("limits") or {}
    if limits:
        shown = ", ".join(
            f"{key} {value if value is not None else 'n/a'}" for key, value in limits.items()
        )
        lines.append(f"  {'limits:':<22} {shown}")
    next_level = occupancy.get("next_level")
    if isinstance(next_level, dict) and next_level:
        needs = next_level.get("needs") or []
        target = next_level.get("waves_per_simd")
        for need in needs if isinstance(needs, list) else []:
            text = need.get("text") if isinstance(need, dict) else str(need)
            lines.append(f"  {'next level:':<22} {target} waves/SIMD: {text}")
        if not needs:
            lines.append(
                f"  {'next level:':<22} " + ", ".join(f"{k} {v}" for k, v in next_level.items())
            )
    elif next_level:
        lines.append(f"  {'next level:':<22} {next_level}")
    if occupancy.get("upper_bound"):
        lines.append(f"  {'':<22} (upper bound: some limits could not be evaluated)")
    sources = occupancy.get("sources")
    if isinstance(sources, dict):
        for key, value in sources.items():
            if value:
                lines.append(f"  {'  ' + key + ' from:':<22} {value}")
    for note in occupancy.get("notes") or []:
        lines.append(f"  note: {note}")
    return lines


def _types(document: dict) -> list[str]:
    field, label = _metric_label(document)
    lines = section(
        f"Breakdown by Type ({'stalled samples' if field == 'pc_stalled' else label.lower() + ' cycles'})"
    )
    for entry in document["stall_by_type"]:
        value = entry.get("pc_stalled") if field == "pc_stalled" else entry.get("stall_cycles")
        if field == "latency_cycles":
            value = None
        lines.append(f"  {entry['type']:<15} {cycles(value):>9}  {bar(entry['share'])}")
    return lines


def _snippet(sources: SourceIndex, location: str, context: int, warnings: list[str]) -> list[str]:
    path, line_number = split_location(location)
    if line_number is None:
        return []
    local = sources.resolve(path)
    if local is None:
        return [f"      (no source copy for {path} in snapshots.json)"]
    try:
        text_lines, replaced = sources.lines(local)
    except InputError as err:
        warnings.append(f"{local}: cannot read source copy ({err.what}); snippet skipped")
        return []
    if replaced:
        note = f"{local}: not UTF-8; undecodable bytes shown as U+FFFD"
        if note not in warnings:
            warnings.append(note)
    start = max(1, line_number - context)
    end = min(len(text_lines), line_number + context)
    out = []
    for number in range(start, end + 1):
        marker = ">>>" if number == line_number else "   "
        out.append(f"      {marker} {number:5d} | {text_lines[number - 1].rstrip()}")
    return out


def _lines(
    document: dict,
    topk: int,
    detail: bool,
    context: int,
    sources: SourceIndex | None,
    warnings: list[str],
) -> list[str]:
    field, label = _metric_label(document)
    lines = section(
        f"Top-{topk} Hotspot Source Lines (ranked by {field}, aggregated per innermost line)"
    )
    lines.append(f"  {'#':>3} {label:>9} {'%Total':>7}  {'StallRate':<38} {'DomType':<14} Source")
    by_index = {item["index"]: item for item in document["instructions"]}
    shown = document["source_lines"][:topk]
    for rank, line in enumerate(shown, 1):
        value = line.get(field)
        tag = f" [{line['artifact']}]" if line.get("artifact") else ""
        lines.append(
            f"  {rank:>3} {cycles(value):>9} {percent(line['share'], width=5):>7}  {bar(line['stall_rate']):<38} "
            f"{line.get('dominant_type') or '-':<14} {tail(line['location'], 48)}{tag}"
        )
        if detail and (value or 0) > 0:
            members = [by_index[index] for index in line["instructions"] if index in by_index]
            members = [item for item in members if (item.get(field) or 0) > 0]
            members.sort(key=lambda item: -(item.get(field) or 0))
            if sources is not None and line.get("artifact") != "unmapped":
                lines.extend(_snippet(sources, line["location"], context, warnings))
            for item in members[:DETAIL_INSTRUCTIONS]:
                lines.append(
                    f"        {cycles(item.get(field)):>9}  {item['type']:<14} {head(item['asm'], 60)}"
                )
            if len(members) > DETAIL_INSTRUCTIONS:
                lines.append(
                    f"        … {len(members) - DETAIL_INSTRUCTIONS} more instructions on this line"
                )
    return lines


def _instructions(document: dict, topk: int) -> list[str]:
    field, label = _metric_label(document)
    lines = section(f"Top-{topk} Hotspot Instructions (by {field})")
    lines.append(f"  {'#':>3} {label:>9} {'%Total':>7}  {'Type':<14} {'ASM':<48} Source")
    total = document["totals"].get(field) or 0
    for rank, item in enumerate(document["instructions"][:topk], 1):
        value = item.get(field)
        share = (value / total) if total and value is not None else None
        lines.append(
            f"  {rank:>3} {cycles(value):>9} {percent(share, width=5):>7}  {item['type']:<14} "
            f"{head(item['asm'], 48):<48} {tail(innermost_location(item['source']), 38)}"
        )
    return lines


def _pc_sampling(document: dict) -> list[str]:
    section_data = document.get("pc_sampling") or {}
    lines = section("PC-Sampling Stall Reasons (rocprofiler-sdk not-issued reasons)")
    for entry in section_data.get("stall_reasons", []):
        lines.append(f"  {entry['reason']:<26} {entry['samples']:>9}  {bar(entry['share'])}")
    return lines


def render_text(
    document: dict,
    *,
    topk: int = 15,
    mode: str = "both",
    detail: bool = False,
    context: int = 3,
    sources: SourceIndex | None = None,
) -> tuple[str, list[str]]:
    """The text report and any warnings produced while rendering (e.g. non-UTF-8 sources)."""
    render_warnings: list[str] = []
    out = [f"Loading: {document['dispatch_dir']}"]
    out += _summary(document)
    out += _occupancy(document)
    out += _types(document)
    if document["format"] == CodeFormat.PCSAMPLING:
        out += _pc_sampling(document)
    if mode in ("src", "both"):
        out += _lines(document, topk, detail, context, sources, render_warnings)
    if mode in ("asm", "both"):
        out += _instructions(document, topk)
    warnings = list(document.get("warnings") or []) + render_warnings
    if warnings:
        out += section("Warnings")
        out += [f"  - {warning}" for warning in warnings]
    return terminal_page("\n".join(out) + "\n"), render_warnings
