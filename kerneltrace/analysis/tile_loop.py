"""Per-tile code of a persistent kernel: the outer loop's iterations outside the hot inner loop.

A persistent GEMM (or attention) kernel runs an outer loop over output tiles around its inner
K loop. What each outer iteration does besides the K loop — the epilogue (accumulator scaling,
conversion, C stores), the next tile's index arithmetic and first loads — runs with the matrix
pipe idle unless it is overlapped with the next tile's work. From the code.json control flow
alone: the hot loop, its parent loop and their shares of the waves' time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TileLoop:
    """The outer (tile) loop around the hot loop and what its iterations cost besides it."""

    outer_first: int
    outer_last: int
    inner_first: int
    inner_last: int
    tiles_per_wave: float  # outer iterations per traced wave
    inner_trips_per_tile: float  # hot-loop iterations per entry
    per_tile_share: float  # the outer loop's share of the waves' time minus the hot loop's
    continue_check: tuple[int, ...]  # the compare and branch deciding whether another tile follows


def tile_loop(flow: Mapping, program: Sequence[Mapping], min_tiles: float,
              min_inner_trips: float) -> TileLoop | None:
    """The tile loop of `flow` (structure.control_flow) when the hot loop sits in an outer loop that
    runs at least `min_tiles` times per wave and the hot loop `min_inner_trips` per entry."""
    hot = flow.get("hot_loop") or {}
    outer = next((loop for loop in flow.get("loops") or []
                  if loop.get("first_index") == hot.get("parent")), None)
    if not hot or outer is None:
        return None
    tiles, trips = outer.get("iterations_per_wave") or 0, hot.get("iterations_per_entry") or 0
    if tiles < min_tiles or trips < min_inner_trips:
        return None
    # the per-tile check: the last conditional branch after the hot loop that runs once per tile
    # (as often as the outer header), with the compare right before it
    header_hits = outer.get("header_hits") or 0
    after = [row for row in program
             if hot["last_index"] < row["index"] <= outer["last_index"]]
    check: tuple[int, ...] = ()
    for position in range(len(after) - 1, 0, -1):
        row = after[position]
        if (row.get("asm") or "").startswith("s_cbranch_") and row.get("hits") == header_hits:
            before = after[position - 1]
            check = ((before["index"], row["index"]) if (before.get("asm") or "").startswith("s_cmp")
                     else (row["index"],))
            break
    return TileLoop(outer["first_index"], outer["last_index"], hot["first_index"],
                    hot["last_index"], float(tiles), float(trips),
                    round(max(0.0, (outer.get("time_share") or 0) - (hot.get("time_share") or 0)), 4),
                    check)
