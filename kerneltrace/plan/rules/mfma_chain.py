"""MFMA dependency chains: per-hit MFMA latency far above its pass latency, with the spacing table."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa import mfma
from kerneltrace.isa.classify import MFMA
from kerneltrace.isa.registers import operands, registers
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.rules._util import is_mfma
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import total_stall
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class MfmaChainThresholds:
    """MFMA-dependency-chain: MFMAs slower per hit than their pass latency."""

    CONCERN = "mfma_chain"
    slow_factor: float = heuristic(2.0, "measured per-hit latency above this many pass "
                                   "latencies means the MFMA waits")
    min_mfma_share: float = heuristic(0.05, "MFMA stall share from which chains are looked for")
    look_back: int = heuristic(24, "instructions before an MFMA searched for its producer")
    hideable: tuple[float, float] = heuristic((0.3, 0.8), "share of the slow MFMAs' stall "
                                              "interleaving independent chains hides")


def _srcs_ab(asm: str) -> set[tuple[str, int]]:
    ops = operands(asm)
    return set().union(*(registers(op) for op in ops[1:3])) if len(ops) >= 3 else set()


@plan_rule(id="MFMA-dependency-chain", lever="compute", serves=("compute-mfma",), order=130,
           thresholds=(MfmaChainThresholds,))
def mfma_dependency_chain(ctx: PlanContext) -> list[Finding]:
    """MFMAs run far slower than their pass latency (dependent chains).

    MFMAs that wait on a previous MFMA's result (SrcA/SrcB) closer than the required spacing.

    Trigger: MFMA stall ≥ 5 %; MFMAs with per-hit latency ≥ 2× their pass latency (`isa/mfma.py`);
        notes a SrcA/SrcB read of an earlier MFMA result closer than `xdl_read_spacing`
    Evidence: slow MFMAs with cycles/hit vs pass latency
    Gain: 30–80 % of their stall
    Fix: interleave independent MFMAs (other tiles, split-K accumulators) between producer and
        consumer"""
    limits = ctx.thresholds.of(MfmaChainThresholds)
    share = ctx.type_share(MFMA)
    if share < limits.min_mfma_share:
        return []
    slow = []
    for ins in ctx.program_order:
        if not is_mfma(ins) or not ins.get("hits") or not ins.get("stall_cycles"):
            continue
        info = mfma.mfma_info(ins["asm"])
        if info is None:
            continue
        per_hit = ins["latency_cycles"] / ins["hits"]
        if per_hit < limits.slow_factor * info.cycles:
            continue
        before, _ = ctx.neighbours(ins["index"], limits.look_back, 0)
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
        ctx.finding(
            "MFMA-dependency-chain", finding_share, location=location,
            title=f"{len(slow)} MFMA(s) run at ≥{limits.slow_factor:.0f}× their pass latency",
            estimated_gain=hiding_gain(finding_share, *limits.hideable, "the MFMA stall"),
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
