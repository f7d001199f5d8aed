"""FILL-write-only-kernel: a kernel that writes memory and reads none (a fill, memset, index generator).

Its time is its stores and its launch; the cheapest fix is usually not to run it (the buffer
need not be initialised) or to make the values where they are consumed, a change above the
kernel that no in-wave finding can state."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa.classify import VMEM_LOAD, VMEM_STORE
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic

RULE_WRITE_ONLY = "FILL-write-only-kernel"
# verdicts under which a write-only kernel's stores are its cost (not its arithmetic: an RNG that
# only writes but is VALU-bound is a compute kernel)
STORE_BOUND_VERDICTS = frozenset({"launch-bound", "memory-bandwidth", "memory-streaming",
                                  "memory-latency", "tail", "prologue", "mixed"})


@dataclass(frozen=True)
class WriteOnlyThresholds:
    """FILL-write-only-kernel."""

    CONCERN = "write_only"
    removable: tuple[float, float] = heuristic(
        (0.3, 1.0), "kernel-time share that not running a write-only kernel saves: all of it "
        "when every element is overwritten before it is read (allocate without initialising), "
        "less when its values move into the kernel that consumes them")


def executed_stores(ctx: PlanContext) -> list[dict]:
    """The executed vector-memory stores, most latency first."""
    return sorted((ins for ins in ctx.program_order
                   if ins.get("type") == VMEM_STORE and (ins.get("hits") or 0) > 0),
                  key=lambda ins: -(ins.get("latency_cycles") or 0))


@plan_rule(id=RULE_WRITE_ONLY, lever="launch", serves=("launch-bound",), order=11,
           thresholds=(WriteOnlyThresholds,))
def write_only_kernel(ctx: PlanContext) -> list[Finding]:
    """The kernel writes memory and reads none: a fill, a memset or an index generator.

    Trigger: ≥ 1 executed vector-memory store, no executed vector-memory load, and a verdict
        under which the stores are the cost (launch-bound, memory, tail, prologue, mixed; not a
        compute or issue bound: an RNG that only writes is a compute kernel)
    Evidence: the executed stores, most latency first
    Gain: 30–100 % of the kernel time (all of it when the buffer need not be initialised;
        hypothesis)
    Fix: do not run it when every element is overwritten before it is read (allocate without
        initialising, `torch.empty` for `torch.zeros`); else produce the values in the kernel
        that consumes them; if it stays, wider stores and more per lane"""
    if ctx.verdict.kind not in STORE_BOUND_VERDICTS:
        return []
    stores = executed_stores(ctx)
    if not stores or any(ins.get("type") == VMEM_LOAD and (ins.get("hits") or 0) > 0
                         for ins in ctx.program_order):
        return []
    low, high = ctx.thresholds.of(WriteOnlyThresholds).removable
    return [ctx.finding(
        RULE_WRITE_ONLY, 0.0, id=RULE_WRITE_ONLY, priority="HIGH", scope="kernel", effort="medium",
        title=(f"Write-only kernel: {len(stores)} executed store"
               f"{'' if len(stores) == 1 else 's'} and no load, a fill, memset or index "
               "generator: first check whether it needs to run"),
        estimated_gain=Gain(low, high, "not running a kernel saves all of its time; "
                            f"{low:.0%} when its values must move into their consumer instead "
                            "(hypothesis: whether the buffer needs initialising is the caller's "
                            "knowledge)", unit="kernel_time"),
        root_cause=("The executed instructions store to memory but load nothing from it: the "
                    "kernel writes values made from its arguments and indices (a constant, a "
                    "pattern, an index). Its time is the stores and the launch; no in-kernel "
                    "change beats not writing the buffer."),
        fix=("If every element is overwritten before it is read, drop the initialisation "
             "(allocate without it: `torch.empty` instead of `torch.zeros`/`fill_`, no "
             "`hipMemset` before a kernel that writes every element); else produce the values in "
             "the kernel that first reads them. If the fill must stay: 16-byte stores and several "
             "per lane (a grid-stride loop) so each wave's launch and argument load are paid for "
             "more bytes."),
        evidence=[ctx.evidence(ins, "store: the kernel's only memory work") for ins in stores[:4]],
    )]
