"""Denormal range guards around `v_exp_f32`: the compare/select/scale code an exp2 lowering adds.

`v_exp_f32` computes 2^x but flushes results below 2^-126 to zero. When a kernel must keep
denormal results (no flush-to-zero, no approximate-functions flag), the compiler wraps each exp in
a range guard: `v_cmp` x against -126 into a lane mask, `v_cndmask` a bias of 64 (or 0), add it to
x, `v_exp_f32`, then `v_cndmask` a scale (2^-64 as an exponent, or as a factor) and `v_ldexp` /
`v_mul` it onto the result; the mask write before its first `v_cndmask` read also needs `s_nop`
wait states. Those five or six extra instructions per exp cost more than the exp itself; they
disappear when denormal results may flush (the hardware exp2 used directly). This module finds
them by register def-use in the instruction table (no wave files needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import operands, registers, writes

WINDOW = 16  # instructions searched on each side of an exp for its guard (the lowering is local)


@dataclass(frozen=True)
class ExpGuard:
    """One guarded `v_exp_f32`: the exp's row and the guard's rows (instruction indices)."""

    exp_index: int
    compare_index: int
    guard_indices: tuple[int, ...]  # compare, bias select, add, scale select, rescale, `s_nop`s


def _keys(operand: str) -> frozenset:
    """What an operand names: its registers, or the operand text for vcc/exec and other masks."""
    found = registers(operand)
    return frozenset(found) if found else frozenset({("mask", operand.strip().lower())})


def _destinations(asm: str) -> frozenset:
    """What an instruction writes: its registers (`isa.registers.writes`), plus the lane masks
    that does not name — a VOPC compare's `vcc`, a carry-out operand."""
    op = opcode(asm)
    ops = operands(asm)
    written = set(writes(asm))
    if op.startswith("v_cmp") and ops:
        written |= _keys(ops[0])
    if "_co_" in op and len(ops) > 1:
        written |= _keys(ops[1])
    return frozenset(written)


def _writer(asms: Sequence[str], position: int, operand: str, floor: int) -> int | None:
    """Position of the nearest instruction before `position` (not before `floor`) writing `operand`."""
    wanted = _keys(operand)
    for at in range(position - 1, max(floor, position - WINDOW) - 1, -1):
        if _destinations(asms[at]) & wanted:
            return at
    return None


def _reader(asms: Sequence[str], position: int, operand: str) -> int | None:
    """Position of the nearest instruction after `position` reading `operand` as a source."""
    wanted = _keys(operand)
    for at in range(position + 1, min(len(asms), position + 1 + WINDOW)):
        sources = operands(asms[at])[1:]
        if any(_keys(source) & wanted for source in sources):
            return at
        if _destinations(asms[at]) & wanted:
            return None  # overwritten before any read
    return None


def _select(asms: Sequence[str], at: int | None) -> tuple[str, str] | None:
    """(destination, mask) of a `v_cndmask_b32` at `at`, else None."""
    if at is None or not opcode(asms[at]).startswith("v_cndmask_b32"):
        return None
    ops = operands(asms[at])
    return (ops[0], ops[3]) if len(ops) >= 4 else (ops[0], "vcc") if len(ops) == 3 else None


def _guard_at(asms: Sequence[str], exp: int) -> tuple[int, tuple[int, ...]] | None:
    """(compare position, guard positions) of the exp at position `exp`, when it is guarded."""
    ops = operands(asms[exp])
    if len(ops) != 2:
        return None
    result, source = ops
    add = _writer(asms, exp, source, 0)
    if add is None or not opcode(asms[add]).startswith("v_add_f32"):
        return None
    add_ops = operands(asms[add])
    if len(add_ops) != 3:
        return None
    for bias_reg, value_reg in ((add_ops[2], add_ops[1]), (add_ops[1], add_ops[2])):
        bias = _writer(asms, add, bias_reg, 0)
        bias_select = _select(asms, bias)
        if bias_select is None:
            continue
        mask = bias_select[1]
        compare = _writer(asms, bias, mask, 0)
        if compare is None or not opcode(asms[compare]).startswith("v_cmp"):
            continue
        if not any(_keys(op) & _keys(value_reg) for op in operands(asms[compare])[1:]):
            continue  # the mask must test the exp's own input
        rescale = _reader(asms, exp, result)
        if rescale is None or not opcode(asms[rescale]).startswith(("v_ldexp_f32", "v_mul_f32")):
            continue
        scale_reg = next((op for op in operands(asms[rescale])[1:]
                          if not _keys(op) & _keys(result)), None)
        if scale_reg is None:
            continue
        scale = _writer(asms, rescale, scale_reg, compare)
        scale_select = _select(asms, scale)
        if scale_select is None or scale_select[1].lower() != mask.lower():
            continue
        if _writer(asms, scale, mask, compare) not in (compare, None):
            continue  # the mask was rewritten between the compare and the scale select
        nops = [at for at in range(compare + 1, bias) if opcode(asms[at]) == "s_nop"]
        return compare, tuple(sorted({compare, bias, add, scale, rescale, *nops}))
    return None


def find_exp_guards(program: Sequence[dict]) -> list[ExpGuard]:
    """Every `v_exp_f32` of `program` (instruction dicts in program order, with `index` and
    `asm`) wrapped in a denormal range guard, in program order."""
    asms = [(ins.get("asm") or "").strip() for ins in program]
    guards = []
    for position, asm in enumerate(asms):
        if not opcode(asm).startswith("v_exp_f32"):
            continue
        found = _guard_at(asms, position)
        if found is None:
            continue
        compare, rows = found
        guards.append(ExpGuard(program[position]["index"], program[compare]["index"],
                               tuple(program[at]["index"] for at in rows)))
    return guards
