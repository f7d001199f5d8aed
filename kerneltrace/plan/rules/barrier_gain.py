"""The barrier family's gain from the wave timelines: the barrier waits no other work filled.

A wave waiting at a barrier costs kernel time only while its SIMD has nothing else to do. In a
kernel that issues MFMAs the resource is the matrix pipe: the cycles of the barrier waits during
which no wave of the SIMD issued an MFMA (`waves.peers.barrier_wait.mfma_idle_cycles`) are what
an overlapped schedule (a second wave group's MFMAs under this group's load/LDS phase: ping-pong)
or a shorter straggler path can recover, and no more. Without MFMAs it is the barrier waits
during which no wave of the SIMD issued anything (`non_hidden_cycles`). As a share of the waves'
lifetime this is the high end of every barrier finding's gain (BAR-dominated, BAR-straggler-waits,
BAR-ping-pong-phase); the low end is the rule's prior fraction of it. Without wave files the stall
prior stays (`findings.hiding_gain`, converted by plan/gains.py with the wider prior).
"""

from __future__ import annotations

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Gain

# the one re-timed change of a barrier-family finding (docs/calibration.md, section 3)
EVIDENCE = ("re-timed: M128 hack0→hack1 (ping-pong on) removed 13.0 % of kernel time where this "
            "share was 20.0 % (docs/calibration.md)")


def exposed_barrier_wait(ctx: PlanContext) -> tuple[float, str] | None:
    """(share of the waves' lifetime the barrier waits left the SIMD's bound pipe idle, what that
    pipe is), None without wave files or barrier waits."""
    waves = ctx.waves or {}
    peers = waves.get("peers") or {}
    wait = peers.get("barrier_wait")
    mean = ((waves.get("per_wave") or {}).get("duration") or {}).get("mean")
    if not wait or not mean or not waves.get("waves"):
        return None
    lifetime = mean * waves["waves"]
    if ((peers.get("pipe_busy") or {}).get("MFMA") or 0) > 0:
        return min(1.0, wait["mfma_idle_cycles"] / lifetime), "the SIMD's matrix pipe was idle"
    return min(1.0, wait["non_hidden_cycles"] / lifetime), "no wave of the SIMD issued anything"


def barrier_gain(ctx: PlanContext, fallback: Gain, low_fraction: float, fix: str) -> Gain:
    """The barrier finding's gain: `low_fraction`–100 % of the exposed barrier wait (a share of
    the waves' time) with wave files, else `fallback` (the stall prior)."""
    exposed = exposed_barrier_wait(ctx)
    if exposed is None:
        return fallback
    share, idle = exposed
    return Gain(
        round(share * low_fraction, 4), round(share, 4),
        f"wave timelines: barrier waits during which {idle} hold {share:.1%} of the waves' "
        f"lifetime — what {fix} can recover at most; the low end assumes {low_fraction:.0%} of "
        f"it (prior); {EVIDENCE}",
        unit="wave_time",
    )
