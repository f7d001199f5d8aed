"""How much of a wave's life more, smaller workgroups would shorten: the divisible part of the work.

The launch gain (under-filled GPU, tail round) assumes the work of a wave can be spread over more
waves. That holds for a loop (fewer iterations per wave) and for unrolled repeated stages (a
fully unrolled K loop: split-K halves its load→wait→MFMA stages), not for a straight-line wave
that issues one small batch of loads and waits on a chain of round trips (kernel arguments,
then its data, then its stores): fewer elements per wave leave the chain as long as it was. For
such a wave — no iterating loop, no MFMA, at most `VerdictThresholds.chain_max_loads` vector
loads per wave — only its issue cycles (hits × the issue cycles of an instruction) divide (review of fused_rope_cache,
issue 21 point 4b). Nor for a wave that never entered the kernel's loop (every loop header 0
hits): it already ran the smallest unit of work the partition gives.
"""

from __future__ import annotations

from kerneltrace.isa import classify as isa


def divisible_share(doc: dict, structure: dict, waves: int | None, chain_max_loads: int,
                    issue_cycles: int) -> tuple[float, str]:
    """(share of a wave's life that divides across more waves, why) — 1.0 unless the wave is one
    latency chain; `issue_cycles`: what one instruction occupies its issue slot."""
    flow = structure.get("control_flow") or {}
    # `iterates`: the hotspot stage judged it with the structure thresholds it records
    if any(loop.get("iterates") for loop in flow.get("loops") or []):
        return 1.0, ""
    executed = [ins for ins in doc.get("instructions") or [] if (ins.get("hits") or 0) > 0]
    loops = flow.get("loops") or []
    # the kernel has a loop, but no traced wave entered it: each wave ran the smallest unit of
    # work its partition gives (one block, no iteration), which more workgroups cannot shorten
    skipped = bool(loops) and all(loop.get("header_hits") == 0 for loop in loops)
    if not skipped:
        if not waves or any(ins.get("type") == isa.MFMA for ins in executed):
            return 1.0, ""
        loads = sum(ins.get("hits") or 0 for ins in executed if ins.get("type") == isa.VMEM_LOAD)
        if loads / waves > chain_max_loads:
            return 1.0, ""
    lifetime = sum((ins.get("latency_cycles") or 0) + (ins.get("idle_cycles") or 0)
                   for ins in executed)
    if not lifetime:
        return 1.0, ""
    issued = sum(min(ins.get("latency_cycles") or 0, (ins.get("hits") or 0) * issue_cycles)
                 for ins in executed)
    issue = round(issued / lifetime, 4)
    if skipped:
        spans = ", ".join(f"rows {loop.get('first_index')}–{loop.get('last_index')}" for loop in loops[:3])
        return issue, (f"no traced wave entered the kernel's loop ({spans}): each wave ran its "
                       "smallest unit of work, so more workgroups shorten only its issue cycles "
                       f"({issue:.0%} of its life)")
    return issue, (f"each wave is one latency chain ({loads / waves:.0f} vector loads, no loop): "
                   f"splitting it shortens only its issue cycles ({issue:.0%} of its life)")
