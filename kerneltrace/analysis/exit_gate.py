"""The exit gate of waves that did no work: the branch they leave at and the instructions deciding it.

Waves that did no work (`waves.work_split`) run the kernel-argument setup, load their work range
(a metadata table, a split-K partition, a sequence length), compare it and branch to the end. The
gate is the last conditional branch the empty waves executed before their next row is one they
skipped; the condition is the nearest earlier instruction writing what the branch tests (SCC, VCC
or EXEC); the producers are the instructions writing the registers the condition reads (walked
back through moves and arithmetic to the loads that fetched them); the waits are the `s_waitcnt`s
between the first producer and the condition (the wave sits there before it can decide).
"""

from __future__ import annotations

from collections.abc import Iterable

from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import operands, registers, writes

MAX_SLICE = 12  # instructions the backward walk from the condition visits at most


def _tests(branch: str) -> str | None:
    op = opcode(branch)
    for flag in ("scc", "vcc", "exec"):
        if flag in op:
            return flag
    return None


def _writes_flag(asm: str, flag: str) -> bool:
    op = opcode(asm)
    if flag == "scc":
        return op.startswith(("s_cmp", "s_bitcmp"))
    ops = operands(asm)
    if flag == "vcc":
        return (op.startswith("v_cmp") and op.endswith("_e32")) or bool(ops and ops[0].startswith("vcc"))
    return op.startswith("v_cmpx") or "saveexec" in op or bool(ops and ops[0].startswith("exec"))


def _sources(asm: str) -> set[tuple[str, int]]:
    """Registers a condition or producer reads (compares have no destination register)."""
    op = opcode(asm)
    ops = operands(asm)
    if op.startswith(("s_cmp", "s_bitcmp")):
        sources = ops
    else:
        sources = ops[1:]
    return set().union(*(registers(o) for o in sources)) if sources else set()


def _is_load(asm: str) -> bool:
    op = opcode(asm)
    return "load" in op or op.startswith(("ds_read", "s_buffer_load"))


def exit_gate(instructions: Iterable[dict], ran: set[int]) -> dict | None:
    """{branch, condition, producers, waits, rows} of the gate the empty waves left at, or None.

    `instructions`: the document's rows ({index, asm}); `ran`: the rows the empty waves executed
    (`waves.work_split.empty_rows`)."""
    order = sorted((ins for ins in instructions if isinstance(ins.get("index"), int)),
                   key=lambda ins: ins["index"])
    position = {ins["index"]: at for at, ins in enumerate(order)}
    gates = [at for at, ins in enumerate(order)
             if ins["index"] in ran and opcode(ins.get("asm") or "").startswith("s_cbranch")
             and at + 1 < len(order) and order[at + 1]["index"] not in ran]
    if not gates:
        return None
    at = gates[-1]
    branch = order[at]
    flag = _tests(branch.get("asm") or "")
    condition = None
    for back in range(at - 1, max(-1, at - 1 - MAX_SLICE), -1):
        ins = order[back]
        if ins["index"] in ran and flag and _writes_flag(ins.get("asm") or "", flag):
            condition = ins
            break
    producers: list[dict] = []
    if condition is not None:
        wanted = _sources(condition.get("asm") or "")
        start = position[condition["index"]]
        for back in range(start - 1, max(-1, start - 1 - MAX_SLICE), -1):
            ins = order[back]
            asm = ins.get("asm") or ""
            if ins["index"] not in ran or not wanted:
                continue
            written = writes(asm) & wanted
            if not written:
                continue
            producers.append(ins)
            wanted -= written
            if not _is_load(asm):  # a move or arithmetic: follow what it reads
                wanted |= _sources(asm)
    first = min((position[p["index"]] for p in producers), default=None)
    waits = [] if condition is None or first is None else [
        ins for ins in order[first + 1:position[condition["index"]]]
        if ins["index"] in ran and opcode(ins.get("asm") or "").startswith("s_wait")]
    rows = sorted({branch["index"], *(ins["index"] for ins in (condition, *producers, *waits)
                                      if ins is not None)})
    return {"branch": branch["index"],
            "condition": condition["index"] if condition is not None else None,
            "producers": sorted(p["index"] for p in producers),
            "waits": [w["index"] for w in waits], "rows": rows}
