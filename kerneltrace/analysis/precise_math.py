"""Library-precise math expansions in the instruction table: IEEE fp32 divisions and range-reduced exps.

Without fast-math a division `a / b` lowers to the IEEE-correct sequence: two `v_div_scale_f32`,
`v_rcp_f32`, a Newton-Raphson refinement (`v_fma`/`v_fmac`/`v_mul`), `v_div_fmas_f32` and
`v_div_fixup_f32`, about ten instructions where `v_rcp_f32` and a multiply would do; `expf`
lowers to a range reduction (a multiply by log2(e) split into high and low parts, `v_rndne_f32`,
subtract), `v_exp_f32`, the rescale `v_ldexp_f32` by the rounded integer and overflow/underflow
selects, about thirteen where a multiply and `v_exp_f32` would do. Each is found from its last
instruction (`v_div_fixup_*`, `v_exp_f32`) by register def-use within a few rows, in the
instruction table alone (no wave files needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import reads, writes

WINDOW = 24  # rows searched before the last instruction of an expansion (the lowering is local)
AFTER = 12  # rows searched after an exp for its rescale and range selects

_DIVISION = ("v_div_scale_", "v_rcp_", "v_fma_", "v_fmac_", "v_mul_", "v_div_fmas_", "v_div_fixup_")
_EXP_BEFORE = ("v_mul_f32", "v_fma_f32", "v_fmac_f32", "v_sub_f32", "v_add_f32", "v_rndne_f32")
_EXP_AFTER = ("v_ldexp_f32", "v_cndmask_b32", "v_cvt_i32_f32")
KEPT = 2  # instructions a fast-math lowering keeps of either: v_rcp + v_mul, v_mul + v_exp


@dataclass(frozen=True)
class Expansion:
    """One precise division or exp: its kind and its rows (instruction indices, ascending)."""

    kind: str  # "division" | "exp"
    anchor: int  # the v_div_fixup / v_exp row
    rows: tuple[int, ...]


def _chain_before(asms: Sequence[str], at: int, kinds: tuple[str, ...], stop: str) -> list[int]:
    """Positions before `at` in the def-use chain of its operands, among instructions of `kinds`
    (a `stop` instruction joins the chain but its inputs are the expansion's inputs)."""
    needed = set(reads(asms[at]))
    found = []
    for position in range(at - 1, max(-1, at - WINDOW - 1), -1):
        op = opcode(asms[position])
        written = set(writes(asms[position]))
        if not needed & written or not op.startswith(kinds):
            continue
        found.append(position)
        needed -= written
        if not op.startswith(stop):
            needed |= set(reads(asms[position]))
    return found


def _exp_after(asms: Sequence[str], at: int, rounded: set) -> list[int]:
    """The rescale and range selects after an exp: rows reading its result (or the rounded
    exponent's conversion) through `v_ldexp`/`v_cndmask`, and the compares feeding the selects."""
    live = set(writes(asms[at])) | rounded
    found = []
    for position in range(at + 1, min(len(asms), at + AFTER + 1)):
        asm = asms[position]
        op = opcode(asm)
        if op.startswith(_EXP_AFTER) and live & set(reads(asm)):
            found.append(position)
            live |= set(writes(asm))
    selects = [p for p in found if opcode(asms[p]).startswith("v_cndmask")]
    for select in selects:  # the range compare writing the lane mask the select reads
        for position in range(select - 1, max(at, select - 4), -1):
            if opcode(asms[position]).startswith("v_cmp"):
                found.append(position)
                break
    return found


def find_expansions(program: Sequence[dict]) -> list[Expansion]:
    """Every precise division and range-reduced exp of the program (rows with `index`, `asm`)."""
    ordered = sorted(program, key=lambda ins: ins["index"])
    asms = [ins.get("asm") or "" for ins in ordered]
    out = []
    for position, asm in enumerate(asms):
        op = opcode(asm)
        if op.startswith("v_div_fixup_"):
            chain = _chain_before(asms, position, _DIVISION, "v_div_scale_")
            if any(opcode(asms[p]).startswith("v_div_scale_") for p in chain):
                out.append(Expansion("division", ordered[position]["index"],
                                     tuple(sorted(ordered[p]["index"] for p in [*chain, position]))))
        elif op == "v_exp_f32" or op.startswith("v_exp_f32_"):
            chain = _chain_before(asms, position, _EXP_BEFORE, "v_rndne_f32")
            rounded = [p for p in chain if opcode(asms[p]).startswith("v_rndne_f32")]
            if not rounded:
                continue  # a plain exp2 of a scaled input: nothing to strip
            after = _exp_after(asms, position, {r for p in rounded for r in writes(asms[p])})
            out.append(Expansion("exp", ordered[position]["index"],
                                 tuple(sorted({ordered[p]["index"] for p in [*chain, position, *after]}))))
    return out
