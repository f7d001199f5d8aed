"""PERSIST-per-tile-overhead: a persistent kernel's per-tile code (epilogue, next tile's setup) outside its hot loop."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.tile_loop import tile_loop
from kerneltrace.isa.classify import VMEM_STORE
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import cost_cycles
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class TileLoopThresholds:
    """PERSIST-per-tile-overhead: what a tile loop is and when its per-tile code is a finding."""

    CONCERN = "tile_loop"
    min_tiles: float = heuristic(2.0, "outer-loop iterations per wave from which the loop around "
                                 "the hot loop is a persistent tile loop")
    min_inner_trips: float = heuristic(8.0, "hot-loop iterations per entry from which it is the "
                                       "tile's main (K) loop, not a short inner step")
    min_share: float = heuristic(0.04, "share of the waves' time the per-tile code takes from "
                                 "which it is a finding")
    overlappable: tuple[float, float] = heuristic(
        (0.3, 0.7), "share of the per-tile code's time overlapping it with the next tile's loads "
        "and MFMAs (or a shorter epilogue) removes")


@plan_rule(id="PERSIST-per-tile-overhead", lever="compute", serves=("compute-mfma",), order=128,
           thresholds=(TileLoopThresholds,))
def persist_per_tile_overhead(ctx: PlanContext) -> list[Finding]:
    """A persistent kernel's per-tile code: epilogue and next-tile setup outside the hot loop, not overlapped.

    Trigger: the hot loop (code.json control flow) runs ≥ 8 iterations per entry inside an outer
        loop that runs ≥ 2 times per wave (a persistent tile loop), and the outer loop's share
        of the waves' time minus the hot loop's is ≥ 4 %
    Evidence: the first row after the hot loop (the epilogue), the costliest store of the
        per-tile code, and the compare and branch that decide whether another tile follows
    Gain: 30–70 % of the per-tile code's share of the waves' time (hypothesis)
    Fix: overlap each tile's epilogue with the next tile's first loads and MFMAs (issue the next
        tile's prologue loads before the C write-out, keep the stores in flight), shorten the
        epilogue (fused scaling, wider stores)"""
    limits = ctx.thresholds.of(TileLoopThresholds)
    program = ctx.program_order
    tiles = tile_loop(ctx.structure.get("control_flow") or {}, program, limits.min_tiles,
                      limits.min_inner_trips)
    if tiles is None or tiles.per_tile_share < limits.min_share:
        return []
    share = tiles.per_tile_share
    per_tile = [ins for ins in program
                if tiles.outer_first <= ins["index"] <= tiles.outer_last
                and not tiles.inner_first <= ins["index"] <= tiles.inner_last and ins.get("hits")]
    stores = sorted((ins for ins in per_tile if ins.get("type") == VMEM_STORE),
                    key=lambda ins: -cost_cycles(ins))
    after = [ins for ins in per_tile if ins["index"] > tiles.inner_last]
    evidence = []
    if after:
        evidence.append(ctx.evidence(after[0], "first row after the hot loop: the tile's epilogue"))
    if stores:
        evidence.append(ctx.evidence(stores[0], "costliest store of the per-tile code"))
    evidence.extend(ctx.evidence(ctx.instructions[index], "does another tile follow")
                    for index in tiles.continue_check if index in ctx.instructions)
    stall = sum(ins.get("stall_cycles") or 0 for ins in per_tile)
    return [ctx.finding(
        "PERSIST-per-tile-overhead", ctx.share(stall), location=ctx.user_location(evidence),
        title=(f"Persistent tile loop: {tiles.tiles_per_wave:g} tiles per wave, and each tile's "
               f"code outside the hot loop (epilogue, next tile's setup) is {share:.0%} of the "
               "waves' time, not overlapped with the matrix work"),
        estimated_gain=Gain.of_wave_time(share, limits.overlappable, "the per-tile code is",
                                         "overlapping it with the next tile's work"),
        root_cause=(f"Rows {tiles.outer_first}–{tiles.outer_last} loop over output tiles "
                    f"({tiles.tiles_per_wave:g} per wave) around the hot loop (rows "
                    f"{tiles.inner_first}–{tiles.inner_last}, {tiles.inner_trips_per_tile:g} "
                    "iterations per tile). Between two tiles each wave finishes the accumulators "
                    "(scaling, conversion, C stores) and sets up the next tile's addresses and "
                    "first loads with no MFMA in flight: the matrix pipe idles for that part of "
                    "every tile."),
        fix=("Software-pipeline across tiles: issue the next tile's first global loads before the "
             "C write-out and start its MFMAs while the stores drain (keep them in flight, no "
             "`vmcnt(0)` after them); fold the alpha/beta scaling into the conversion; wider "
             "stores (`dwordx4`)."),
        evidence=evidence, scope="loop", effort="medium",
    )]
