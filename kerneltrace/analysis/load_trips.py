"""Vector-load round trips in series: loads waited before the next, independent loads are issued.

Outside iterating loops (straight-line code, an unrolled per-token or per-row body, a prologue) a
wave often issues a load, waits for it (`s_waitcnt vmcnt`), computes, then issues the next load
and waits again. Each such round trip is a full memory latency the wave sits through alone. When
the later loads' addresses do not depend on anything an earlier trip loaded (no register loaded
by it, nor computed from one, feeds the address), they could all be issued before the first wait:
one latency instead of many. This module lists the round trips (`analysis.drains` tells what each
wait drains) and which are serialized that way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from kerneltrace.analysis.control_flow import ControlFlow, FlowRow
from kerneltrace.analysis.drains import WaitDrain, producer_class
from kerneltrace.isa.registers import reads, writes

DATA_CLASSES = ("global-load", "lds-dma")  # drained producers that are the kernel's data loads


@dataclass(frozen=True)
class LoadTrip:
    """One wait draining data loads issued since the previous trip's wait."""

    wait_index: int
    loads: tuple[int, ...]
    stall: int
    serialized: bool  # issued after the previous trip's wait, addresses independent of earlier data


@dataclass(frozen=True)
class LoadTrips:
    """The once-per-wave vector-load round trips of one kernel."""

    trips: tuple[LoadTrip, ...]
    stall_cycles: int
    late_stall_cycles: int  # the serialized trips' waits
    late_share: float  # of all stall

    @property
    def serialized(self) -> int:
        return sum(1 for trip in self.trips if trip.serialized)

    def to_dict(self) -> dict:
        return {"round_trips": len(self.trips), "serialized_round_trips": self.serialized,
                "trips": [asdict(trip) for trip in self.trips], "stall_cycles": self.stall_cycles,
                "late_stall_cycles": self.late_stall_cycles, "late_share": self.late_share}


def load_trips(rows: Sequence[FlowRow], drains: Sequence[WaitDrain], flow: ControlFlow,
               total_stall: int) -> LoadTrips | None:
    """The vmcnt waits outside iterating loops that drain data loads, in program order, and
    which of them an earlier batch could have held (None when fewer than two)."""
    ordered = sorted((row for row in rows if row.hits), key=lambda row: row.index)
    by_index = {row.index: row for row in ordered}
    waits = [d for d in sorted(drains, key=lambda d: d.index)
             if d.counter == "vmcnt" and flow.loop_of(d.index) is None]
    trips: list[tuple[WaitDrain, tuple[int, ...]]] = []
    claimed: set[int] = set()
    for drain in waits:
        loads = tuple(sorted(i for i in drain.drained if i in by_index and i not in claimed
                             and flow.loop_of(i) is None
                             and producer_class(by_index[i].asm) in DATA_CLASSES))
        if loads:
            trips.append((drain, loads))
            claimed.update(loads)
    if len(trips) < 2:
        return None
    earliest = _earliest_loaded(ordered, {i: k for k, (_, loads) in enumerate(trips) for i in loads})
    out: list[LoadTrip] = []
    for k, (drain, loads) in enumerate(trips):
        # issued only after the previous trip's wait (a counted staircase of waits on loads
        # issued together is not a series), and not needing anything an earlier trip loaded
        serialized = (k > 0 and trips[k - 1][0].index < min(loads)
                      and all(earliest.get(i, k) >= k for i in loads))
        out.append(LoadTrip(drain.index, loads, drain.stall, serialized))
    stall = sum(t.stall for t in out)
    late = sum(t.stall for t in out if t.serialized)
    return LoadTrips(tuple(out), stall, late, round(late / total_stall, 4) if total_stall else 0.0)


def _earliest_loaded(ordered: Sequence[FlowRow], trip_of: dict[int, int]) -> dict[int, int]:
    """Per load of a trip: the earliest trip whose loaded data its address reads, through any
    chain of instructions before it (absent when none). One pass in program order: each
    register carries the earliest trip its value came from; an instruction's writes take the
    earliest of its reads (a load's own data, its trip), an independent write clears them."""
    source: dict = {}
    out: dict[int, int] = {}
    for row in ordered:
        read = reads(row.asm)
        earliest = min((source[r] for r in read if r in source), default=None)
        if row.index in trip_of:
            if earliest is not None:
                out[row.index] = earliest
            earliest = trip_of[row.index] if earliest is None else min(earliest, trip_of[row.index])
        for register in writes(row.asm):
            if earliest is None:
                source.pop(register, None)
            else:
                source[register] = earliest
    return out
