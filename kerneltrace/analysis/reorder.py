"""Whether a proposed reordering is legal: the register dependencies a moved instruction would cross.

A fix that issues an instruction earlier (hoist a load, join a kernel-argument batch, prefetch)
moves it above the instructions between its new and its old place. Crossing an instruction
that writes a register the moved one reads is a **true** dependency (read after write): the move
is impossible unless that producer moves too. Crossing one that reads or writes what the moved
one writes is a **false** dependency (write after read / write): legal with another register
(renaming, a second buffer). A fix that waits later moves an `s_waitcnt` down to the first
instruction reading what it drains: when that reader is right behind the wait there is no room.
Registers come from `isa.registers` (the operand text); memory order is not modelled (loads only
move above ALU work and other loads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import reads, writes


@dataclass(frozen=True)
class Blocker:
    """An instruction a move would cross, and why it blocks."""

    index: int
    registers: tuple[str, ...]  # the registers in conflict ("s10", "v[8:9]" spelled one by one)
    kind: str  # "true" (it writes what the moved one reads) | "false" (renamable)

    def to_dict(self) -> dict:
        return {"index": self.index, "registers": list(self.registers), "kind": self.kind}


@dataclass(frozen=True)
class Move:
    """Moving `moved` above `above` (row indices): the dependencies it crosses."""

    moved: int
    above: int
    blockers: tuple[Blocker, ...]

    @property
    def legal(self) -> bool:
        """No true dependency crossed (false ones need renaming, which the fix says)."""
        return not any(b.kind == "true" for b in self.blockers)

    @property
    def true_blockers(self) -> list[Blocker]:
        return [b for b in self.blockers if b.kind == "true"]

    def to_dict(self) -> dict:
        return {"moved": self.moved, "above": self.above, "legal": self.legal,
                "blockers": [b.to_dict() for b in self.blockers]}


def _names(regs: set[tuple[str, int]]) -> tuple[str, ...]:
    return tuple(f"{kind}{number}" for kind, number in sorted(regs))


def move_above(rows: Sequence[tuple[int, str]], moved: int, above: int) -> Move:
    """The dependencies crossed moving row `moved` to just before row `above` (rows: (index,
    asm) in program order; above < moved)."""
    position = {index: p for p, (index, _) in enumerate(rows)}
    target = rows[position[moved]][1]
    its_reads, its_writes = reads(target), writes(target)
    blockers = []
    for index, asm in rows[position[above]:position[moved]]:
        true = writes(asm) & its_reads
        false = (reads(asm) | writes(asm)) & its_writes
        if true:
            blockers.append(Blocker(index, _names(true), "true"))
        elif false:
            blockers.append(Blocker(index, _names(false), "false"))
    return Move(moved, above, tuple(blockers))


def first_reader(rows: Sequence[tuple[int, str]], producers: Sequence[int], after: int) -> int | None:
    """The first row after `after` that reads a register one of `producers` writes."""
    position = {index: p for p, (index, _) in enumerate(rows)}
    written: set[tuple[str, int]] = set()
    for producer in producers:
        if producer in position:
            written |= writes(rows[position[producer]][1])
    if not written or after not in position:
        return None
    for index, asm in rows[position[after] + 1:]:
        if reads(asm) & written:
            return index
    return None


def wait_room(rows: Sequence[tuple[int, str]], wait: int, drained: Sequence[int]) -> int | None:
    """Independent instructions between a wait and the first reader of what it drains (how far
    the wait can move down); None when nothing after it reads them."""
    reader = first_reader(rows, drained, wait)
    if reader is None:
        return None
    position = {index: p for p, (index, _) in enumerate(rows)}
    between = rows[position[wait] + 1:position[reader]]
    return sum(1 for _, asm in between if not opcode(asm).startswith("s_waitcnt"))
