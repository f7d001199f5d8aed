"""PHASE-before-hot-loop / PHASE-after-hot-loop: once-per-wave code around the hot loop that holds much of the waves' time.

A kernel whose loop runs a few iterations spends a large part of each wave before it (the first
tiles' loads, each waited on its own, address set-up) or after it (the results' conversion and
stores, the drain at `s_endpgm`). Its costliest rows there are what an engineer changes next to
the loop, and no loop finding names them. The kernel-argument round trips are the SETUP and PRO
findings' (left out here); a hot loop inside another iterating loop is a tile loop
(PERSIST-per-tile-overhead's)."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa.classify import BARRIER, VMEM_LOAD, VMEM_STORE, VMEM_WAIT
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import FindingKind, plan_rule
from kerneltrace.plan.verdict import SETUP_TYPES, cost_cycles
from kerneltrace.thresholds import heuristic

RULE_BEFORE = "PHASE-before-hot-loop"
RULE_AFTER = "PHASE-after-hot-loop"


@dataclass(frozen=True)
class LoopPhaseThresholds:
    """PHASE-before-hot-loop and PHASE-after-hot-loop."""

    CONCERN = "loop_phases"
    min_share: float = heuristic(0.1, "share of the waves' time (latency + idle) the code before "
                                 "or after the hot loop holds, kernel-argument round trips left "
                                 "out, from which it is a finding")
    removable: tuple[float, float] = heuristic(
        (0.1, 0.3), "share of that phase's time overlapping its independent parts removes (the "
        "first tiles' loads issued together, stores kept in flight, wider stores): it runs once "
        "per wave as a chain of round trips, so most of it stays")
    cited_rows: int = heuristic(4, "costliest rows of the phase a finding cites")


def _phase(ctx: PlanContext, before: bool, first: int, last: int) -> list[dict]:
    """The executed rows before (or after) the hot loop, kernel-argument round trips left out."""
    return [ins for ins in ctx.program_order
            if (ins["index"] < first if before else ins["index"] > last)
            and (ins.get("hits") or 0) > 0 and ins.get("type") not in SETUP_TYPES]


def _contents(rows: list[dict]) -> str:
    """What a phase holds, by the share of its time: its memory waits, loads, stores, the rest."""
    total = sum(cost_cycles(ins) for ins in rows) or 1
    parts, counted = [], 0
    for label, kind in (("waits for vector memory", VMEM_WAIT), ("vector loads", VMEM_LOAD),
                        ("stores", VMEM_STORE), ("barriers", BARRIER)):
        chosen = [ins for ins in rows if ins.get("type") == kind]
        if chosen:
            cost = sum(cost_cycles(ins) for ins in chosen)
            counted += cost
            parts.append(f"{len(chosen)} {label} ({cost / total:.0%})")
    return ", ".join(parts + [f"other instructions {1 - counted / total:.0%}"]) + " of its time"


def _in_tile_loop(flow: dict, hot: dict) -> bool:
    """Whether an iterating loop encloses the hot loop (a tile loop: its per-tile code is
    PERSIST-per-tile-overhead's)."""
    return any(loop.get("iterates") and loop.get("first_index", 0) <= hot["first_index"]
               and loop.get("last_index", -1) >= hot["last_index"]
               and (loop["first_index"], loop["last_index"]) != (hot["first_index"], hot["last_index"])
               for loop in flow.get("loops") or [])


@plan_rule(id=RULE_BEFORE, lever="prologue", order=129, thresholds=(LoopPhaseThresholds,),
           variants=(FindingKind(RULE_AFTER, "prologue"),))
def loop_phases(ctx: PlanContext) -> list[Finding]:
    """The code before or after the hot loop holds much of the waves' time.

    Trigger: an iterating hot loop (code.json control flow) that no iterating loop encloses (a
        tile loop), and the executed rows before it (`PHASE-before-hot-loop`; not under the
        prologue verdict, whose findings those rows are) or after it (`PHASE-after-hot-loop`),
        scalar kernel-argument loads and their waits left out, hold ≥ 10 % of the waves' time
        (latency + idle) and less than the hot loop
    Evidence: the phase's costliest rows (latency + idle), at most 4; after the loop its
        costliest store first
    Gain: 10–30 % of the phase's share of the waves' time (hypothesis)
    Fix: before the loop, issue the first tiles' loads together ahead of one wait and start the
        loop's work as soon as the first lands; after it, wider stores kept in flight (no wait
        on them before `s_endpgm`), the conversion overlapped with the last iteration"""
    flow = ctx.structure.get("control_flow") or {}
    hot = flow.get("hot_loop") or {}
    first, last = hot.get("first_index"), hot.get("last_index")
    if not hot.get("iterates") or first is None or last is None or _in_tile_loop(flow, hot):
        return []
    limits = ctx.thresholds.of(LoopPhaseThresholds)
    lifetime = sum(cost_cycles(ins) for ins in ctx.program_order) or 1
    findings = []
    # under the prologue verdict the code before the loop is the verdict's (PRO, SETUP)
    for before in (False,) if ctx.verdict.kind == "prologue" else (True, False):
        rows = _phase(ctx, before, first, last)
        share = sum(cost_cycles(ins) for ins in rows) / lifetime
        # a phase longer than the loop makes the kernel straight-line code with a short loop in
        # it: its rows are the line and region findings'
        if share < limits.min_share or share >= (hot.get("time_share") or 0.0):
            continue
        costly = sorted(rows, key=lambda ins: -cost_cycles(ins))
        stores = [ins for ins in costly if ins.get("type") == VMEM_STORE] if not before else []
        cited = (stores[:1] + [ins for ins in costly if ins not in stores[:1]])[:limits.cited_rows]
        trips = hot.get("iterations_per_wave")
        loop_text = (f"the hot loop (rows {first}–{last}) runs {trips:g} iterations per wave"
                     if isinstance(trips, int | float) else f"the hot loop is rows {first}–{last}")
        where = "before" if before else "after"
        findings.append(ctx.finding(
            RULE_BEFORE if before else RULE_AFTER, ctx.share(sum(ins.get("stall_cycles") or 0
                                                                   for ins in rows)),
            title=(f"The code {where} the hot loop holds {share:.0%} of the waves' time"
                   + (f" (the loop runs {trips:g} iterations per wave)"
                      if isinstance(trips, int | float) else "")),
            estimated_gain=Gain.of_wave_time(share, limits.removable,
                                             f"the code {where} the hot loop is",
                                             "overlapping its independent parts"),
            root_cause=(f"{loop_text[:1].upper()}{loop_text[1:]}, and each wave spends {share:.0%} "
                        f"of its time {where} it (kernel-argument round trips left out), once "
                        f"per wave, with no loop work to hide it: {_contents(rows)}."),
            fix=("Issue the first tiles' global loads together, ahead of one wait (or a staircase "
                 "of partial waits), hoist the address set-up out of their chain, and start the "
                 "loop's first steps as soon as the first tile lands."
                 if before else
                 "Write the results with 16-byte stores (stage through LDS when the layout is "
                 "strided), keep them in flight (no wait on them before `s_endpgm`) and overlap "
                 "the conversion with the loop's last iteration."),
            evidence=[ctx.evidence(ins, f"costliest row {where} the hot loop") for ins in cited],
            scope="kernel", effort="medium",
        ))
    return findings
