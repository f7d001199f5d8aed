"""Shared helpers of the wave rules: instruction references of the `waves` object, producers, loops."""

from __future__ import annotations

from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Evidence
from kerneltrace.sourceloc import short_location

# What a producer of a given type is, and how to get its latency off the critical path.
PRODUCER_KINDS: dict[str, tuple[str, str]] = {
    isa.VMEM_LOAD: (
        "vector-memory load",
        "Issue these loads earlier — one iteration (or pipeline stage) ahead of their use — so the "
        "work between issue and the `s_waitcnt` covers their latency; when they already are, more "
        "waves per SIMD (or a deeper prefetch) hide the rest.",
    ),
    isa.VMEM_STORE: (
        "vector-memory store",
        "Stores count on `vmcnt` too: a wait for them (before reusing the stored registers, or "
        "at the end of the kernel) exposes the write latency. Write through other registers, "
        "or issue the stores earlier and do independent work before the wait.",
    ),
    isa.SMEM: (
        "scalar load",
        "Hoist the scalar loads (kernel arguments, descriptors, pointers) to the very start and put "
        "independent work (address arithmetic, other loads) between them and their first use.",
    ),
    isa.LDS: (
        "LDS read",
        "Issue the LDS reads for the next step before the current compute and wait only right "
        "before their consumers (group reads first, then MFMAs).",
    ),
}
PRODUCER_DEFAULT = (
    "instruction",
    "Move the producer earlier or independent work between it and the wait.",
)


def wave_waits(ctx: PlanContext) -> list[dict]:
    """The hot waits the wave analysis reports (`waves.waitcnt`)."""
    return list((ctx.waves or {}).get("waitcnt") or [])


def wave_loops(ctx: PlanContext) -> list[dict]:
    """The loops the traced waves ran (`waves.loops`), hottest first."""
    return list((ctx.waves or {}).get("loops") or [])


def ref_location(ctx: PlanContext, ref: dict) -> str | None:
    """The hotspot document's line for an instruction reference, else its own `source`."""
    line = ctx.line_of.get(ref.get("index"))
    return line["location"] if line else (ref.get("source") or None)


def is_artifact_ref(ctx: PlanContext, ref: dict) -> bool:
    """The reference sits on the kernel-entry or unmapped bucket."""
    line = ctx.line_of.get(ref.get("index"))
    return bool(line and line.get("artifact"))


def type_of(ctx: PlanContext, ref: dict) -> str:
    ins = ctx.instructions.get(ref.get("index"))
    if ins and ins.get("type"):
        return ins["type"]
    return isa.classify(ref.get("asm") or "")


def ref_evidence(ctx: PlanContext, ref: dict, note: str) -> Evidence:
    ins = ctx.instructions.get(ref.get("index"))
    if ins is not None:
        return ctx.evidence(ins, note)
    return Evidence(ref_location(ctx, ref), ref.get("index"), ref.get("asm") or "", None, None, note)


def producer_sentence(ctx: PlanContext, wait: dict, producer: dict, here: str | None = None) -> str:
    """'wait #83 `…` is on the vector-memory load `…` (#77, file.py:83): 5,136 of its 5,136 …'."""
    kind = PRODUCER_KINDS.get(type_of(ctx, producer), PRODUCER_DEFAULT)[0]
    location = ref_location(ctx, producer)
    where = short_location(location)
    if is_artifact_ref(ctx, producer):
        where += ", kernel-entry glue"
    elif here is not None and location != here:
        where += ", not this line"
    return (
        f"wait #{wait['index']} `{wait.get('asm') or ''}` is on the {kind} "
        f"`{producer.get('asm') or ''}` (#{producer['index']}, {where}): "
        f"{producer.get('cycles', 0):,} of its {wait.get('stall_cycles', 0):,} stall cycles over "
        f"{producer.get('waits', 0):,} waits"
    )


def loop_of(ctx: PlanContext, index: int | None) -> dict | None:
    """The innermost reported loop containing an instruction row."""
    if index is None:
        return None
    inside = [loop for loop in wave_loops(ctx) if loop["first_index"] <= index <= loop["last_index"]]
    return min(inside, key=lambda loop: loop["last_index"] - loop["first_index"], default=None)


def loop_phrase(loop: dict) -> str:
    """'inside the hot loop (rows a–b, N cycles/iteration, MFMA busy x%)'."""
    busy = loop.get("mfma_busy_fraction")
    busy_text = f", MFMA busy {busy:.0%}" if isinstance(busy, int | float) else ""
    return (
        f"inside the hot loop (rows {loop['first_index']}–{loop['last_index']}, "
        f"{loop['cycles_per_iteration']:,.0f} cycles/iteration{busy_text})"
    )
