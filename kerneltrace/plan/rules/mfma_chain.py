"""MFMA dependency chains: per-hit MFMA latency far above its pass latency, with the spacing table."""

from __future__ import annotations

from kerneltrace.isa import mfma
from kerneltrace.isa.classify import MFMA
from kerneltrace.isa.registers import operands, registers
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules._util import is_mfma
from kerneltrace.plan.verdict import total_stall

SLOW_FACTOR = 2.0  # measured per-hit latency above this many pass latencies means waiting
MIN_MFMA_SHARE = 0.05
LOOKBACK = 24


def _srcs_ab(asm: str) -> set[tuple[str, int]]:
    ops = operands(asm)
    return set().union(*(registers(op) for op in ops[1:3])) if len(ops) >= 3 else set()


def mfma_dependency_chain(ctx: PlanContext) -> list[Finding]:
    """MFMAs that wait on a previous MFMA's result (SrcA/SrcB) closer than the required spacing."""
    share = ctx.type_share(MFMA)
    if share < MIN_MFMA_SHARE:
        return []
    slow = []
    for ins in ctx.program_order:
        if not is_mfma(ins) or not ins.get("hits") or not ins.get("stall_cycles"):
            continue
        info = mfma.mfma_info(ins["asm"])
        if info is None:
            continue
        per_hit = ins["latency_cycles"] / ins["hits"]
        if per_hit < SLOW_FACTOR * info.cycles:
            continue
        before, _ = ctx.neighbours(ins["index"], LOOKBACK, 0)
        sources = _srcs_ab(ins["asm"])
        note = f"{per_hit:.0f} cycles/hit vs pass latency {info.cycles}"
        for gap, producer in enumerate(reversed(before)):
            written = (
                registers(operands(producer["asm"])[0]) if operands(producer["asm"]) else set()
            )
            if is_mfma(producer) and written & sources:
                producer_info = mfma.mfma_info(producer["asm"])
                needed = mfma.xdl_read_spacing(producer_info.cycles) if producer_info else None
                if needed is not None and gap < needed:
                    note += (
                        f"; reads the result of MFMA #{producer['index']} after {gap} "
                        f"instruction(s), needs {needed}"
                    )
                break
        slow.append((ins, note))
    if not slow:
        return []
    slow.sort(key=lambda pair: -(pair[0].get("stall_cycles") or 0))
    finding_share = ctx.share(total_stall([ins for ins, _ in slow]))
    evidence = [ctx.evidence(ins, note) for ins, note in slow[:6]]
    location = ctx.user_location(evidence)
    chained = any("needs" in note for _, note in slow)
    return [
        Finding.for_share(
            "MFMA-dependency-chain", location, finding_share,
            title=f"{len(slow)} MFMA(s) run at ≥{SLOW_FACTOR:.0f}× their pass latency",
            estimated_gain=hiding_gain(finding_share, 0.3, 0.8, "the MFMA stall"),
            root_cause=(
                (
                    "Dependent MFMAs read a previous MFMA's result as SrcA/SrcB before the required "
                    "spacing (no forwarding on those operands). "
                    if chained
                    else "MFMAs wait on operands, a dependency or issue contention. "
                )
                + "Back-to-back accumulation into the same vDst (SrcC) is forwarded and is fine."
            ),
            fix=(
                "Interleave independent MFMAs (other output tiles, or split-K accumulators) between "
                "a producer and its consumer so the required spacing is met; make sure operands "
                "come from registers loaded well ahead."
            ),
            schematic="acc0 = mfma(a0, b0, acc0); acc1 = mfma(a1, b1, acc1)   # alternate chains",
            evidence=evidence,
            effort="medium",
        )
    ]
