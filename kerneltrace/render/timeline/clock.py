"""Shader-clock cycles to trace nanoseconds: realtime.json, the agent's clock, the arch table, or 1:1.

Order (first that answers): the capture's own `realtime.json` (shader clock measured against the
realtime counter, docs/rocprof-outputs.md §8.11), the agent_info `Max_Engine_Clk_Fcompute` of the
dispatch's GPU agent, the clock all products of the resolved arch share (arch/table.py), and
otherwise cycles written as nanoseconds (1 cycle = 1 ns), which the trace metadata says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kerneltrace.readers.realtime import realtime_mhz

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Clock:
    """How cycles become the trace's nanosecond timestamps."""

    mhz: float | None  # None: cycles written as ns
    source: str  # where the clock came from, for the metadata

    @property
    def ns_per_cycle(self) -> float:
        return 1000.0 / self.mhz if self.mhz else 1.0

    def ns(self, cycles: np.ndarray) -> np.ndarray:
        """Timestamps (int64 ns) of cycle counts; equal cycles give equal ns, so slices that
        tile in cycles still tile."""
        import numpy as np

        return np.rint(np.asarray(cycles, np.float64) * self.ns_per_cycle).astype(np.int64)


def resolve_clock(dispatch_dir: Path, agent_mhz: list[int], arch: str | None) -> Clock:
    """The Clock of one dispatch (module docstring for the order)."""
    from kerneltrace.arch.table import arch_clock_mhz

    measured = realtime_mhz(dispatch_dir)
    if measured:
        return Clock(measured, "realtime.json (shader clock measured against the realtime counter)")
    known = sorted(set(mhz for mhz in agent_mhz if mhz))
    if len(known) == 1:
        return Clock(float(known[0]), "agent_info Max_Engine_Clk_Fcompute")
    table = arch_clock_mhz(arch)
    if table:
        return Clock(float(table), f"arch table: the maximum engine clock of every {arch} product")
    return Clock(None, "unknown clock: cycles written as ns (1 cycle = 1 ns)")
