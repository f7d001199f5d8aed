"""Finding from the work split across the traced waves: most waves exit at the work-range check.

LAUNCH-work-distribution: the empty waves' cost belongs to the partition that gave their
workgroups nothing, not to the prologue they ran (docs/summary-json.md, rule catalogue)."""

from __future__ import annotations

from dataclasses import replace

from kerneltrace.analysis.exit_gate import exit_gate
from kerneltrace.analysis.hotspots import stall_rate
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Evidence, Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import work_distribution_bound
from kerneltrace.thresholds import VerdictThresholds

RULE = "LAUNCH-work-distribution"


def _notes(gate: dict, split: dict, empty: dict[int, dict]) -> dict[int, str]:
    leaving = f"{split['empty_waves']} of {split['waves']} traced waves leave here"
    notes = {gate["branch"]: f"the exit branch: {leaving}"}
    if gate["condition"] is not None:
        notes[gate["condition"]] = "decides the exit (the work range is empty)"
    for index in gate["producers"]:
        notes[index] = "reads the work range the exit is decided on"
    for index in gate["waits"]:
        cycles = (empty.get(index) or {}).get("stall_cycles") or 0
        notes[index] = f"waits for the work range ({cycles:,} stall cycles in the empty waves)"
    return notes


def _whole_trace(evidence: Evidence, ins: dict, empty: dict | None) -> Evidence:
    """Every wave runs the gate: its rows show the whole trace's cycles (busy + empty waves)."""
    stall = (ins.get("stall_cycles") or 0) + ((empty or {}).get("stall_cycles") or 0)
    latency = (ins.get("latency_cycles") or 0) + ((empty or {}).get("latency_cycles") or 0)
    rate = stall_rate(stall, latency)
    return replace(evidence, stall_cycles=stall if ins.get("stall_cycles") is not None else None,
                   stall_rate=None if rate is None else round(rate, 4))


@plan_rule(id=RULE, lever="launch", serves=("launch-bound",), order=8,
           requires=("hotspots", "waves"), thresholds=(VerdictThresholds,))
def work_distribution(ctx: PlanContext) -> list[Finding]:
    """Most traced waves exit at the work-range check: re-partition the work over the workgroups.

    Trigger: a busy view (≥ `coverage.empty_waves_note` of the traced waves empty, wave files
        summing to code.json) with ≥ `verdict.work_split_empty` of the waves empty, the longest
        busy wave ≥ `verdict.work_split_critical` of the traced span and a gain ≥
        `verdict.launch_gain` (the `launch-bound` verdict's work-distribution check)
    Evidence: the exit gate: the branch the empty waves leave at, the compare deciding it, the
        loads of the work range and the waits for them (analysis/exit_gate.py), with the whole
        trace's cycles (every wave runs them)
    Gain: (1 − busy/resident waves per CU) × the divisible share of a busy wave's life × the
        longest busy wave's share of the kernel time, low end halved; kernel time
        (docs/calibration.md §Work distribution)
    Fix: give every workgroup a share of the work (split the work items over more workgroups, or
        size the grid by the work), then the busy waves' own setup and loads"""
    gain = work_distribution_bound(ctx.hotspots, ctx.thresholds.of(VerdictThresholds))
    if gain is None:
        return []
    low, high, reason, why = gain.low, gain.high, gain.reason, gain.basis
    split = ctx.waves["work_split"]
    empty = {row["index"]: row for row in split["empty_rows"]}
    gate = exit_gate(ctx.program_order, set(empty))
    evidence = []
    gate_text = ""
    if gate is not None:
        notes = _notes(gate, split, empty)
        evidence = [_whole_trace(ctx.evidence(ctx.instructions[index], notes.get(index, "")),
                                 ctx.instructions[index], empty.get(index))
                    for index in gate["rows"] if index in ctx.instructions]
        gate_text = (f" They leave at the branch #{gate['branch']}"
                     + (f" after the compare #{gate['condition']}" if gate["condition"] is not None
                        else "")
                     + (f" on the work range loaded by #{', #'.join(map(str, gate['producers']))}"
                        if gate["producers"] else "") + ".")
    empty_stall = sum(row["stall_cycles"] for row in split["empty_rows"])
    return [ctx.finding(
        RULE, 0.0, id=RULE, priority="HIGH", scope="kernel", effort="high",
        title=(f"Work distribution: {split['empty_waves']} of {split['waves']} traced waves "
               f"({split['empty_share']:.0%}) exit without work; the {split['busy_waves']} busy "
               "waves set the kernel time"),
        estimated_gain=Gain(low, high, why, unit="kernel_time"),
        root_cause=(f"{reason}. Each empty wave ran at most {split['empty_max_instructions']} "
                    f"instructions (~{split['empty_mean_cycles']:,.0f} cycles: the kernel-"
                    f"argument setup and the work-range check, {empty_stall:,} stall cycles in "
                    f"all) against ~{split['busy_mean_cycles']:,.0f} cycles for a busy wave."
                    f"{gate_text} Their own cost is small (a slot and a launch each); what costs "
                    "is that the work runs on few of the resident slots. The rows below the "
                    "verdict are costed on the busy waves alone."),
        fix=("Re-partition the work so every workgroup gets a share: split the work items "
             "(sequence blocks, K, tokens) over more workgroups, or size the grid by the actual "
             "work instead of its upper bound; check the metadata/partition that feeds the "
             "compare. Then the busy waves' own setup and loads (the findings below)."),
        evidence=evidence,
    )]
