"""Dependency-aware advice (issue 21.7): every fix that reorders instructions checked against def-use.

A post-pass of the findings pipeline. For each finding whose fix moves instructions — issue a
load earlier (P1 prefetch, P3 LDS read, P4 scale load), join a late kernel-argument batch to the
first (SETUP), wait later (the waits of load findings), fill `s_nop` wait states with independent
work (NOP) — the instructions its evidence names are checked with `analysis.reorder`:

* a move across a **true** dependency (the moved instruction reads what one in between writes)
  is forbidden: the fix says so and names the producer (and, when that producer is itself a
  load, that the address is a pointer chase: prefetch the index one step ahead instead);
* a move across **false** dependencies only is legal with another register (the fix says which);
* a wait whose drained registers are read by the very next instruction cannot move down: the
  load has to be issued earlier instead;
* `s_nop` padding with no independent instruction nearby is a serial chain: a reduction tree /
  packed (value, index) max, never "interleave".

The checks land in `Finding.dependencies` (summary.json) and in the fix text.
"""

from __future__ import annotations

from collections.abc import Callable

from kerneltrace.analysis.reorder import Move, move_above, wait_room
from kerneltrace.isa import classify as isa
from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import reads, writes
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding

HOIST_WINDOW = 24  # rows above a load its "issue earlier" fix is checked across (no loop header)
NOP_WINDOW = 6  # rows each side of an s_nop searched for independent work
_LOADS = ("buffer_load", "global_load", "flat_load", "s_load", "s_buffer_load", "ds_read", "ds_load")


def _rows(ctx: PlanContext) -> list[tuple[int, str]]:
    return [(ins["index"], ins.get("asm") or "") for ins in ctx.program_order]


def _asm(ctx: PlanContext, index: int) -> str:
    return (ctx.instructions.get(index) or {}).get("asm") or ""


def _hoist_target(ctx: PlanContext, index: int) -> int | None:
    """Where "issue it earlier" moves a load: the top of the innermost loop holding it, else a
    window of rows above it."""
    loops = [loop for loop in (ctx.structure.get("control_flow") or {}).get("loops") or []
             if loop["first_index"] < index <= loop["last_index"]]
    if loops:
        return min(loops, key=lambda loop: loop["last_index"] - loop["first_index"])["first_index"]
    order = [ins["index"] for ins in ctx.program_order]
    position = order.index(index) if index in order else None
    if not position:
        return None
    return order[max(0, position - HOIST_WINDOW)]


def _describe(ctx: PlanContext, move: Move, what: str) -> str:
    if move.legal:
        false = [b for b in move.blockers if b.kind == "false"]
        if not false:
            return f"#{move.moved} can be {what}: no instruction in between touches its registers."
        first = false[0]
        return (f"#{move.moved} can be {what} with another register: #{first.index} "
                f"(`{opcode(_asm(ctx, first.index))}`) still uses {', '.join(first.registers)} "
                "(a second buffer / fresh registers).")
    block = move.true_blockers[0]
    chase = opcode(_asm(ctx, block.index)).startswith(_LOADS)
    return (f"#{move.moved} cannot be {what}: it reads {', '.join(block.registers)}, written by "
            f"#{block.index} (`{opcode(_asm(ctx, block.index))}`) in between (a true dependency)"
            + ("; that is a load — a pointer chase: fetch the index one step ahead, then the "
               "data" if chase else "; move that producer up with it, or the fix does not apply")
            + ".")


def _check_hoists(ctx: PlanContext, finding: Finding, targets: dict[int, int], what: str) -> None:
    rows = _rows(ctx)
    notes = []
    for moved, above in targets.items():
        if above >= moved:
            continue
        move = move_above(rows, moved, above)
        finding.dependencies.append({"check": "hoist", **move.to_dict()})
        notes.append(_describe(ctx, move, what))
    _amend(finding, notes)


def _amend(finding: Finding, notes: list[str]) -> None:
    if not notes:
        return
    forbidden = [n for n in notes if "cannot" in n]
    text = " ".join(dict.fromkeys(forbidden or notes))
    finding.fix = (f"Dependency check: {text} {finding.fix}" if forbidden
                   else f"{finding.fix} Dependency check: {text}")


def _loads_in(ctx: PlanContext, finding: Finding) -> list[int]:
    out = []
    for evidence in finding.evidence:
        index = evidence.instruction_index
        if index is not None and opcode(_asm(ctx, index)).startswith(_LOADS) and index not in out:
            out.append(index)
    return out


def check_setup(ctx: PlanContext, finding: Finding) -> None:
    """SETUP: each late kernel-argument load joins the first batch (above the first wait)."""
    trips = (ctx.structure.get("setup") or {}).get("trips") or []
    if not trips:
        return
    first_wait = trips[0]["wait_index"]
    late = [i for t in trips if t["serialized"] for i in t["loads"]]
    _check_hoists(ctx, finding, {i: first_wait for i in late}, "joined to the first batch")


def check_loads(ctx: PlanContext, finding: Finding) -> None:
    """P1/P3/P4: the loads the finding wants issued earlier, up to their loop's top."""
    targets = {}
    for index in _loads_in(ctx, finding)[:4]:
        above = _hoist_target(ctx, index)
        if above is not None:
            targets[index] = above
    _check_hoists(ctx, finding, targets, "issued earlier (to the top of its loop)")


def check_waits(ctx: PlanContext, finding: Finding) -> None:
    """Findings on waits: can the wait move down to its consumer ("wait only right before")?"""
    drains = {w["index"]: w for w in (ctx.structure.get("waits") or {}).get("top") or []}
    rows = _rows(ctx)
    fixed = []
    for evidence in finding.evidence[:4]:
        drain = drains.get(evidence.instruction_index)
        if drain is None or not drain.get("drained"):
            continue
        room = wait_room(rows, drain["index"], drain["drained"])
        finding.dependencies.append({"check": "wait-later", "wait": drain["index"], "room": room})
        if room == 0:
            fixed.append(f"#{drain['index']}")
    if fixed:
        finding.fix = (f"{finding.fix} Dependency check: the wait(s) {', '.join(fixed)} cannot move "
                       "later (the next instruction reads what they drain): only issuing those "
                       "loads earlier helps.")


def check_nops(ctx: PlanContext, finding: Finding) -> None:
    """NOP: is there independent work near each `s_nop` to fill its wait states?"""
    order = ctx.program_order
    position = {ins["index"]: p for p, ins in enumerate(order)}
    nops = [e.instruction_index for e in finding.evidence
            if e.instruction_index in position and isa.opcode(_asm(ctx, e.instruction_index)) == "s_nop"]
    serial = []
    for nop in nops[:4]:
        p = position[nop]
        if p == 0 or p + 1 >= len(order):
            continue
        producer, consumer = order[p - 1], order[p + 1]
        made = writes(producer.get("asm") or "") | writes(consumer.get("asm") or "")
        used = reads(producer.get("asm") or "") | reads(consumer.get("asm") or "") | made
        window = order[max(0, p - 1 - NOP_WINDOW):p - 1] + order[p + 2:p + 2 + NOP_WINDOW]
        # an instruction that could sit between producer and consumer: it reads nothing either
        # writes and writes nothing either reads or writes
        free = [ins["index"] for ins in window
                if not (reads(ins.get("asm") or "") & made)
                and not (writes(ins.get("asm") or "") & used)
                and isa.classify(ins.get("asm") or "") not in (isa.NOP, isa.BRANCH, isa.BARRIER)
                and not opcode(ins.get("asm") or "").startswith("s_waitcnt")]
        finding.dependencies.append({"check": "interleave", "nop": nop, "independent": free})
        if not free:
            serial.append(nop)
    if serial and len(serial) * 2 >= len(nops) and "tree reduction" not in finding.fix:
        finding.fix = (f"Dependency check: no independent instruction within {NOP_WINDOW} rows of "
                       f"the `s_nop`s (#{', #'.join(map(str, serial[:3]))}): the compare/select "
                       "chain is serial, interleaving has nothing to interleave; use a tree "
                       "reduction or a packed (value, index) max. " + finding.fix)


CHECKS: dict[str, Callable[[PlanContext, Finding], None]] = {
    "SETUP-serial-kernarg-round-trips": check_setup,
    "P1-loads-in-mfma-loop": check_loads,
    "P3-lds-read-before-mfma": check_loads,
    "P4-scale-load-late": check_loads,
    "NOP-hazard-stall": check_nops,
}
WAIT_RULES = ("LINE-hotspot", "GLUE-line-loads", "REGION-hotspot", "W1-entry-waits-on-loads",
              "P1-loads-in-mfma-loop", "P3-lds-read-before-mfma")


def check_dependencies(findings: list[Finding], ctx: PlanContext) -> list[Finding]:
    """The post-pass: every reordering fix checked (in place), the findings returned."""
    for finding in findings:
        check = CHECKS.get(finding.rule)
        if check is not None:
            check(ctx, finding)
        if finding.rule in WAIT_RULES:
            check_waits(ctx, finding)
    return findings

