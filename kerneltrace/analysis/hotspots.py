"""Per-instruction and per-source-line stall aggregation, artifact flags and mapping warnings."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kerneltrace.isa.classify import STALL_TYPES, classify, opcode, wait_kinds
from kerneltrace.readers.codejson import CodeRow
from kerneltrace.records import field, record
from kerneltrace.sourceloc import UNMAPPED, innermost_location

ARTIFACT_KERNEL_ENTRY = "kernel-entry"
ARTIFACT_UNMAPPED = "unmapped"
# A line that holds the kernel's s_endpgm and mixes at least this many instruction types is
# compiler glue attributed to the kernel's outermost scope (the entry/decorator line), not a
# user operation.  Every FlyDSL capture's @flyc.kernel line mixes 18-56 types; a real
# single-statement line rarely mixes more than 3.
KERNEL_ENTRY_MIN_TYPES = 4
# Warn when one line holds more than this share of the stall. Both values are the defaults of the
# thresholds table's `structure.kernel_entry_min_types` / `.dominant_line_share`, written here
# because the text CLI's start-up path imports no dataclasses (the table's); tests/test_plan_specs.py
# checks the two agree. `hotspot_analyzer.py --thresholds` passes other values to `aggregate`.
DOMINANT_LINE_SHARE = 0.5
SOURCE_MAPPING_HINT = (
    "no instruction has a Source location: rebuild with line info and bypass the JIT cache "
    "(FlyDSL: FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1; HIP/C++: -g or -gline-tables-only, keep -O3), "
    "then re-capture"
)


@record(slots=True)
class InstructionStat:
    index: int
    pc: int | None
    asm: str
    type: str
    source: str           # full Source string (inline chain kept)
    location: str         # innermost frame, or UNMAPPED
    hits: int
    latency: int
    stall: int | None
    idle: int | None
    mixed_wait: bool = False
    pc_issued: int | None = None
    pc_stalled: int | None = None
    stall_reasons: dict[str, int] | None = None


@record
class SourceLineStat:
    location: str
    stall: int | None
    latency: int
    idle: int | None
    hits: int
    share: float | None
    stall_rate: float | None
    dominant_type: str | None
    artifact: str | None
    instructions: list[int]
    pc_stalled: int | None = None
    pc_issued: int | None = None
    call_sites: list[str] = field(default_factory=list)


@record
class TypeStat:
    type: str
    stall: int
    share: float | None
    instructions: int
    mixed_wait_stall: int = 0
    pc_stalled: int | None = None


@record
class HotspotAnalysis:
    metric: str                     # what ranks: "stall" | "pc_stalled" | "latency" (legacy)
    instructions: list[InstructionStat]   # every instruction, ranked by metric desc
    source_lines: list[SourceLineStat]    # ranked by metric desc
    stall_by_type: list[TypeStat]
    mapped_fraction: float
    warnings: list[str]



def stall_rate(stall: int | None, latency: int) -> float | None:
    """Stall / latency, capped at 1 (some decoders over-report stall; codejson warns); None if undefined."""
    if stall is None or latency <= 0:
        return None
    return min(1.0, stall / latency)

def _metric_value(stat: InstructionStat, metric: str) -> int:
    if metric == "pc_stalled":
        return stat.pc_stalled or 0
    if metric == "latency":
        return stat.latency
    return stat.stall or 0


def instruction_stats(rows: Iterable[CodeRow], classifier: Callable[[str], str] = classify) -> list[InstructionStat]:
    """One InstructionStat per code row, in code order."""
    stats = []
    # identical instruction texts recur (waits, nops, moves): classify each text once
    kinds: dict[str, tuple[str, bool]] = {}
    locations: dict[str, str] = {}  # and split each Source string once
    for row in rows:
        asm = row.asm
        known = kinds.get(asm)
        if known is None:
            is_wait = opcode(asm).startswith("s_wait")
            known = kinds[asm] = (classifier(asm), is_wait and len(wait_kinds(asm)) > 1)
        source = row.source
        location = locations.get(source)
        if location is None:
            location = locations[source] = innermost_location(source) or UNMAPPED
        # positional: InstructionStat's field order (index, pc, asm, type, source, location, hits,
        # latency, stall, idle, mixed_wait, pc_issued, pc_stalled, stall_reasons)
        stats.append(InstructionStat(row.index, row.vaddr, asm, known[0], source, location, row.hits,
                                     row.latency, row.stall, row.idle, known[1], row.pc_issued,
                                     row.pc_stalled, row.stall_reasons))
    return stats


def _share(part: int, total: int) -> float | None:
    return part / total if total > 0 else None


def _sum_optional(values: Iterable[int | None]) -> int | None:
    total, seen = 0, False
    for value in values:
        if value is not None:
            total += value
            seen = True
    return total if seen else None


def kernel_entry_locations(stats: list[InstructionStat],
                           min_types: int = KERNEL_ENTRY_MIN_TYPES) -> set[str]:
    """Lines flagged "kernel-entry" (documented rule, docs/hotspot-json.md).

    A candidate is the line of the kernel's s_endpgm (or of its first instruction when no
    s_endpgm is listed). It is flagged when its instructions mix at least `min_types`
    instruction types: compiler glue (kernarg loads, address arithmetic, waits, the epilogue)
    charged to the kernel's outermost scope.
    """
    if not stats:
        return set()
    candidates = {stat.location for stat in stats if stat.asm.lstrip().startswith("s_endpgm") and opcode(stat.asm) == "s_endpgm"}
    if not candidates:
        candidates = {stats[0].location}
    candidates.discard(UNMAPPED)
    types: dict[str, set[str]] = {}
    for stat in stats:
        if stat.location in candidates:
            types.setdefault(stat.location, set()).add(stat.type)
    return {location for location, kinds in types.items() if len(kinds) >= min_types}


def _dominant_type(stats: list[InstructionStat], metric: str) -> str | None:
    weight: dict[str, int] = {}
    for stat in stats:
        weight[stat.type] = weight.get(stat.type, 0) + _metric_value(stat, metric)
    if not weight or max(weight.values()) <= 0:
        return None
    # ties: the type listed first in STALL_TYPES (deterministic)
    order = {kind: position for position, kind in enumerate(STALL_TYPES)}
    return min(weight, key=lambda kind: (-weight[kind], order.get(kind, len(order))))


def aggregate(stats: list[InstructionStat], metric: str = "stall", *,
              kernel_entry_min_types: int = KERNEL_ENTRY_MIN_TYPES,
              dominant_line_share: float = DOMINANT_LINE_SHARE) -> HotspotAnalysis:
    """Rank instructions and source lines by `metric`; build the type breakdown and warnings
    (one line holding more than `dominant_line_share` of the metric is one)."""
    warnings: list[str] = []
    weights = [_metric_value(stat, metric) for stat in stats]  # aligned with stats
    total_metric = sum(weights)
    entry_lines = kernel_entry_locations(stats, kernel_entry_min_types)

    by_line: dict[str, list[InstructionStat]] = {}
    line_weight: dict[str, int] = {}
    for stat, weight in zip(stats, weights, strict=True):
        members = by_line.get(stat.location)
        if members is None:
            by_line[stat.location] = [stat]
            line_weight[stat.location] = weight
        else:
            members.append(stat)
            line_weight[stat.location] += weight
    lines: list[SourceLineStat] = []
    for location, members in by_line.items():
        stall = _sum_optional(stat.stall for stat in members)
        latency = sum(stat.latency for stat in members)
        weight = line_weight[location]
        if location == UNMAPPED:
            artifact = ARTIFACT_UNMAPPED
        elif location in entry_lines:
            artifact = ARTIFACT_KERNEL_ENTRY
        else:
            artifact = None
        call_sites = sorted({stat.source.split(" -> ", 1)[1] for stat in members if " -> " in stat.source})
        lines.append(
            SourceLineStat(
                location=location,
                stall=stall,
                latency=latency,
                idle=_sum_optional(stat.idle for stat in members),
                hits=sum(stat.hits for stat in members),
                share=_share(weight, total_metric),
                stall_rate=stall_rate(stall, latency),
                dominant_type=_dominant_type(members, metric),
                artifact=artifact,
                instructions=[stat.index for stat in members],
                pc_stalled=_sum_optional(stat.pc_stalled for stat in members),
                pc_issued=_sum_optional(stat.pc_issued for stat in members),
                call_sites=call_sites,
            )
        )
    lines.sort(key=lambda line: (-line_weight[line.location], line.instructions[0]))

    by_type: dict[str, TypeStat] = {}
    for stat in stats:
        entry = by_type.setdefault(stat.type, TypeStat(stat.type, 0, None, 0, 0, None))
        entry.stall += stat.stall or 0
        entry.instructions += 1
        if stat.mixed_wait:
            entry.mixed_wait_stall += stat.stall or 0
        if stat.pc_stalled is not None:
            entry.pc_stalled = (entry.pc_stalled or 0) + stat.pc_stalled
    type_weight = {
        kind: (entry.pc_stalled or 0) if metric == "pc_stalled" else (entry.stall if metric == "stall" else 0)
        for kind, entry in by_type.items()
    }
    if metric == "latency":
        for stat in stats:
            type_weight[stat.type] += stat.latency
    for kind, entry in by_type.items():
        entry.share = _share(type_weight[kind], total_metric)
    order = {kind: position for position, kind in enumerate(STALL_TYPES)}
    types = sorted(by_type.values(), key=lambda e: (-type_weight[e.type], order.get(e.type, len(order))))

    order = sorted(range(len(stats)), key=lambda at: (-weights[at], stats[at].index))
    ranked = [stats[at] for at in order]
    mapped = sum(1 for stat in stats if stat.location != UNMAPPED)
    mapped_fraction = mapped / len(stats) if stats else 0.0
    if stats and mapped == 0:
        warnings.append(SOURCE_MAPPING_HINT)
    elif mapped < len(stats):
        warnings.append(
            f"{len(stats) - mapped} of {len(stats)} instructions have no Source location; they are "
            f"grouped under {UNMAPPED} (artifact \"unmapped\")"
        )
    for line in lines:
        if line.artifact == ARTIFACT_KERNEL_ENTRY and (line.share or 0) > 0:
            warnings.append(
                f"{line.location} holds {100 * (line.share or 0):.1f}% of the {_metric_name(metric)} and is the kernel "
                f"entry/decorator line (compiler glue charged to the kernel's outermost scope): it is "
                f"flagged \"kernel-entry\"; rank the lines with explicit operations instead"
            )
    real = [line for line in lines if line.artifact is None]
    if real and (real[0].share or 0) > dominant_line_share:
        warnings.append(
            f"one line, {real[0].location}, holds {100 * (real[0].share or 0):.1f}% of the {_metric_name(metric)}"
        )
    return HotspotAnalysis(metric, ranked, lines, types, mapped_fraction, warnings)


def _metric_name(metric: str) -> str:
    return {"stall": "stall cycles", "pc_stalled": "stalled PC samples", "latency": "latency cycles"}[metric]


def top_real_lines(lines: list[SourceLineStat], count: int) -> list[SourceLineStat]:
    """The first `count` source lines that are not artifacts (the lines worth optimising)."""
    return [line for line in lines if line.artifact is None][:count]


def user_lines(source_lines: list[dict], limit: int | None = None) -> list[dict]:
    """A hotspot document's top source lines that carry user code (no artifact) and some stall.

    PC-sampling documents rank by stalled samples: a line with share > 0 and no stall cycles counts.
    """
    lines = [
        line
        for line in source_lines
        if not line.get("artifact")
        and ((line.get("stall_cycles") or 0) > 0 or (line.get("share") or 0) > 0)
    ]
    return lines if limit is None else lines[:limit]
