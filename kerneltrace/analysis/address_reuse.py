"""Loads every workgroup repeats: vector loads whose address cannot depend on the workgroup id.

A kernel learns which workgroup it is only from its input SGPRs (the hardware writes the
workgroup ids after the user SGPRs); work-item ids arrive in VGPRs and are the same in every
workgroup. A forward may-dataflow over the basic blocks marks every register whose value can
depend on an input SGPR other than the kernel-argument pointer (any instruction reading a marked
register marks what it writes; a block's entry state is the union over its predecessors). A
vector load none of whose operands is marked reads the same bytes in every workgroup (a norm's
gamma and beta, a bias, a lookup table): after the first workgroup on an L2, L2 serves them, so
they are HBM traffic once per L2, not once per workgroup.

Conservative by construction: a register is marked if any path can make it depend on the
workgroup, a vector register written while EXEC may be narrowed (inside an `if`: a saved and
narrowed mask not yet restored) keeps its marks in the lanes left off, and preloaded kernel
arguments (input SGPRs too) count as workgroup-dependent, so a load is called repeated only when
no path lets its address vary with the workgroup.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from functools import lru_cache

from kerneltrace.analysis.control_flow import FlowRow, with_addresses
from kerneltrace.analysis.loops import branch_target
from kerneltrace.isa.classify import VMEM_LOAD, classify, opcode
from kerneltrace.isa.registers import operands, reads, registers, writes

Register = tuple[str, int]
SCC: Register = ("scc", 0)
VCC: Register = ("vcc", 0)
_READS_SCC = ("s_cselect", "s_cmov", "s_addc", "s_subb", "s_cbranch_scc")
# `if` levels told apart; deeper ones count as this many. A loop whose body saves and narrows
# EXEC without restoring it (a rolled loop's exec juggling) would otherwise enter its header one
# level deeper on every pass, and the dataflow would never settle.
MAX_EXEC_DEPTH = 8
_READS_VCC = ("v_cndmask_b32_e32", "v_addc", "v_subb", "v_subbrev", "v_div_fmas", "s_cbranch_vcc")


def _exec_action(op: str, asm: str) -> str | None:
    """What an instruction does to EXEC: "push" (saves it and narrows it: an `if`), "narrow" (no
    save), "pop" (restores a saved mask: the `if` ends), "full" (all lanes on), or None."""
    if "saveexec" in op:
        return "narrow" if "andn2" in op or "xor" in op else "push"
    if op.startswith("v_cmpx"):
        return "narrow"
    parts = [part.lower() for part in operands(asm)]
    if not parts or parts[0] != "exec":
        return None
    if op.startswith("s_mov") and parts[-1] in ("-1", "0xffffffffffffffff"):
        return "full"
    if op.startswith(("s_or", "s_mov")):
        return "pop"
    return "narrow"


@lru_cache(maxsize=8192)
def _effect(asm: str) -> tuple[frozenset, frozenset, frozenset, frozenset, str | None, bool]:
    """(reads, writes, marked on a hit besides writes, unmarked when not hit besides writes,
    what it does to EXEC, whether it writes VGPRs lane by lane) of one instruction: named
    registers plus SCC and VCC where it reads or sets them."""
    found = set(reads(asm))
    op = opcode(asm)
    if op.startswith(_READS_SCC):
        found.add(SCC)
    operand_text = asm.lower().split(None, 1)[1:]  # empty for an opcode alone or no text
    if op.startswith(_READS_VCC) or "vcc" in "".join(operand_text):
        found.add(VCC)
    extra: set[Register] = set()
    cleared: set[Register] = set()
    if op.startswith("s_"):
        extra.add(SCC)  # most SALU ops set SCC from their inputs
    if op.startswith(("v_cmp", "v_add", "v_sub")) and op.endswith("_e32"):
        extra.add(VCC)
    if op.startswith(("s_cmp", "s_bitcmp")):
        cleared.add(SCC)  # these write SCC alone: from unmarked inputs it is unmarked
    if op.startswith("v_cmp") and op.endswith("_e32"):
        cleared.add(VCC)
    wrote = frozenset(writes(asm))
    lanes = any(kind in ("v", "a") for kind, _ in wrote)
    return (frozenset(found), wrote, frozenset(extra), frozenset(cleared), _exec_action(op, asm),
            lanes)


def _depth(marked: set[Register]) -> int:
    """How many `if` levels EXEC may be narrowed by ((exec, k) entries; a join keeps the most)."""
    return max((index for kind, index in marked if kind == "exec"), default=0)


def _step(effect: tuple, marked: set[Register]) -> bool:
    """Apply one instruction to the marked set; True when it read a marked register. A vector
    register written while EXEC may be narrowed keeps its marks in the lanes left off (a weak
    update); a scalar one, or one written with every lane on, is replaced."""
    read, wrote, extra, cleared, action, lanes = effect
    if action is not None:
        depth = _depth(marked)
        marked -= {r for r in marked if r[0] == "exec"}
        depth = {"push": min(depth + 1, MAX_EXEC_DEPTH), "narrow": max(depth, 1),
                 "pop": max(depth - 1, 0),
                 "full": 0}[action]
        if depth:
            marked.add(("exec", depth))
    if marked.isdisjoint(read):
        if lanes and _depth(marked):
            wrote = frozenset(r for r in wrote if r[0] not in ("v", "a"))
        marked -= wrote
        marked -= cleared
        return False
    marked |= wrote
    marked |= extra
    return True


def _ends_block(asm: str) -> tuple[bool, bool]:
    """(ends the block, falls through to the next row)."""
    op = opcode(asm)
    if op == "s_branch" or op.startswith(("s_setpc", "s_endpgm")):
        return True, False
    return op.startswith("s_cbranch_"), True


def _blocks(rows: Sequence[FlowRow]) -> tuple[list[tuple[int, int]], list[list[int]]]:
    """Basic blocks as [start, end) positions in `rows`, and each block's successor blocks
    (an indirect jump has none: what follows it is reached by its own leader)."""
    at_pc = {(row.codeobj, row.pc): pos for pos, row in enumerate(rows) if row.pc is not None}
    leaders, targets = {0}, {}
    for pos, row in enumerate(rows):
        ends, _ = _ends_block(row.asm)
        if not ends:
            continue
        leaders.add(pos + 1)
        target = branch_target(row.pc, row.asm) if row.pc is not None else None
        to = at_pc.get((row.codeobj, target)) if target is not None else None
        if to is not None:
            leaders.add(to)
            targets[pos] = to
    starts = sorted(p for p in leaders if p < len(rows))
    spans = [(s, e) for s, e in zip(starts, [*starts[1:], len(rows)], strict=True)]
    block_of = {s: b for b, (s, _) in enumerate(spans)}
    successors: list[list[int]] = []
    for b, (_, end) in enumerate(spans):
        last = end - 1
        _, falls = _ends_block(rows[last].asm)
        succ = [block_of[targets[last]]] if last in targets else []
        if falls and b + 1 < len(spans):
            succ.append(b + 1)
        successors.append(succ)
    return spans, successors


def input_sgprs(asms: Iterable[str]) -> set[Register]:
    """SGPRs read before any instruction writes them, in program order (the kernel's inputs)."""
    written: set[Register] = set()
    inputs: set[Register] = set()
    for asm in asms:
        read, wrote, *_ = _effect(asm)
        inputs |= {r for r in read - written if r[0] == "s"}
        written |= wrote
    return inputs


def repeated_loads(rows: Sequence[FlowRow], kernarg_bases: Iterable[str]) -> frozenset[int]:
    """Row indices of vector loads whose address no path lets depend on the workgroup."""
    ordered, _ = with_addresses(rows)
    if not ordered:
        return frozenset()
    asms = [row.asm for row in ordered]
    loads = [classify(asm) == VMEM_LOAD and "scratch" not in opcode(asm) for asm in asms]
    if not any(loads):
        return frozenset()
    effects = [_effect(asm) for asm in asms]
    pointer: set[Register] = set().union(*(registers(base) for base in kernarg_bases))
    sources = frozenset(input_sgprs(asms) - pointer)
    spans, successors = _blocks(ordered)
    entry: list[frozenset[Register] | None] = [None] * len(spans)
    entry[0] = sources
    repeated: set[int] = set()
    work = [0]  # a heap of block numbers: program order, so a loop body settles in few passes
    while work:  # monotone: marks only grow, over a finite set (EXEC depth capped), so this ends
        block = heapq.heappop(work)
        marked = set(entry[block] or ())
        start, end = spans[block]
        for pos in range(start, end):
            _step(effects[pos], marked)
        out = frozenset(marked)
        for succ in successors[block]:
            merged = out if entry[succ] is None else entry[succ] | out
            if merged != entry[succ]:
                entry[succ] = merged
                if succ not in work:
                    heapq.heappush(work, succ)
    for block, (start, end) in enumerate(spans):
        if entry[block] is None:
            continue  # never reached from the entry (data, or after an indirect jump)
        marked = set(entry[block])
        for pos in range(start, end):
            if not _step(effects[pos], marked) and loads[pos] and effects[pos][0]:
                repeated.add(ordered[pos].index)
    return frozenset(repeated)
