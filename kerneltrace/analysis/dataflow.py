"""Register def-use between instructions: true dependencies, legal hoists, serial select chains.

Advice that reorders instructions must not move one across a true dependency (a later instruction
reading a register an earlier one writes), nor across an instruction that reads or rewrites what
the moved one writes. A select chain is a sequence of `v_cndmask`/`v_max`/`v_min` selects where
each compare or select reads the result of the previous select (a running max/argmax): its
compares cannot be batched ahead of the selects; the fix is a tree reduction or a packed
(value, index) max. Registers come from `isa.registers` (reads/writes of the operand text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import reads, writes
from kerneltrace.thresholds import DEFAULT_STRUCTURE

_SELECTS = ("v_cndmask", "v_max", "v_min", "v_pk_max", "v_pk_min")


def depends(producer: str, consumer: str) -> bool:
    """True when `consumer` reads a register `producer` writes (read after write)."""
    return bool(writes(producer) & reads(consumer))


def can_move_above(asms: Sequence[str], moved: int, above: int) -> bool:
    """Whether instruction `moved` may be placed before instruction `above` (positions in `asms`,
    above < moved): no instruction in between writes what it reads, or reads or writes what it
    writes."""
    target = asms[moved]
    its_reads, its_writes = reads(target), writes(target)
    for asm in asms[above:moved]:
        if writes(asm) & its_reads or (reads(asm) | writes(asm)) & its_writes:
            return False
    return True


@dataclass(frozen=True)
class SelectChain:
    """Positions of a serial chain of selects (each depends on the previous select's result)."""

    first: int
    last: int
    length: int


def select_chains(rows: Sequence[tuple[int, str]],
                  min_chain: int = DEFAULT_STRUCTURE.min_chain,
                  window: int = 4) -> list[SelectChain]:
    """Serial select chains in (index, asm) rows in program order: a select that reads the
    result of one of the `window` selects before it, directly or through an instruction between
    them that feeds it (the compare writing its condition); `min_chain` selects in a row at least
    (the `structure` concern of the thresholds table). The window lets a running argmax keep two
    interleaved chains (value and index selects) as one: each value select reads the value
    select two selects back."""
    chains: list[SelectChain] = []
    recent: list[tuple[int, str]] = []  # the last `window` selects
    start = last = None
    length = unlinked = 0
    between: list[str] = []  # the non-select instructions since the last select

    def close() -> None:
        if start is not None and length >= min_chain:
            chains.append(SelectChain(start, last, length))

    for index, asm in rows:
        if not opcode(asm).startswith(_SELECTS):
            between.append(asm)
            continue
        linked = [at for at, prior in recent
                  if depends(prior, asm)
                  or any(depends(prior, a) and writes(a) & reads(asm) for a in between)]
        if linked:
            if start is None:
                start, length = linked[0], 1
            length, last, unlinked = length + 1, index, 0
        else:
            unlinked += 1
            if unlinked >= window:  # no select of the chain in the window: it ended
                close()
                start, length = None, 0
        recent = (recent + [(index, asm)])[-window:]
        between = []
    close()
    return chains
