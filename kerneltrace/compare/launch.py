"""Kernel time from the launch (workgroup rounds × wave lifetime) when two captures' waves do different work.

A persistent kernel runs a few waves that each loop over many output tiles; its one-tile-per-wave
original runs many short waves. Per wave, the two do different work, so the wave lifetime alone
cannot compare them. What both sides share is the problem: the whole grid's work is the same, and
the kernel takes as many *rounds* of resident workgroups as the GPU needs to run the grid, each
round one wave lifetime long:

    rounds = ceil(workgroups / (CUs × workgroups resident per CU))
    kernel time ∝ rounds × mean wave lifetime

Workgroups and their size come from the dispatch's kernel_trace row, the CU count from
agent_info, the workgroups resident per CU from the traced CUs' measured waves in flight
(occupancy.json). The band adds, to the noise floor, the difference between this estimate and the
one with fractional rounds (how much the rounding decided). Checked against a measured pair in
docs/calibration.md ("Different work per wave").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kerneltrace.compare.values import finite


@dataclass(frozen=True)
class Launch:
    """What one capture says about its launch and its waves' concurrency."""

    workgroups: int
    waves_per_workgroup: int
    cus: int
    waves_per_cu: float  # measured mean waves in flight on a traced CU
    lifetime: float  # mean wave lifetime, cycles

    @property
    def resident(self) -> int:
        """Workgroups resident on one CU at a time (at least one)."""
        return max(1, round(self.waves_per_cu / self.waves_per_workgroup))

    @property
    def rounds(self) -> int:
        return math.ceil(self.workgroups / (self.cus * self.resident))

    @property
    def fractional_rounds(self) -> float:
        """Rounds if workgroups packed without a tail (never below one wave lifetime)."""
        return max(1.0, self.workgroups / (self.cus * self.waves_per_cu / self.waves_per_workgroup))

    def to_dict(self) -> dict[str, Any]:
        return {"workgroups": self.workgroups, "waves_per_workgroup": self.waves_per_workgroup,
                "cus": self.cus, "waves_in_flight_per_cu": round(self.waves_per_cu, 2),
                "resident_workgroups_per_cu": self.resident, "rounds": self.rounds,
                "mean_wave_cycles": round(self.lifetime, 1)}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _product(value: Any) -> int | None:
    if not isinstance(value, list) or not value:
        return None
    total = 1
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item <= 0 or item > 1 << 32:
            return None
        total *= item
    return total


def launch_of(doc: Mapping[str, Any]) -> tuple[Launch | None, str]:
    """(Launch, "") or (None, what is missing)."""
    metadata = _mapping(doc.get("metadata"))
    trace, agent = _mapping(metadata.get("kernel_trace")), _mapping(metadata.get("agent"))
    grid, group = _product(trace.get("grid_size")), _product(trace.get("workgroup_size"))
    if not grid or not group:
        return None, "no grid and workgroup size (kernel_trace CSV)"
    cus = agent.get("cu_count")
    if isinstance(cus, bool) or not isinstance(cus, int) or not 0 < cus < 1 << 20:
        return None, "no CU count (agent_info CSV)"
    wave_size = agent.get("wave_front_size")
    if isinstance(wave_size, bool) or wave_size not in (32, 64):
        wave_size = _mapping(doc.get("occupancy")).get("wave_size")
    if wave_size not in (32, 64):
        return None, "no wave size"
    waves = _mapping(doc.get("waves"))
    occupancy = _mapping(waves.get("occupancy"))
    per_cu = finite(occupancy.get("mean_waves")) if occupancy.get("available") else None
    lifetime = finite(_mapping(_mapping(waves.get("per_wave")).get("duration")).get("mean"))
    if not per_cu or per_cu <= 0:
        return None, "no measured waves in flight per CU (occupancy.json)"
    if not lifetime or lifetime <= 0:
        return None, "no wave lifetimes (wave files)"
    return Launch(math.ceil(grid / group), math.ceil(group / wave_size), cus, per_cu, lifetime), ""


def by_launch(before: Mapping[str, Any], after: Mapping[str, Any]
              ) -> tuple[float | None, float, str, dict[str, Any]]:
    """(relative time change or None, extra band, why, the launches) for different work per wave."""
    launch_b, missing_b = launch_of(before)
    launch_a, missing_a = launch_of(after)
    facts = {"before": launch_b.to_dict() if launch_b else None,
             "after": launch_a.to_dict() if launch_a else None}
    if launch_b is None or launch_a is None:
        missing = "; ".join(f"{side}: {why}" for side, why in (("BEFORE", missing_b), ("AFTER", missing_a))
                            if why)
        return None, 0.0, missing, facts
    value = (launch_a.rounds * launch_a.lifetime) / (launch_b.rounds * launch_b.lifetime) - 1.0
    smooth = ((launch_a.fractional_rounds * launch_a.lifetime)
              / (launch_b.fractional_rounds * launch_b.lifetime) - 1.0)
    why = (f"the waves do different work, so kernel time is compared for the whole grid: "
           f"{launch_b.workgroups} → {launch_a.workgroups} workgroups on {launch_b.cus} → "
           f"{launch_a.cus} CUs, {launch_b.resident} → {launch_a.resident} resident per CU "
           f"(measured waves in flight {launch_b.waves_per_cu:.2f} → {launch_a.waves_per_cu:.2f}), "
           f"{launch_b.rounds} → {launch_a.rounds} rounds × mean wave lifetime "
           f"{launch_b.lifetime:,.0f} → {launch_a.lifetime:,.0f} cycles (kernel time ∝ rounds × "
           "lifetime); assumes both sides compute the same problem")
    return value, abs(value - smooth), why, facts
