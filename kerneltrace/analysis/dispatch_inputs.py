"""Which kernel of a code.json one hotspot analysis covers, and the empty-trace checks on its rows."""

from __future__ import annotations

from kerneltrace.errors import InputError
from kerneltrace.readers.codejson import EMPTY_TRACE_FIX, CodeFormat, CodeRow, CodeTable
from kerneltrace.records import record


@record
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
    pc_sampling = table.format == CodeFormat.PCSAMPLING
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
    if table.format == CodeFormat.EMPTY or not rows:
        raise InputError(
            "empty trace: code.json lists no executed instruction (\"code\" is null/empty)",
            str(table.path),
            EMPTY_TRACE_FIX,
        )
    if table.format == CodeFormat.PCSAMPLING:
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
