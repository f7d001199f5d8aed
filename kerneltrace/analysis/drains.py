"""Waits charged to what they drain, from code.json alone: scratch reloads, global loads, LDS, kernarg.

Each `s_waitcnt` with a counter threshold N releases when all but the N youngest operations on that
counter have returned. Walking back from the wait in program order (around the back edge of the
loop holding it, so a wait at the loop top sees the loads the previous iteration issued) gives the
drained producers; an earlier wait on the same counter with threshold M bounds the walk (at most M
were still outstanding there). Results on one counter return in issue order, so the wait is
released by its *youngest* drained producer: its stall is charged to that producer's class
(`primary`). vmcnt is shared by scratch and global accesses: a reload wait also drains the
prefetches issued before it, and the split (`classes`) says so. The wave analysis does the same
per wave execution (`waves.waitcnt`); this is its static counterpart for captures without wave
files, and what the plan falls back to.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kerneltrace.analysis.control_flow import ControlFlow, FlowRow
from kerneltrace.analysis.spills import private_array_kind, spill_kind
from kerneltrace.isa.classify import counters_incremented, opcode, wait_counters
from kerneltrace.isa.registers import operands

CLASSES = ("spill", "private-array", "global-load", "lds-dma", "store", "lds", "kernarg", "smem")
WALK_LIMIT = 4096  # rows walked back at most (a bound, never reached on real kernels)


def producer_class(asm: str, kernarg_bases: frozenset[str] = frozenset({"s[0:1]"})) -> str:
    """What an operation a wait can drain is, in CLASSES terms."""
    op = opcode(asm)
    if spill_kind(asm) is not None:
        return "spill"
    if private_array_kind(asm) is not None:
        return "private-array"
    if op.startswith("ds_"):
        return "lds"
    if op.startswith(("s_load", "s_buffer_load")):
        parts = operands(asm)
        return "kernarg" if len(parts) > 1 and parts[1].replace(" ", "") in kernarg_bases else "smem"
    if "store" in op or "atomic" in op:
        return "store"
    if " lds" in f" {asm.lower()}" and op.startswith(("buffer_load", "global_load")):
        return "lds-dma"
    return "global-load"


@dataclass(frozen=True)
class WaitDrain:
    """One wait row: the producers it drains (youngest first) and whom its stall is charged to."""

    index: int
    counter: str
    threshold: int
    stall: int
    drained: tuple[int, ...]
    primary: str | None  # class of the youngest drained producer
    classes: dict[str, int]  # drained producers per class

    @property
    def youngest(self) -> int | None:
        return self.drained[0] if self.drained else None

    def to_dict(self) -> dict:
        return {"index": self.index, "counter": self.counter, "threshold": self.threshold,
                "stall_cycles": self.stall, "drained": list(self.drained), "primary": self.primary,
                "classes": self.classes}


def _walk_order(position: int, rows: Sequence[FlowRow], flow: ControlFlow | None,
                pos_of: dict[int, int]) -> Iterator[int]:
    """Positions before `position`, youngest first, wrapping once around the back edge of the
    iterating loop holding it (the previous iteration's tail is younger than the pre-header)."""
    loop = flow.loop_of(rows[position].index) if flow is not None else None
    if loop is None:
        yield from range(position - 1, max(-1, position - 1 - WALK_LIMIT), -1)
        return
    first = pos_of.get(loop.first_index, 0)
    last = pos_of.get(loop.last_index, position)
    yield from range(position - 1, first - 1, -1)
    yield from range(last, position - 1, -1)  # previous iteration: latch back to this wait
    yield from range(first - 1, max(-1, first - 1 - WALK_LIMIT), -1)


def drain_waits(rows: Sequence[FlowRow], flow: ControlFlow | None = None, *,
                stores_in_vmcnt: bool = True,
                kernarg_bases: frozenset[str] = frozenset({"s[0:1]"})) -> list[WaitDrain]:
    """Every executed counter wait of a kernel with what it drains (rows in program order)."""
    ordered = sorted(rows, key=lambda row: row.index)
    pos_of = {row.index: pos for pos, row in enumerate(ordered)}
    counts = [counters_incremented(row.asm, stores_in_vmcnt=stores_in_vmcnt) for row in ordered]
    waits = [wait_counters(row.asm) for row in ordered]
    out: list[WaitDrain] = []
    for position, row in enumerate(ordered):
        counters = waits[position]
        if not counters or not row.hits:
            continue
        for counter, threshold in counters.items():
            if counter not in ("vmcnt", "lgkmcnt"):
                continue
            collected: list[int] = []
            bound: int | None = None
            since = 0
            for pos in _walk_order(position, ordered, flow, pos_of):
                if counter in counts[pos]:
                    if bound is not None and since >= bound:
                        break
                    collected.append(pos)
                    since += 1
                earlier = waits[pos].get(counter)
                if earlier is not None and pos != position:
                    bound, since = earlier, 0
                    if earlier == 0:
                        break
            drained_pos = collected[threshold:]
            classes: dict[str, int] = {}
            for p in drained_pos:
                kind = producer_class(ordered[p].asm, kernarg_bases)
                classes[kind] = classes.get(kind, 0) + 1
            primary = producer_class(ordered[drained_pos[0]].asm, kernarg_bases) if drained_pos else None
            stall = row.stall if row.stall is not None else row.time
            out.append(WaitDrain(row.index, counter, threshold, stall or 0,
                                 tuple(ordered[p].index for p in drained_pos), primary, classes))
    return out


def lds_only_stall(drains: Sequence[WaitDrain]) -> int:
    """Stall of the waits that drain only LDS results: an `lgkmcnt` wait whose youngest drained
    producer is a `ds_*` operation, at a row whose `vmcnt` part (if any) drains nothing. A wait
    on both counters with vector memory outstanding is charged to the vector memory, whose
    latency is the longer one, so only on-chip round trips are counted here."""
    vector_rows = {d.index for d in drains if d.counter == "vmcnt" and d.drained}
    return sum(d.stall for d in drains
               if d.counter == "lgkmcnt" and d.primary == "lds" and d.index not in vector_rows)


def stall_by_class(drains: Sequence[WaitDrain]) -> dict[str, dict[str, int]]:
    """Wait stall charged per class: `primary` (youngest drained) and `shared` (the wait also
    drains other classes). A mixed wait (vmcnt and lgkmcnt) is counted once per counter."""
    out: dict[str, dict[str, int]] = {}
    for drain in drains:
        if drain.primary is None:
            continue
        entry = out.setdefault(drain.primary, {"primary": 0, "shared": 0})
        entry["primary"] += drain.stall
        if len(drain.classes) > 1:
            entry["shared"] += drain.stall
    return out
