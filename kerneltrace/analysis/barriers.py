"""What makes barrier waits long, from code.json: the waits between consecutive barriers.

A wave waits at `s_barrier` for the last wave of its workgroup to arrive. The last one is late
because of what it did since the previous barrier; without wave files the waits and long-latency
instructions of that segment (summed over the traced waves) stand for it. The segment of a barrier
is the rows after the previous executed barrier, wrapping around the back edge of the loop holding
it. A barrier's stall is `explained` by its segment up to the segment's own wait stall; the
barrier's cause is the segment's costliest wait, with the class of what that wait drains.
A barrier before the hot loop that only part of the waves run (an exec-masked `s_barrier`, e.g.
Triton's `cond_barrier`) staggers two wave groups: ping-pong scheduling, where a loop barrier's
wait is one group waiting for its partner's load/LDS phase (`ping_pong`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from kerneltrace.analysis.control_flow import ControlFlow, FlowRow
from kerneltrace.analysis.drains import WaitDrain
from kerneltrace.isa.classify import opcode
from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds


@dataclass(frozen=True)
class BarrierCause:
    """One executed barrier, the segment before it and the wait that most delays it."""

    index: int
    stall: int
    segment: tuple[int, int]  # first, last row of the segment (first > last: wraps the loop)
    wait_stall: int  # stall of the segment's waits
    cause_index: int | None  # the costliest wait of the segment
    cause_stall: int
    cause_drains: str | None  # class of its youngest drained producer
    explained: int  # min(barrier stall, segment wait stall)


@dataclass(frozen=True)
class Barriers:
    causes: tuple[BarrierCause, ...]
    stall: int
    explained: int
    # a conditional barrier before the hot loop staggers two wave groups: ping-pong scheduling
    # (one group's load/LDS phase overlaps the other's MFMAs; the loop's barriers pair them)
    ping_pong: bool = False
    staggering_barriers: tuple[int, ...] = ()

    @property
    def explained_share(self) -> float:
        return round(self.explained / self.stall, 4) if self.stall else 0.0

    def to_dict(self) -> dict:
        return {"barriers": [asdict(c) for c in self.causes], "stall_cycles": self.stall,
                "explained_cycles": self.explained, "explained_share": self.explained_share,
                "ping_pong": self.ping_pong, "staggering_barriers": list(self.staggering_barriers)}


def _segment(rows: Sequence[FlowRow], position: int, barriers: set[int],
             flow: ControlFlow | None) -> list[int]:
    """Positions of the rows after the previous barrier up to `position` (exclusive)."""
    loop = flow.loop_of(rows[position].index) if flow is not None else None
    first = 0
    if loop is not None:
        first = next((p for p, row in enumerate(rows) if row.index >= loop.first_index), 0)
    out = []
    for pos in range(position - 1, first - 1, -1):
        if pos in barriers:
            return out
        out.append(pos)
    if loop is not None:  # wrap: the previous iteration's tail after its last barrier
        last = max((p for p, row in enumerate(rows) if row.index <= loop.last_index), default=position)
        for pos in range(last, position, -1):
            if pos in barriers:
                break
            out.append(pos)
    return out


def barrier_causes(rows: Sequence[FlowRow], drains: Sequence[WaitDrain],
                   flow: ControlFlow | None = None,
                   limits: StructureThresholds = DEFAULT_STRUCTURE) -> Barriers | None:
    """Every executed barrier with its segment's waits; None when no barrier ran. A barrier
    before the hot loop run by at most `limits.conditional_hits` of the barrier before it is
    conditional (under an exec mask): it staggers two wave groups."""
    ordered = sorted(rows, key=lambda row: row.index)
    positions = {p for p, row in enumerate(ordered) if opcode(row.asm) == "s_barrier" and row.hits}
    if not positions:
        return None
    by_wait: dict[int, WaitDrain] = {}
    for drain in drains:  # one entry per wait row: the counter with the youngest producer
        if drain.index not in by_wait or drain.stall > by_wait[drain.index].stall:
            by_wait[drain.index] = drain
    causes = []
    for position in sorted(positions):
        row = ordered[position]
        stall = row.stall if row.stall is not None else row.time
        waits = [by_wait[ordered[p].index] for p in _segment(ordered, position, positions, flow)
                 if ordered[p].index in by_wait]
        wait_stall = sum(w.stall for w in waits)
        top = max(waits, key=lambda w: w.stall, default=None)
        causes.append(BarrierCause(
            row.index, stall or 0, _bounds(ordered, position, positions, flow), wait_stall,
            top.index if top else None, top.stall if top else 0, top.primary if top else None,
            min(stall or 0, wait_stall)))
    total = sum(c.stall for c in causes)
    hot = flow.hot_loop if flow is not None else None
    staggering = tuple(
        ordered[p].index for p in sorted(positions)
        if hot is not None and ordered[p].index < hot.first_index and p > 0
        and ordered[p].hits <= limits.conditional_hits * ordered[p - 1].hits)
    return Barriers(tuple(causes), total, sum(c.explained for c in causes), bool(staggering),
                    staggering)


def _bounds(rows: Sequence[FlowRow], position: int, barriers: set[int],
            flow: ControlFlow | None) -> tuple[int, int]:
    seg = _segment(rows, position, barriers, flow)
    if not seg:
        return (rows[position].index, rows[position].index)
    # youngest first: the last entry is where the segment starts
    return (rows[seg[-1]].index, rows[seg[0]].index)
