"""analyze_dispatch(): one decoded ATT dispatch dir -> the kerneltrace.hotspots/1 document (dict)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerneltrace import __version__
from kerneltrace.analysis.hotspots import (
    SOURCE_MAPPING_HINT,
    HotspotAnalysis,
    aggregate,
    instruction_stats,
)
from kerneltrace.errors import InputError
from kerneltrace.readers.codejson import (
    EMPTY_TRACE_FIX,
    PC_SAMPLING_REASONS,
    CodeRow,
    CodeTable,
    read_code_json,
)
from kerneltrace.readers.csvs import (
    AgentInfo,
    KernelTraceRow,
    gpu_agents,
    read_agent_info,
    read_kernel_trace,
)
from kerneltrace.readers.dispatch import parse_dispatch_name, sibling_csvs
from kerneltrace.readers.snapshots import SourceIndex, read_snapshots

SCHEMA = "kerneltrace.hotspots/1"
SCHEMA_WITH_WAVES = "kerneltrace.hotspots/2"
TOOL = "kernel-trace-analysis"


@dataclass
class DispatchAnalysis:
    """Everything the CLI needs: the document plus the parsed inputs behind it."""

    document: dict
    table: CodeTable
    sources: SourceIndex


@dataclass
class _KernelGroup:
    symbol: str | None
    name: str | None
    rows: list[CodeRow]

    def weight(self, pc_sampling: bool) -> int:
        if pc_sampling:
            return sum((row.pc_issued or 0) + (row.pc_stalled or 0) for row in self.rows)
        return sum(row.latency for row in self.rows)


def _kernel_groups(table: CodeTable) -> list[_KernelGroup]:
    names = {label.symbol: label.name for label in table.kernels}
    groups: dict[str | None, _KernelGroup] = {}
    for row in table.rows:
        group = groups.get(row.kernel)
        if group is None:
            group = groups[row.kernel] = _KernelGroup(row.kernel, names.get(row.kernel) if row.kernel else None, [])
        group.rows.append(row)
    return list(groups.values())


def _select_kernel(table: CodeTable, wanted: str | None, warnings: list[str]) -> _KernelGroup:
    """--kernel SUBSTR (case-insensitive, symbol or demangled name); default the costliest kernel."""
    pc_sampling = table.format == "pcsampling"
    groups = _kernel_groups(table)
    if wanted:
        needle = wanted.lower()
        matches = [
            group for group in groups
            if needle in (group.symbol or "").lower() or needle in (group.name or "").lower()
        ]
        if not matches:
            available = "; ".join(group.name or group.symbol or "(unlabelled)" for group in groups)
            raise InputError(
                f"--kernel {wanted!r} matches no kernel in code.json (kernels: {available})",
                str(table.path),
                "pass a substring of one of the listed kernel names",
            )
        groups = matches
    groups.sort(key=lambda group: -group.weight(pc_sampling))
    if len(groups) > 1:
        others = ", ".join(group.name or group.symbol or "(unlabelled)" for group in groups[1:])
        chosen = groups[0].name or groups[0].symbol or "(unlabelled)"
        how = f"--kernel {wanted!r} matched several kernels" if wanted else "code.json holds several kernels"
        warnings.append(
            f"{how}; analysing {chosen} (largest {'sample count' if pc_sampling else 'latency'}); "
            f"also present: {others} -- select another with --kernel SUBSTR"
        )
    return groups[0]


def _check_not_empty(table: CodeTable, rows: list[CodeRow]) -> None:
    if table.format == "empty" or not rows:
        raise InputError(
            "empty trace: code.json lists no executed instruction (\"code\" is null/empty)",
            str(table.path),
            EMPTY_TRACE_FIX,
        )
    if table.format == "pcsampling":
        if not any((row.pc_issued or 0) + (row.pc_stalled or 0) for row in rows):
            raise InputError("empty trace: no PC sample hit this kernel", str(table.path), EMPTY_TRACE_FIX)
        return
    if not any(row.hits for row in rows):
        raise InputError("empty trace: every instruction has Hit 0", str(table.path), EMPTY_TRACE_FIX)
    if not any(row.latency for row in rows):
        raise InputError(
            "zero total latency although instructions were executed (incomplete decode)",
            str(table.path),
            "re-run the decoder on the .att files with the matching decoder version, or re-capture",
        )


def _metric(table: CodeTable, rows: list[CodeRow]) -> str:
    if table.format == "pcsampling":
        return "pc_stalled"
    if rows and rows[0].stall is None:
        return "latency"
    return "stall"


def _find_metadata(
    dispatch_dir: Path,
    dispatch_id: int | None,
    explicit_csv: Path | None,
    kernel: _KernelGroup,
    kernel_filter: str | None,
    warnings: list[str],
) -> tuple[KernelTraceRow | None, str | None]:
    """The kernel_trace row of this dispatch: Dispatch_Id join within the same run, else by name.

    discover_* CSVs come from another run: their Dispatch_Id numbers other dispatches, so they
    are only ever joined by kernel name, and only when passed explicitly.
    """
    if explicit_csv is not None:
        candidates = [explicit_csv]
    else:
        candidates = sibling_csvs(dispatch_dir).kernel_trace
    for csv_path in candidates:
        rows = read_kernel_trace(csv_path)
        other_run = csv_path.name.startswith("discover_")
        if dispatch_id is not None and not other_run:
            same = [row for row in rows if row.dispatch_id == dispatch_id]
            if same:
                return same[0], "dispatch_id"
        if explicit_csv is None:
            continue
        names = {name for name in (kernel.symbol, kernel.name) if name}
        by_name = [row for row in rows if row.kernel_name in names]
        if not by_name and kernel_filter:
            by_name = [row for row in rows if kernel_filter.lower() in row.kernel_name.lower()]
        if by_name:
            distinct = {(r.vgpr_count, r.accum_vgpr_count, r.sgpr_count, r.lds_bytes, r.workgroup_items) for r in by_name}
            if len(distinct) > 1:
                warnings.append(
                    f"{csv_path}: {len(by_name)} rows match the kernel name with different resources; using the first"
                )
            return by_name[0], "kernel_name"
    if explicit_csv is not None:
        warnings.append(
            f"{explicit_csv}: no row for this dispatch (Dispatch_Id {dispatch_id}) or kernel name; "
            "occupancy uses the ISA register scan only"
        )
    return None, None


def _find_agents(
    dispatch_dir: Path, explicit_csv: Path | None, trace_row: KernelTraceRow | None
) -> tuple[list[AgentInfo], Path | None]:
    candidates = [explicit_csv] if explicit_csv is not None else sibling_csvs(dispatch_dir).agent_info
    for csv_path in candidates:
        gpus = [agent for agent in gpu_agents(read_agent_info(csv_path)) if agent.name]
        if not gpus:
            continue
        number = trace_row.agent_number if trace_row else None
        chosen = [agent for agent in gpus if number is not None and agent.logical_node_id == number]
        return (chosen or gpus), csv_path
    return [], None


def _arch_section(
    explicit: str | None, agents: list[AgentInfo], instructions: list[str], warnings: list[str]
) -> tuple[dict, object]:
    from kerneltrace.arch.detect import resolve_arch
    from kerneltrace.arch.table import get_arch

    # full instruction lines: some ISA clues are operand modifiers, not opcodes
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


def _instruction_dicts(analysis: HotspotAnalysis, pc_sampling: bool) -> list[dict]:
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


def _line_dicts(analysis: HotspotAnalysis, pc_sampling: bool) -> list[dict]:
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


def _type_dicts(analysis: HotspotAnalysis, legacy: bool, pc_sampling: bool) -> list[dict]:
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


def run_analysis(
    dispatch_dir: Path | str,
    *,
    arch: str | None = None,
    kernel_trace_csv: Path | None = None,
    agent_info_csv: Path | None = None,
    kernel: str | None = None,
    waves: bool = False,
) -> DispatchAnalysis:
    """Read and analyse one dispatch dir; raises InputError for bad input (never modifies it)."""
    given = str(dispatch_dir)
    directory = Path(dispatch_dir)
    if not directory.exists():
        raise InputError("dispatch directory not found", given, "pass an existing ui_output_agent_*_dispatch_* directory")
    if directory.is_file() and directory.name == "code.json":
        directory = directory.parent
    if not directory.is_dir():
        raise InputError("not a directory", given, "pass the ui_output_agent_*_dispatch_* directory, not a file")
    code_path = directory / "code.json"
    if not code_path.is_file():
        raise InputError(
            "no code.json in this directory (not a decoded ATT dispatch dir)",
            given,
            "pass a ui_output_agent_*_dispatch_* directory written by rocprofv3 --att with the decoder installed",
        )
    for label, csv_path in (("--kernel-trace", kernel_trace_csv), ("--agent-info", agent_info_csv)):
        if csv_path is not None and not Path(csv_path).is_file():
            raise InputError(f"{label} file not found", str(csv_path), "check the path")

    table = read_code_json(code_path)
    warnings: list[str] = list(table.warnings)
    _check_not_empty(table, table.rows)
    group = _select_kernel(table, kernel, warnings)
    rows = group.rows
    _check_not_empty(table, rows)
    sources = read_snapshots(directory)

    pc_sampling = table.format == "pcsampling"
    legacy = table.format == "legacy"
    metric = _metric(table, rows)
    analysis = aggregate(instruction_stats(rows), metric)
    warnings.extend(analysis.warnings)
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

    name = parse_dispatch_name(directory)
    trace_row, join = _find_metadata(directory, name.id, kernel_trace_csv and Path(kernel_trace_csv), group, kernel, warnings)
    agents, agent_csv = _find_agents(directory, agent_info_csv and Path(agent_info_csv), trace_row)
    arch_section, spec = _arch_section(arch, agents, list(dict.fromkeys(row.asm for row in rows)), warnings)
    if arch_section["name"] is None:
        warnings.append(
            "architecture unknown (no --arch, no agent_info CSV next to the dispatch dir, no decisive "
            "opcode): occupancy limits that depend on it are null; pass --arch or --agent-info"
        )
    occupancy = _occupancy(spec, rows, trace_row, arch_section["candidates"])

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

    agent = agents[0] if agents else None
    document: dict = {
        "schema": SCHEMA,
        "tool": {"name": TOOL, "version": __version__},
        "dispatch_dir": given,
        "dispatch": {"agent": name.agent, "id": name.id, "label": name.label},
        "kernel": group.name or group.symbol,
        "kernel_symbol": group.symbol,
        "kernels_in_trace": [g.name or g.symbol for g in _kernel_groups(table)],
        "format": table.format,
        "ranked_by": {"stall": "stall_cycles", "pc_stalled": "pc_stalled", "latency": "latency_cycles"}[metric],
        "arch": arch_section,
        "totals": totals,
        "stall_by_type": _type_dicts(analysis, legacy, pc_sampling),
        "source_lines": _line_dicts(analysis, pc_sampling),
        "instructions": _instruction_dicts(analysis, pc_sampling),
        "occupancy": occupancy,
        "pc_sampling": _pc_sampling_section(rows) if pc_sampling else None,
        "metadata": {
            "kernel_trace": trace_row.to_dict() if trace_row else None,
            "kernel_trace_join": join,
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
        },
        "source_mapping": {
            "mapped_fraction": analysis.mapped_fraction,
            "hint": SOURCE_MAPPING_HINT if analysis.mapped_fraction == 0 else None,
        },
        "warnings": warnings,
    }
    if waves:
        document["waves"] = _waves(directory, table)
        document["schema"] = SCHEMA_WITH_WAVES
    return DispatchAnalysis(document, table, sources)


def _waves(directory: Path, table: CodeTable) -> dict:
    try:
        from kerneltrace.analysis.waves import analyze_waves
    except ImportError as err:
        raise InputError(
            f"--waves needs kerneltrace.analysis.waves, which cannot be imported here ({err})",
            str(directory),
            "run without --waves, or update the checkout to a version that ships the wave analysis",
        ) from None
    return analyze_waves(directory, table)


def analyze_dispatch(
    dispatch_dir: Path | str,
    *,
    arch: str | None = None,
    kernel_trace_csv: Path | None = None,
    agent_info_csv: Path | None = None,
    kernel: str | None = None,
    waves: bool = False,
) -> dict:
    """The kerneltrace.hotspots/1 (/2 with waves) document of one dispatch dir."""
    return run_analysis(
        dispatch_dir,
        arch=arch,
        kernel_trace_csv=kernel_trace_csv,
        agent_info_csv=agent_info_csv,
        kernel=kernel,
        waves=waves,
    ).document
