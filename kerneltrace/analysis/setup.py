"""Kernel-argument round trips: `s_load` batches from the kernarg pointer and the waits that drain them.

A wave reads its kernel arguments with scalar loads from an input SGPR pair (the kernarg segment
pointer the dispatch preloads, `s[0:1]` on most kernels; any s_load base pair no instruction wrote
before its first use counts). A round trip is one `s_waitcnt lgkmcnt` that drains such loads
(`analysis.drains`). When a later batch is issued after an earlier round trip's wait, the trips are
serialized: the later one has no data dependency on the earlier (its address is the kernarg
pointer itself), so it can be hoisted into the first batch, or the arguments preloaded into SGPRs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from kerneltrace.analysis.control_flow import FlowRow
from kerneltrace.analysis.drains import WaitDrain, producer_class
from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import operands, registers, writes


def kernarg_bases(rows: Sequence[FlowRow]) -> frozenset[str]:
    """SGPR pairs used as an `s_load` base before any instruction wrote them (input SGPRs)."""
    written: set[tuple[str, int]] = set()
    bases: set[str] = set()
    for row in sorted(rows, key=lambda r: r.index):
        op = opcode(row.asm)
        if op.startswith(("s_load", "s_buffer_load")):
            parts = operands(row.asm)
            if len(parts) > 1 and not (registers(parts[1]) & written):
                bases.add(parts[1].replace(" ", ""))
        written |= writes(row.asm)
    return frozenset(bases)


@dataclass(frozen=True)
class RoundTrip:
    """One wait that drains kernel-argument loads."""

    wait_index: int
    loads: tuple[int, ...]  # kernarg load rows it drains
    stall: int
    hits: int
    serialized: bool  # its loads were issued after an earlier round trip's wait


@dataclass(frozen=True)
class Setup:
    """The kernel-argument round trips of one kernel and their cost."""

    bases: tuple[str, ...]
    trips: tuple[RoundTrip, ...]
    stall: int  # of all round-trip waits
    late_stall: int  # of the serialized ones (the second batch onwards)
    share: float  # of all stall
    late_share: float

    @property
    def serialized(self) -> int:
        return sum(1 for trip in self.trips if trip.serialized)

    def to_dict(self) -> dict:
        return {"bases": list(self.bases), "round_trips": len(self.trips),
                "serialized_round_trips": self.serialized,
                "trips": [asdict(trip) for trip in self.trips], "stall_cycles": self.stall,
                "late_stall_cycles": self.late_stall, "share": self.share,
                "late_share": self.late_share}


def round_trips(rows: Sequence[FlowRow], drains: Sequence[WaitDrain], total_stall: int,
                bases: frozenset[str]) -> Setup | None:
    """The kernarg round trips among `drains` (their waits in program order); None when none."""
    by_index = {row.index: row for row in rows}
    trips: list[RoundTrip] = []
    for drain in sorted(drains, key=lambda d: d.index):
        if drain.counter != "lgkmcnt":
            continue
        loads = tuple(i for i in drain.drained
                      if producer_class(by_index[i].asm, bases) == "kernarg")
        if not loads:
            continue
        serialized = any(t.wait_index < min(loads) for t in trips)
        trips.append(RoundTrip(drain.index, tuple(sorted(loads)), drain.stall,
                               by_index[drain.index].hits, serialized))
    if not trips:
        return None
    stall = sum(t.stall for t in trips)
    late = sum(t.stall for t in trips if t.serialized)
    share = round(stall / total_stall, 4) if total_stall else 0.0
    return Setup(tuple(sorted(bases)), tuple(trips), stall, late, share,
                 round(late / total_stall, 4) if total_stall else 0.0)
