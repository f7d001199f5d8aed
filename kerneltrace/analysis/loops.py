"""Static loop detection from the ISA: backward branches give loop bodies, nesting and trip counts.

A SOPP branch (`s_branch`, `s_cbranch_*`) carries a 16-bit signed immediate that is a PC-relative
*dword* offset counted from the next instruction: target = pc + 4 + 4 × signed16(simm16)
(LLVM AMDGPU operand syntax, "label": "a 16-bit signed integer treated as a PC-relative dword
offset", https://llvm.org/docs/AMDGPU/gfx9_label.html; the CDNA3 ISA guide states S_BRANCH as
PC = PC + signext(SIMM16 × 4) + 4). The decoder prints the immediate unsigned (`s_cbranch_scc1
65363` is −173); on every shared capture the targets computed this way land on instruction rows.

A branch whose target row is at or above it is a back edge and makes the loop body
[target row, branch row]; back edges to one header are merged (the body ends at the last latch).
This is *static*: bounds come from the code alone, so they exist without wave files. The wave
analysis (kerneltrace/analysis/waves/loops.py, `waves.loops`) instead observes taken jumps in the
per-wave instruction streams: it knows real iteration counts and cycles per iteration, but only
for loops the traced waves ran and only when wave files are present. Here code.json hit counts
(summed over traced waves) give a consistency check and a trip-count estimate instead. When the
wave analysis did observe a back edge, `find_loops(observed_headers=…)` takes the header it saw
(the row the jump landed on) over the decoded immediate: an observed jump beats a decoded one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from kerneltrace.isa.classify import opcode

# Register-operand branches (s_cbranch_g_fork/join, s_setpc) have no immediate target.
_NO_IMMEDIATE = frozenset({"s_cbranch_g_fork", "s_cbranch_i_fork", "s_cbranch_join"})


@dataclass(frozen=True)
class BranchRow:
    """The fields of one instruction row that loop detection needs."""

    index: int
    pc: int | None
    asm: str
    hits: int | None = None
    codeobj: int | None = None


@dataclass(frozen=True)
class StaticLoop:
    """One loop body [first_index, last_index] (inclusive row indices) found from back edges."""

    first_index: int  # header: the back edges' target row
    last_index: int  # the last latch (backward branch) row
    latches: tuple[int, ...]  # every backward branch to this header
    depth: int = 0  # 0 outermost
    parent: int | None = None  # first_index of the innermost enclosing loop
    header_hits: int | None = None
    latch_hits: int | None = None  # hits of the last latch
    entry_hits: int | None = None  # hits of the row falling into the header (pre-header)
    hits_consistent: bool | None = None  # None: not executed or no hit counts

    def contains(self, index: int) -> bool:
        return self.first_index <= index <= self.last_index

    @property
    def size(self) -> int:
        return self.last_index - self.first_index + 1

    @property
    def iterates(self) -> bool:
        """False when hit counts show the back edge was never taken (header ran once per entry)."""
        trip = self.trip_count
        return trip is None or trip > 1

    @property
    def trip_count(self) -> float | None:
        """Mean iterations per entry (header hits / pre-header hits) when both are known."""
        if self.header_hits and self.entry_hits:
            return round(self.header_hits / self.entry_hits, 2)
        return None


def branch_offset(asm: str) -> int | None:
    """Signed dword offset of an immediate SOPP branch, or None for other instructions."""
    op = opcode(asm)
    if not (op == "s_branch" or op.startswith("s_cbranch_")) or op in _NO_IMMEDIATE:
        return None
    parts = asm.split()
    if len(parts) < 2:
        return None
    try:
        value = int(parts[1].rstrip(","), 0)
    except ValueError:
        return None  # a symbolic label: no address to resolve
    if not -32768 <= value <= 65535:
        return None
    return value - 65536 if value >= 32768 else value


def branch_target(pc: int, asm: str) -> int | None:
    """Target byte address of an immediate branch at `pc` (see the module docstring)."""
    offset = branch_offset(asm)
    return None if offset is None else pc + 4 + 4 * offset


def rows_from_instructions(instructions: Iterable[dict]) -> list[BranchRow]:
    """Adapter for the hotspot document's `instructions` (index, pc, asm, hits)."""
    return [
        BranchRow(ins["index"], ins.get("pc"), ins.get("asm") or "", ins.get("hits"))
        for ins in instructions
    ]


def rows_from_code_rows(rows: Iterable) -> list[BranchRow]:
    """Adapter for kerneltrace.readers.codejson.CodeRow objects."""
    return [BranchRow(r.index, r.vaddr, r.asm, r.hits, r.codeobj) for r in rows]


def _hits_check(header: int | None, latch: int | None, entry: int | None) -> bool | None:
    """Every iteration runs the header, so it runs at least as often as the latch and the entry."""
    if not header or latch is None:
        return None
    return header >= latch and (entry is None or header >= entry)


def find_loops(
    rows: Iterable[BranchRow], observed_headers: dict[int, int] | None = None
) -> list[StaticLoop]:
    """Loops from backward immediate branches, outer before inner (sorted by header, then size).

    `observed_headers` maps a latch row to the header row the wave analysis saw it jump to.
    """
    observed = observed_headers or {}
    ordered = sorted(rows, key=lambda row: row.index)
    by_pc = {(row.codeobj, row.pc): row for row in ordered if row.pc is not None}
    position = {row.index: pos for pos, row in enumerate(ordered)}
    latches: dict[int, list[BranchRow]] = {}
    for row in ordered:
        if row.pc is None:
            continue
        target_pc = branch_target(row.pc, row.asm)
        target = by_pc.get((row.codeobj, target_pc)) if target_pc is not None else None
        header = observed.get(row.index, target.index if target is not None else None)
        if header is not None and header <= row.index and header in position:
            latches.setdefault(header, []).append(row)
    loops: list[StaticLoop] = []
    for first, back in latches.items():
        last = max(back, key=lambda row: row.index)
        header = ordered[position[first]]
        pos = position[first]
        before = ordered[pos - 1] if pos > 0 else None
        # the pre-header falls through into the header unless it is an unconditional jump
        entry = before.hits if before is not None and opcode(before.asm) != "s_branch" else None
        loops.append(
            StaticLoop(
                first_index=first,
                last_index=last.index,
                latches=tuple(sorted(row.index for row in back)),
                header_hits=header.hits,
                latch_hits=last.hits,
                entry_hits=entry,
                hits_consistent=_hits_check(header.hits, last.hits, entry),
            )
        )
    return _nest(loops)


def _nest(loops: list[StaticLoop]) -> list[StaticLoop]:
    """Set depth/parent: a loop's parent is the smallest other loop whose body contains it."""
    ordered = sorted(loops, key=lambda loop: (loop.first_index, -loop.last_index))
    nested: list[StaticLoop] = []
    for loop in ordered:
        outer = [
            other
            for other in nested
            if other.first_index <= loop.first_index and loop.last_index <= other.last_index
        ]
        parent = min(outer, key=lambda other: other.size, default=None)
        nested.append(
            replace(
                loop,
                depth=parent.depth + 1 if parent else 0,
                parent=parent.first_index if parent else None,
            )
        )
    return nested


def innermost_loop(loops: Iterable[StaticLoop], index: int) -> StaticLoop | None:
    """The smallest loop whose body contains row `index`."""
    return min((loop for loop in loops if loop.contains(index)), key=lambda loop: loop.size,
               default=None)
