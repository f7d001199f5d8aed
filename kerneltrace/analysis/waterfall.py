"""Waterfall loops from code.json: loops that make a per-lane operand uniform one value at a time.

When the compiler cannot prove that an operand an instruction needs in scalar registers (a buffer
resource, a sampler, an indirect call target) is the same in every lane, it wraps the instruction
in a *waterfall*: save EXEC, `v_readfirstlane` the operand into SGPRs, `v_cmp_eq` it against every
lane, `s_and_saveexec` to the matching lanes, run the instruction, clear those lanes from EXEC and
branch back (`s_cbranch_execnz`) while lanes remain, then restore EXEC. With a uniform operand it
runs one pass, and all of it but the guarded instruction is overhead the program did not ask for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kerneltrace.isa.classify import opcode

_MEMORY_PREFIXES = ("buffer_", "tbuffer_", "image_", "global_", "s_buffer_", "s_load")
# rows just outside the loop that belong to it: the EXEC save before, the restore after
_EXEC_SAVE_ROWS = 2


@dataclass(frozen=True)
class WaterfallLoop:
    """One waterfall loop: its rows, what it guards, its passes and overhead rows."""

    first_index: int  # the loop header (first `v_readfirstlane`, or the row the branch targets)
    last_index: int  # its `s_cbranch_execnz` back edge
    guarded: tuple[int, ...]  # the instructions run under the narrowed EXEC (loads, stores)
    uniform_reads: int  # `v_readfirstlane` rows: scalar registers rebuilt per pass
    passes_per_entry: float  # 1.0 when the operand was uniform at run time
    overhead: tuple[int, ...]  # every row of the loop and its EXEC save/restore but the guarded


def _is_exec_save(asm: str) -> bool:
    parts = asm.replace(",", " ").split()
    return len(parts) == 3 and parts[0].startswith("s_mov_b") and parts[2] == "exec"


def _is_exec_restore(asm: str) -> bool:
    parts = asm.replace(",", " ").split()
    return len(parts) == 3 and parts[0].startswith("s_mov_b") and parts[1] == "exec"


def waterfall_loops(program: Sequence[Mapping], loops: Sequence[Mapping]) -> list[WaterfallLoop]:
    """The waterfall loops among `loops` (structure.control_flow.loops) of `program` (the
    instruction rows in program order: index, asm, hits)."""
    position = {row["index"]: pos for pos, row in enumerate(program)}
    found = []
    for loop in loops:
        first, last = position.get(loop.get("first_index")), position.get(loop.get("last_index"))
        if first is None or last is None or last <= first:
            continue
        body = program[first:last + 1]
        ops = [opcode(row.get("asm") or "") for row in body]
        if not (ops[-1] == "s_cbranch_execnz" and any(op.startswith("s_and_saveexec") for op in ops)
                and "v_readfirstlane_b32" in ops):
            continue
        guarded = tuple(row["index"] for row, op in zip(body, ops, strict=True)
                        if op.startswith(_MEMORY_PREFIXES))
        if not guarded:
            continue
        outside = [program[p] for p in range(max(0, first - _EXEC_SAVE_ROWS), first)
                   if _is_exec_save(program[p].get("asm") or "")]
        outside += [program[p] for p in range(last + 1, min(len(program), last + 1 + _EXEC_SAVE_ROWS))
                    if _is_exec_restore(program[p].get("asm") or "")]
        overhead = tuple(sorted({row["index"] for row in (*body, *outside)} - set(guarded)))
        found.append(WaterfallLoop(
            first_index=body[0]["index"], last_index=body[-1]["index"], guarded=guarded,
            uniform_reads=ops.count("v_readfirstlane_b32"),
            passes_per_entry=float(loop.get("iterations_per_entry") or 1.0), overhead=overhead))
    return found
