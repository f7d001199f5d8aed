"""Load → wait walks shared by the hotspot patterns: the first `s_waitcnt` draining a producer.

Loop-aware: inside a static loop body (kerneltrace/analysis/loops.py) the instructions after a
load are walked cyclically — past the latch back to the header — because in a loop the MFMAs at
the end of the body run between a load at the top of the next iteration and the wait for it.
Whether a wait is "too close" is judged by the MFMA pass cycles (kerneltrace/isa/mfma.py) issued
between the load and the first `s_waitcnt` that drains it — the latency this wave's matrix work
can hide — against a typical memory latency (heuristic budgets below); the measured stall rate
must confirm that the wait is exposed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kerneltrace.isa.classify import SMEM, opcode, wait_counters
from kerneltrace.isa.mfma import mfma_info
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.rules._util import is_mfma, stalled
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class PatternThresholds:
    """The hotspot patterns P1–P4 (vmem_patterns.py, lds_scalar_patterns.py) and their walks."""

    CONCERN = "patterns"
    mfma_window: int = heuristic(24, "outside loops: instructions on each side of a load that "
                                 "count as inside the MFMA sequence")
    wait_search: int = heuristic(64, "outside loops: how far to look for the wait that drains a "
                                 "load")
    lds_wait_search: int = heuristic(16, "outside loops: how far to look for the wait that "
                                     "drains an LDS read")
    min_share: float = heuristic(0.01, "share of all stall below which a pattern is noise, not "
                                 "a plan item")
    high_stall_rate: float = heuristic(0.5, "stall rate of a line's loads and waits from which "
                                       "P1 calls the latency exposed")
    # Latency-hiding budgets, not measurements: a global load that misses the caches takes
    # roughly 500–800+ cycles from HBM, an LDS read roughly 64–128 (more with bank conflicts).
    # MFMA pass cycles between issue and wait below these cannot cover the load.
    hbm_latency_cycles: int = heuristic(500, "MFMA pass cycles between a global load and its "
                                        "wait below which the load's latency is exposed (P1)")
    lds_latency_cycles: int = heuristic(128, "MFMA pass cycles between an LDS read and its wait "
                                        "below which the read's latency is exposed (P3)")
    burst_min_loads: int = heuristic(4, "back-to-back vector loads that make a P2 burst")
    burst_max_gap: int = heuristic(2, "non-MFMA instructions allowed between loads of a burst")
    consumer_gap: int = heuristic(3, "instructions after the wait within which the MFMA "
                                  "consuming an LDS read must come (P3)")
    scale_max_distance: int = heuristic(8, "instructions between a small load and its first use "
                                        "up to which it is issued too late (P4)")
    p1_hideable: tuple[float, float] = heuristic((0.5, 0.9), "share of a line's load and wait "
                                                 "stall prefetching one stage ahead hides (P1)")
    p2_hideable: tuple[float, float] = heuristic((0.3, 0.7), "share of a burst's issue stall "
                                                 "spreading the loads hides (P2)")
    p3_hideable: tuple[float, float] = heuristic((0.4, 0.8), "share of the lgkmcnt waits "
                                                 "issuing all reads first hides (P3)")
    p4_hideable: tuple[float, float] = heuristic((0.5, 0.9), "share of the waits before the use "
                                                 "hoisting the small load hides (P4)")


VMEM_COUNTERS = ("vmcnt", "loadcnt")  # gfx9 name, gfx12 name
LGKM_COUNTERS = ("lgkmcnt", "dscnt")


def unique_by_index(instructions: list[dict]) -> list[dict]:
    """Instructions without repeats, in row order."""
    seen: dict[int, dict] = {}
    for ins in instructions:
        seen.setdefault(ins["index"], ins)
    return sorted(seen.values(), key=lambda ins: ins["index"])


@dataclass(frozen=True)
class Drain:
    """The first wait that drains a producer, and the matrix work issued before it."""

    wait: dict
    between: list[dict]  # instructions executed between producer and wait (walk order)
    after: list[dict]  # instructions following the wait in the same walk
    mfmas: int
    mfma_cycles: int  # MFMA pass cycles between, weighted by hits relative to the producer
    unknown_mfma: bool  # an MFMA in between has no known pass latency
    wrapped: bool  # the wait lies in the next iteration (walk went past the latch)


def _weight(ins: dict, producer: dict) -> float:
    """Executions of `ins` per execution of the producer (inner loops, skipped branches)."""
    hits, base = ins.get("hits") or 0, producer.get("hits") or 0
    return hits / base if hits and base else 1.0


def first_draining_wait(
    ctx: PlanContext,
    producer: dict,
    counters: tuple[str, ...],
    counted: Callable[[dict], bool],
    limit: int,
) -> Drain | None:
    """Walk forward (cyclically inside a loop) to the first `s_waitcnt` that drains `producer`.

    A wait `cnt(N)` leaves at most N operations of its counter outstanding; they complete in
    order, so the producer is drained once N or more counted operations were issued after it.
    Scalar loads return out of order: with one in flight after the producer only `cnt(0)` counts.
    """
    walk = ctx.following(producer["index"], limit)
    issued_after, out_of_order = 0, False
    mfmas, cycles, unknown = 0, 0.0, False
    for pos, ins in enumerate(walk):
        if opcode(ins.get("asm", "")).startswith("s_wait"):
            values = wait_counters(ins["asm"])
            limit_value = next((values[c] for c in counters if c in values), None)
            if limit_value is not None and (
                limit_value == 0 or (not out_of_order and issued_after >= limit_value)
            ):
                return Drain(
                    wait=ins,
                    between=walk[:pos],
                    after=walk[pos + 1 :],
                    mfmas=mfmas,
                    mfma_cycles=int(round(cycles)),
                    unknown_mfma=unknown,
                    wrapped=ins["index"] < producer["index"],
                )
        if counted(ins):
            issued_after += 1
            out_of_order = out_of_order or ins.get("type") == SMEM
        if is_mfma(ins):
            info = mfma_info(ins.get("asm", ""))
            mfmas += 1
            if info is None:
                unknown = True
            else:
                cycles += info.cycles * _weight(ins, producer)
    return None


def walk_limit(ctx: PlanContext, index: int, outside: int) -> int:
    loop = ctx.loop_of(index)
    return loop.size - 1 if loop else outside


def exposed_drain(ctx: PlanContext, producer: dict, counters: tuple[str, ...],
                  counted: Callable[[dict], bool], outside: int, latency_cycles: float) -> Drain | None:
    """The first wait draining `producer` (searched `outside` rows ahead outside loops) when it
    exposes the producer's latency: it stalls and fewer than `latency_cycles` known MFMA pass
    cycles come between (P1 for global loads, P3 for LDS reads); None otherwise."""
    drain = first_draining_wait(ctx, producer, counters, counted,
                                walk_limit(ctx, producer["index"], outside))
    if (drain is None or not stalled(drain.wait) or drain.unknown_mfma
            or drain.mfma_cycles >= latency_cycles):
        return None
    return drain


def in_mfma_region(ctx: PlanContext, index: int) -> bool:
    """Inside a loop body that holds MFMAs, or (straight-line code) between MFMAs."""
    loop = ctx.loop_of(index)
    if loop is not None:
        return any(is_mfma(ins) for ins in ctx.following(index, loop.size - 1))
    window = ctx.thresholds.of(PatternThresholds).mfma_window
    before, after = ctx.neighbours(index, window, window)
    return any(map(is_mfma, before)) and any(map(is_mfma, after))


def where_phrase(ctx: PlanContext, index: int) -> str:
    loop = ctx.loop_of(index)
    return f"the MFMA loop (rows {loop.first_index}–{loop.last_index})" if loop else "an MFMA sequence"


def _wave_attribution(ctx: PlanContext) -> dict[int, dict[int, int]]:
    """{wait row: {producer row: stall cycles}} from the wave analysis (hot waits only)."""
    return {
        wait["index"]: {p["index"]: p.get("cycles") or 0 for p in wait.get("producers") or []}
        for wait in (ctx.waves or {}).get("waitcnt") or []
    }


def exposed_wait_stall(
    ctx: PlanContext, drain: Drain, producers: set[int], other_types: tuple[str, ...]
) -> int:
    """Stall cycles of `drain.wait` that belong to `producers`.

    The wave analysis (when it reports this wait) charges each wait to the youngest producer it
    drained: take the cycles charged to `producers`. Without it, a mixed wait (`vmcnt` and
    `lgkmcnt`) that also drains other kinds of work issued after the producer is ambiguous: 0.
    """
    attributed = _wave_attribution(ctx).get(drain.wait["index"])
    if attributed is not None:
        return sum(cycles for index, cycles in attributed.items() if index in producers)
    counters = wait_counters(drain.wait.get("asm", ""))
    mixed = any(c in counters for c in VMEM_COUNTERS) and any(c in counters for c in LGKM_COUNTERS)
    if mixed and any(ins.get("type") in other_types for ins in drain.between):
        return 0
    return drain.wait.get("stall_cycles") or 0


def charged_note(drain: Drain, exposed: dict[int, int]) -> str:
    """Evidence note suffix when only part of a wait's stall is charged to this finding."""
    cycles, total = exposed[drain.wait["index"]], drain.wait.get("stall_cycles") or 0
    return f"; {cycles:,} of its {total:,} stall cycles charged here" if cycles < total else ""
