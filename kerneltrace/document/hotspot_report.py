"""The hotspot document of one dispatch dir: readers + model + analyses -> kerneltrace.hotspots/1 (/2 with waves)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kerneltrace import __version__
from kerneltrace.analysis.dispatch_inputs import (
    check_not_empty,
    kernel_groups,
    select_kernel,
)
from kerneltrace.analysis.hotspots import (
    SOURCE_MAPPING_HINT,
    HotspotAnalysis,
    aggregate,
    instruction_stats,
    user_lines,
)
from kerneltrace.errors import InputError
from kerneltrace.model.metadata import (
    Metadata,
    find_metadata,
    listed_names,
    one_search,
    source_label,
)
from kerneltrace.model.naming import parse_dispatch_name
from kerneltrace.namematch import names_matching
from kerneltrace.readers.codejson import (
    PC_SAMPLING_REASONS,
    CodeFormat,
    CodeRow,
    CodeTable,
    read_code_json,
)
from kerneltrace.readers.csvs import AgentInfo, KernelTraceRow
from kerneltrace.readers.regular import NotRegularFile
from kerneltrace.readers.snapshots import SourceIndex, read_snapshots
from kerneltrace.records import record

SCHEMA = "kerneltrace.hotspots/1"
SCHEMA_WITH_WAVES = "kerneltrace.hotspots/2"
TOOL = "kernel-trace-analysis"
SNIPPET_LINES = 5  # top user lines whose source windows the document carries (plan.html shows them)


@record
class DispatchAnalysis:
    """Everything the CLI needs: the document plus the parsed inputs behind it."""

    document: dict
    table: CodeTable
    sources: SourceIndex


def _metric(table: CodeTable, rows: list[CodeRow]) -> str:
    if table.format == CodeFormat.PCSAMPLING:
        return "pc_stalled"
    if rows and rows[0].stall is None:
        return "latency"
    return "stall"


def _arch_section(
    explicit: str | None, agents: list[AgentInfo], instructions: list[str], warnings: list[str],
    assembly_target: str | None = None,
) -> tuple[dict, object]:
    from kerneltrace.arch.detect import resolve_arch
    from kerneltrace.arch.table import get_arch

    # full instruction lines: some ISA clues are operand modifiers, not opcodes
    if assembly_target is not None:
        resolution = resolve_arch(None, [assembly_target], instructions, metadata_source="assembly")
    else:
        resolution = resolve_arch(explicit, [agent.name for agent in agents], instructions)
    warnings.extend(f"arch: {note}" for note in resolution.notes)
    spec = get_arch(resolution.name) if resolution.name else None
    section = {
        "name": resolution.name,
        "source": resolution.source,
        "certain": bool(resolution.certain),
        "candidates": list(resolution.candidates),
        "evidence": list(resolution.evidence),
    }
    return section, spec


def _occupancy(
    spec: object, rows: list[CodeRow], trace_row: KernelTraceRow | None, candidates: list[str]
) -> dict:
    from kerneltrace.analysis.occupancy import compute_occupancy
    from kerneltrace.isa.registers import scan_registers

    # the scan depends only on the set of texts: skip the repeats
    registers = scan_registers(dict.fromkeys(row.asm for row in rows))
    meta = trace_row.meta() if trace_row else None
    # unknown arch: per-candidate figures instead of a silent default
    return compute_occupancy(spec, registers, meta, candidates=candidates if spec is None else ())


def instruction_dicts(analysis: HotspotAnalysis, pc_sampling: bool) -> list[dict]:
    result = []
    for stat in analysis.instructions:
        item = {
            "index": stat.index,
            "pc": stat.pc,
            "asm": stat.asm,
            "type": stat.type,
            "source": stat.source,
            "hits": stat.hits,
            "latency_cycles": stat.latency,
            "stall_cycles": stat.stall,
            "idle_cycles": stat.idle,
        }
        if pc_sampling:
            item["pc_issued"] = stat.pc_issued
            item["pc_stalled"] = stat.pc_stalled
            item["stall_reasons"] = stat.stall_reasons
        result.append(item)
    return result


def line_dicts(analysis: HotspotAnalysis, pc_sampling: bool) -> list[dict]:
    result = []
    for line in analysis.source_lines:
        item = {
            "location": line.location,
            "stall_cycles": line.stall,
            "latency_cycles": line.latency,
            "idle_cycles": line.idle,
            "hits": line.hits,
            "share": line.share,
            "stall_rate": line.stall_rate,
            "dominant_type": line.dominant_type,
            "artifact": line.artifact,
            "instructions": line.instructions,
            "call_sites": line.call_sites,
        }
        if pc_sampling:
            item["pc_issued"] = line.pc_issued
            item["pc_stalled"] = line.pc_stalled
        result.append(item)
    return result


def type_dicts(analysis: HotspotAnalysis, legacy: bool, pc_sampling: bool) -> list[dict]:
    result = []
    for entry in analysis.stall_by_type:
        item = {
            "type": entry.type,
            "stall_cycles": None if legacy else entry.stall,
            "share": entry.share,
            "instructions": entry.instructions,
            "mixed_wait_stall_cycles": None if legacy else entry.mixed_wait_stall,
        }
        if pc_sampling:
            item["pc_stalled"] = entry.pc_stalled
        result.append(item)
    return result


def _optional_sum(values: list[int | None]) -> int | None:
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def _pc_sampling_section(rows: list[CodeRow]) -> dict:
    reasons = dict.fromkeys(PC_SAMPLING_REASONS, 0)
    for row in rows:
        for name, count in (row.stall_reasons or {}).items():
            reasons[name] = reasons.get(name, 0) + count
    total = sum(reasons.values())
    return {
        "issued_samples": sum(row.pc_issued or 0 for row in rows),
        "stalled_samples": sum(row.pc_stalled or 0 for row in rows),
        "stall_reasons": [
            {"reason": name, "samples": count, "share": (count / total) if total else None}
            for name, count in sorted(reasons.items(), key=lambda item: -item[1])
        ],
    }


TYPE_CHECKING = False  # typing's flag without importing typing (CLI start-up path)
if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    from kerneltrace.thresholds import StructureThresholds

    class AnalysisOptions(TypedDict, total=False):
        """run_analysis's keyword options, as analyze_dispatch passes them through."""

        arch: str | None
        kernel_trace_csv: Path | None
        agent_info_csv: Path | None
        kernel: str | None
        waves: bool
        capture_report: Path | None
        structure: StructureThresholds | None


def run_analysis(
    dispatch_dir: Path | str,
    *,
    arch: str | None = None,  # --arch: overrides agent_info and the ISA evidence
    kernel_trace_csv: Path | None = None,  # --kernel-trace / --agent-info: replace the bundle search
    agent_info_csv: Path | None = None,
    kernel: str | None = None,  # --kernel SUBSTR: the kernel of a multi-kernel code.json
    waves: bool = False,  # --waves: the wave-level analysis (schema /2)
    capture_report: Path | None = None,  # the decode report: truncated captures are stated
    text_only: bool = False,  # the CLI's text report alone: no `costs` and `snippets` (it shows neither)
    structure: StructureThresholds | None = None,  # --thresholds: None = the table's defaults
) -> DispatchAnalysis:
    """Read and analyse one dispatch dir; raises InputError for bad input (never modifies it).

    Steps: check the paths, read code.json (the kernel chosen) and snapshots.json, aggregate the
    stall, find the CSV metadata and the arch, model occupancy, assemble the document, then the
    optional parts (waves; costs, structure, the structure thresholds used and source windows
    unless `text_only`). Without `structure` the text path imports no thresholds table
    (dataclasses): `aggregate` has the defaults written in."""
    given = str(dispatch_dir)
    directory = _dispatch_directory(given, kernel_trace_csv, agent_info_csv)
    table = read_code_json(directory / "code.json")
    warnings: list[str] = list(table.warnings)
    check_not_empty(table, table.rows)
    group = select_kernel(table, kernel, warnings)
    rows = group.rows
    check_not_empty(table, rows)
    sources = _sources(directory, warnings)
    pc_sampling = table.format == CodeFormat.PCSAMPLING
    legacy = table.format == CodeFormat.LEGACY
    metric = _metric(table, rows)
    analysis = (aggregate(instruction_stats(rows), metric) if structure is None else
                aggregate(instruction_stats(rows), metric,
                          kernel_entry_min_types=structure.kernel_entry_min_types,
                          dominant_line_share=structure.dominant_line_share))
    warnings.extend(analysis.warnings)
    warnings.extend(_format_warnings(legacy, pc_sampling))

    name = parse_dispatch_name(directory)
    with one_search():  # the dispatch dir listed once: the bundle search and the wave-file names
        metadata = find_metadata(
            directory, name.id, [n for n in (group.symbol, group.name) if n],
            kernel_trace_csv=kernel_trace_csv and Path(kernel_trace_csv),
            agent_info_csv=agent_info_csv and Path(agent_info_csv), kernel_filter=kernel,
        )
        capture_warnings = _capture_warnings(directory, capture_report)
    warnings.extend(metadata.warnings)
    arch_section, spec = _resolved_arch(arch, metadata, directory, rows, warnings,
                                        [n for n in (group.symbol, group.name) if n])
    occupancy = _occupancy(spec, rows, metadata.trace.row, arch_section["candidates"])

    document: dict = {
        "schema": SCHEMA,
        "tool": {"name": TOOL, "version": __version__},
        "dispatch_dir": given,
        "dispatch": {"agent": name.agent, "id": name.id, "label": name.label},
        "kernel": group.name or group.symbol,
        "kernel_symbol": group.symbol,
        "kernels_in_trace": [g.name or g.symbol for g in kernel_groups(table)],
        "format": table.format,
        "ranked_by": {"stall": "stall_cycles", "pc_stalled": "pc_stalled", "latency": "latency_cycles"}[metric],
        "arch": arch_section,
        "totals": _totals(rows, pc_sampling),
        "stall_by_type": type_dicts(analysis, legacy, pc_sampling),
        "source_lines": line_dicts(analysis, pc_sampling),
        "instructions": instruction_dicts(analysis, pc_sampling),
        "occupancy": occupancy,
        "pc_sampling": _pc_sampling_section(rows) if pc_sampling else None,
        "metadata": _metadata_section(metadata),
        "source_mapping": {
            "mapped_fraction": analysis.mapped_fraction,
            "hint": SOURCE_MAPPING_HINT if analysis.mapped_fraction == 0 else None,
        },
        "warnings": warnings,
        "capture_warnings": capture_warnings,
    }
    warnings.extend(document["capture_warnings"])
    wave_level = _waves(directory, table, structure) if waves else None
    if wave_level is not None and not wave_level.get("waves"):
        said = any(w.startswith("no wave files") for w in document["capture_warnings"])
        # --waves on a dir without wave files: the same document as without the flag (what the
        # pipeline writes for it), not a wave section of zeros that reads as wave-level evidence
        if not said:
            warnings.append("--waves: no wave files in the dispatch dir, so no wave-level analysis: "
                            "loops, waits and gains come from code.json alone")
    elif wave_level is not None:
        document["waves"] = wave_level
        document["schema"] = SCHEMA_WITH_WAVES
    if not text_only:
        document["cu_usage"] = _cu_usage(directory, document)
        _add_plan_inputs(document, sources, structure)
    return DispatchAnalysis(document, table, sources)


# occupancy.json from this size on is read by pysimdjson for cu_usage when the run has not
# loaded it (a --waves run has): below, json.loads costs less than the import (~3 ms)
SIMD_OCCUPANCY_BYTES = 256 * 1024


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _cu_usage(directory: Path, document: dict) -> dict | None:
    """The kernel's use of the traced SEs' CUs from occupancy.json, read only when the launch
    facts may need it: no kernel-trace row, or one joined by kernel name alone (which the
    structure may find is another launch)."""
    metadata = document.get("metadata") or {}
    if metadata.get("kernel_trace") and metadata.get("kernel_trace_join") != "kernel_name":
        return None
    import gc

    from kerneltrace.analysis.cu_usage import READ_LIMIT, observed_usage
    from kerneltrace.readers.regular import read_json

    # occupancy.json's events are ~65 000 small lists: the collector's passes while they are
    # built and read find nothing to free (no cycles) but scan them all (~50 ms of 150)
    collecting = gc.isenabled()
    gc.disable()
    try:
        occupancy = None
        path = directory / "occupancy.json"
        if "simdjson" in sys.modules or _size(path) >= SIMD_OCCUPANCY_BYTES:
            from kerneltrace.analysis.waves.occupancy import cu_usage_document

            occupancy = cu_usage_document(path, READ_LIMIT)  # pysimdjson
        if occupancy is None:  # not vouched for, small, or no pysimdjson: json.loads words it
            occupancy = read_json(path, "occupancy.json", READ_LIMIT)
        return observed_usage(occupancy, [document.get("kernel"), document.get("kernel_symbol")])
    except InputError:  # absent, unreadable or larger than a fact this cheap is worth
        return None
    finally:
        if collecting:
            gc.enable()


def _dispatch_directory(given: str, kernel_trace_csv: Path | None, agent_info_csv: Path | None) -> Path:
    """The dispatch dir a command line names (the dir, or its code.json), checked before reading."""
    directory = Path(given)
    if not directory.exists():
        raise InputError("dispatch directory not found", given, "pass an existing ui_output_agent_*_dispatch_* directory")
    if directory.is_file() and directory.name == "code.json":
        directory = directory.parent
    if not directory.is_dir():
        raise InputError("not a directory", given, "pass the ui_output_agent_*_dispatch_* directory, not a file")
    if not os.path.lexists(directory / "code.json"):
        raise InputError(
            "no code.json in this directory (not a decoded ATT dispatch dir)",
            given,
            "pass a ui_output_agent_*_dispatch_* directory written by rocprofv3 --att with the decoder installed",
        )
    for label, csv_path in (("--kernel-trace", kernel_trace_csv), ("--agent-info", agent_info_csv)):
        if csv_path is not None and not os.path.lexists(csv_path):
            raise InputError(f"{label} file not found", str(csv_path), "check the path")
    return directory


def _sources(directory: Path, warnings: list[str]) -> SourceIndex:
    """snapshots.json's source copies; optional: a FIFO or device in its place is skipped, never read."""
    try:
        return read_snapshots(directory)
    except NotRegularFile as err:
        warnings.append(f"snapshots.json skipped: {err.what} (no source snippets)")
        return SourceIndex({})


def _format_warnings(legacy: bool, pc_sampling: bool) -> list[str]:
    """What the code.json format does not measure, said once in the document."""
    warnings = []
    if legacy:
        warnings.append(
            "legacy rocprofv2 code.json: no Stall, Idle, Codeobj or Vaddr columns -- stall cycles and "
            "idle cycles are unknown (null) and lines/instructions are ranked by latency cycles"
        )
    if pc_sampling:
        warnings.append(
            "PC-sampling capture: Hit/Latency/Stall/Idle are not measured; instructions and lines are "
            "ranked by stalled PC samples (pc_stalled)"
        )
    return warnings


def _resolved_arch(arch: str | None, metadata: Metadata, directory: Path, rows: list[CodeRow],
                   warnings: list[str], symbols: list[str]) -> tuple[dict, object]:
    """The document's `arch` section and ArchSpec: --arch, the agent CSV, the bundle's device
    assembly defining the kernel (`symbols`), else the ISA evidence."""
    agent_csv = metadata.agent_csv
    instructions = list(dict.fromkeys(row.asm for row in rows))
    assembly = None
    if arch is None and not metadata.agents:
        from kerneltrace.model.assembly import assembly_target

        # no agent_info: the device assembly a --save-temps build left beside the capture
        assembly = assembly_target(directory, symbols)
    if assembly is not None:
        arch_section, spec = _arch_section(None, [], instructions, warnings, assembly[0])
        arch_section["source_file"] = source_label(assembly[1], directory)
    else:
        arch_section, spec = _arch_section(arch, metadata.agents, instructions, warnings)
    if agent_csv and arch_section["source"].startswith("agent_info"):
        # said in the report and the plan, so a user sees which GPU's CSV decided
        arch_section["source_file"] = source_label(agent_csv, directory)
    if arch_section["name"] is None:
        warnings.append(
            "architecture unknown (no --arch, no agent_info CSV next to the dispatch dir, no decisive "
            "opcode): occupancy limits that depend on it are null; pass --arch or --agent-info"
        )
    return arch_section, spec


def _totals(rows: list[CodeRow], pc_sampling: bool) -> dict:
    """The document's `totals`: instructions, executed ones, cycle sums (PC samples when sampled)."""
    hit_rows = [row for row in rows if row.hits > 0]
    totals = {
        "instructions": len(rows),
        "executed_instructions": len(hit_rows) if not pc_sampling else sum(
            1 for row in rows if (row.pc_issued or 0) + (row.pc_stalled or 0) > 0
        ),
        "stall_cycles": _optional_sum([row.stall for row in rows]),
        "latency_cycles": sum(row.latency for row in rows),
        "idle_cycles": _optional_sum([row.idle for row in rows]),
        "hits": sum(row.hits for row in rows),
    }
    if pc_sampling:
        totals["pc_issued"] = sum(row.pc_issued or 0 for row in rows)
        totals["pc_stalled"] = sum(row.pc_stalled or 0 for row in rows)
    return totals


def _metadata_section(metadata: Metadata) -> dict:
    """The document's `metadata`: the kernel_trace row, how it was joined, the first agent."""
    trace_row, agent_csv = metadata.trace.row, metadata.agent_csv
    agent = metadata.agents[0] if metadata.agents else None
    return {
        "kernel_trace": trace_row.to_dict() if trace_row else None,
        "kernel_trace_join": metadata.trace.join,
        "agent_info_csv": str(agent_csv) if agent_csv else None,
        "agent": None if agent is None else {
            "name": agent.name,
            "product_name": agent.product_name,
            "cu_count": agent.cu_count,
            "simd_per_cu": agent.simd_per_cu,
            "max_waves_per_simd": agent.max_waves_per_simd,
            "wave_front_size": agent.wave_front_size,
            "lds_size_kb": agent.lds_size_kb,
            "max_engine_clock_mhz": agent.max_engine_clock_mhz,
        },
    }


def _add_plan_inputs(document: dict, sources: SourceIndex,
                     structure: StructureThresholds | None) -> None:
    """What only the JSON document carries (lazy imports: off the text report's start-up path):
    costs, structure and the thresholds it was detected with, and the source windows the plan
    shows, so it renders without the capture."""
    from kerneltrace.analysis.costs import cost_summary
    from kerneltrace.analysis.structure import structure_of
    from kerneltrace.thresholds import DEFAULT_STRUCTURE, values_of

    limits = structure or DEFAULT_STRUCTURE
    document["costs"] = cost_summary(
        document["instructions"], (document.get("waves") or {}).get("waves") or None
    )
    document["structure"] = structure_of(document, limits)
    document["thresholds"] = {"structure": values_of(limits)}
    locations = [line["location"] for line in user_lines(document["source_lines"], SNIPPET_LINES)]
    from kerneltrace.readers.snippets import snippets_from, source_files_from

    document["snippets"] = snippets_from(sources, locations)
    # whole copied files of every mapped line, for plan.html's source view (docs/hotspot-json.md)
    document["source_files"] = source_files_from(sources, (line["location"] for line in document["source_lines"]))


def _capture_warnings(directory: Path, capture_report: Path | None) -> list[str]:
    """Truncated/partial-capture warnings from the decode report (cmd runs) and the dir itself."""
    from kerneltrace.analysis.capture_health import capture_warnings
    from kerneltrace.analysis.waves.consistency import read_listed_wave_files
    from kerneltrace.readers.regular import optional_json

    report, problem = (None, "") if capture_report is None else optional_json(Path(capture_report), "capture report")
    listed, listed_problem = read_listed_wave_files(directory)
    from kerneltrace.readers.wavefile.names import WAVE_FILE_GLOB

    try:  # the names Path.glob would give, without its per-name Path objects (~15 µs a file)
        present = names_matching(listed_names(directory), WAVE_FILE_GLOB)
    except OSError:
        present = []
    found = capture_warnings(report if isinstance(report, dict) else None, listed, present, listed_problem)
    return [f"{problem}: whether the capture was truncated is unknown"] + found if problem else found


def _waves(directory: Path, table: CodeTable, structure: StructureThresholds | None) -> dict:
    """The `waves` object: kept in the user's cache between runs on the same files
    (kerneltrace.analysis.waves.summary_cache), computed (numpy, the wave files read) otherwise."""
    from kerneltrace.analysis.waves.summary_cache import cached_summary

    def compute() -> dict:
        from kerneltrace.analysis.waves.analyze import analyze_waves

        return analyze_waves(directory, table) if structure is None else analyze_waves(
            directory, table, limits=structure)

    if structure is None:
        return cached_summary(directory, compute)
    from kerneltrace.thresholds import values_of

    return cached_summary(directory, compute, values_of(structure))


def analyze_dispatch(dispatch_dir: Path | str, **options: Unpack[AnalysisOptions]) -> dict:
    """The kerneltrace.hotspots/1 (/2 with waves) document of one dispatch dir."""
    return run_analysis(dispatch_dir, **options).document


DROPPED_SCHEMA = "kerneltrace.dropped/1"


def dropped_record(dispatch_dir: Path | str, error: BaseException) -> dict:
    """The kerneltrace.dropped/1 record of a dispatch that could not be analysed: where and why
    (an InputError's one line; any other error by its type, the traceback goes to the log)."""
    reason = (f"{error.what}" + (f" ({error.where})" if error.where and error.where != str(dispatch_dir) else "")
              if isinstance(error, InputError) else f"analysis failed: {type(error).__name__}: {error}")
    name = parse_dispatch_name(Path(dispatch_dir))
    return {"schema": DROPPED_SCHEMA, "tool": {"name": TOOL, "version": __version__},
            "dispatch_dir": str(dispatch_dir),
            "dispatch": {"agent": name.agent, "id": name.id, "label": name.label},
            "reason": " ".join(reason.split())[:2000]}
