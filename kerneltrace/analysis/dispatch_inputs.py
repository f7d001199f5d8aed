"""What one hotspot analysis reads besides code.json rows: kernel choice, empty-trace checks, CSV metadata rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.codejson import EMPTY_TRACE_FIX, CodeRow, CodeTable
from kerneltrace.readers.csvs import (
    AgentInfo,
    KernelTraceRow,
    gpu_agents,
    read_agent_info,
    read_kernel_trace,
)
from kerneltrace.readers.dispatch import sibling_csvs


@dataclass
class KernelGroup:
    symbol: str | None
    name: str | None
    rows: list[CodeRow]

    def weight(self, pc_sampling: bool) -> int:
        if pc_sampling:
            return sum((row.pc_issued or 0) + (row.pc_stalled or 0) for row in self.rows)
        return sum(row.latency for row in self.rows)


def kernel_groups(table: CodeTable) -> list[KernelGroup]:
    names = {label.symbol: label.name for label in table.kernels}
    groups: dict[str | None, KernelGroup] = {}
    for row in table.rows:
        group = groups.get(row.kernel)
        if group is None:
            group = groups[row.kernel] = KernelGroup(row.kernel, names.get(row.kernel) if row.kernel else None, [])
        group.rows.append(row)
    return list(groups.values())


def select_kernel(table: CodeTable, wanted: str | None, warnings: list[str]) -> KernelGroup:
    """--kernel SUBSTR (case-insensitive, symbol or demangled name); default the costliest kernel."""
    pc_sampling = table.format == "pcsampling"
    groups = kernel_groups(table)
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


def check_not_empty(table: CodeTable, rows: list[CodeRow]) -> None:
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


def find_metadata(
    dispatch_dir: Path,
    dispatch_id: int | None,
    explicit_csv: Path | None,
    kernel: KernelGroup,
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


def find_agents(
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
