"""MEM-serial-load-round-trips: independent vector loads each waited before the next is issued."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class LoadTripThresholds:
    """MEM-serial-load-round-trips: when serialized load round trips are a finding."""

    CONCERN = "load_trips"
    min_serialized: int = heuristic(2, "serialized vector-load round trips from which they are "
                                    "a finding (one late batch is the prologue's business)")
    min_share: float = heuristic(0.05, "share of the waves' time the serialized trips' waits "
                                 "take from which they are a finding")
    removable: tuple[float, float] = heuristic(
        (0.4, 0.8), "share of the serialized trips' wait a single batch removes: the waits "
        "overlap once the loads are in flight together; the first latency, the requests' issue "
        "and what other waves already hid stay")
    cited: int = heuristic(4, "serialized trips cited as evidence: the first in program order, "
                           "then the costliest")


@plan_rule(id="MEM-serial-load-round-trips", lever="memory-pipeline", serves=("memory-latency",),
           order=9, thresholds=(LoadTripThresholds,))
def serial_load_round_trips(ctx: PlanContext) -> list[Finding]:
    """Vector loads outside loops waited one round trip at a time, though independent.

    Trigger: ≥ 2 `s_waitcnt vmcnt` outside iterating loops drain data loads issued after an
        earlier such wait whose loaded registers their addresses do not read (analysis/load_trips.py),
        and their waits hold ≥ 5 % of the waves' time, with no MFMA between the first and the last
        (matrix stages are a prefetch-depth question)
    Evidence: the first serialized trip and the costliest ones: a load and its wait each
    Gain: 40–80 % of the serialized waits' share of the waves' time
    Fix: issue every independent load before the first wait (one bounds check for the whole tile),
        then wait once or in a staircase"""
    limits = ctx.thresholds.of(LoadTripThresholds)
    trips = ctx.structure.get("load_trips") or {}
    late = [t for t in trips.get("trips") or [] if t["serialized"]]
    total = ctx.waves_time
    if len(late) < limits.min_serialized or not total:
        return []
    first_row, last_row = min(late[0]["loads"]), late[-1]["wait_index"]
    if any(ins.get("type") == isa.MFMA and ins.get("hits") and first_row <= ins["index"] <= last_row
           for ins in ctx.program_order):
        # matrix code between the trips: an unrolled K loop's stages, whose loads are bounded by
        # the registers a stage holds; prefetch depth (P1, GLUE) is that question, not batching
        return []
    share = sum(t["stall"] for t in late) / total
    if share < limits.min_share:
        return []
    low_part, high_part = limits.removable
    # the first late trip in program order (where a reader starts), then the costliest
    chosen = [late[0], *sorted(late[1:], key=lambda t: -t["stall"])][:limits.cited]
    evidence = []
    for trip in sorted(chosen, key=lambda t: t["wait_index"]):
        for index in trip["loads"][:1]:
            if index in ctx.instructions:
                evidence.append(ctx.evidence(ctx.instructions[index], "load issued after an earlier wait"))
        if trip["wait_index"] in ctx.instructions:
            evidence.append(ctx.evidence(ctx.instructions[trip["wait_index"]], "its own round trip"))
    loads = [i for t in late for i in t["loads"]]
    return [ctx.finding(
        "MEM-serial-load-round-trips", trips.get("late_share") or 0.0,
        location=ctx.user_location(evidence), scope="kernel", effort="medium", priority="HIGH",
        title=(f"{len(late)} vector-load round trips in series: each load waited before the next, "
               f"independent one is issued ({share:.0%} of the waves' time); issue them together"),
        estimated_gain=Gain(round(share * low_part, 4), round(min(1.0, share * high_part), 4),
                            f"the serialized trips' waits are {share:.1%} of the waves' time; one "
                            f"batch removes {low_part:.0%}–{high_part:.0%} of them (hypothesis — "
                            "verify by re-timing)", unit="wave_time"),
        root_cause=(f"Outside any loop the wave issues a load, waits for it (`s_waitcnt vmcnt`), "
                    f"works, then issues the next: {len(trips['trips'])} round trips, {len(late)} "
                    "of them after an earlier one's wait though their addresses read nothing an "
                    f"earlier trip loaded (loads at rows {', '.join(map(str, loads[:8]))}"
                    f"{'…' if len(loads) > 8 else ''}). Each is a full memory latency the wave "
                    "sits through with one request in flight."),
        fix=("Issue every independent load first (hoist the later loads above the first wait; one "
             "bounds check for the whole tile instead of one branch per element), keep the data in "
             "registers, then wait once, or with a counted `vmcnt(N)` staircase so the work on the "
             "first elements starts while the rest arrive. Needs a VGPR per loaded dword: check "
             "the register count and occupancy."),
        evidence=evidence,
    )]
