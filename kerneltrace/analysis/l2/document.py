"""L2/HBM analysis of one kernel over PMC runs: assembles the kerneltrace.l2/1 document.

Formulas: docs/pmc-counters.md §3; decision tree: §5. The parts live in
inputs (kernel, run pairing, arch, peak), metrics (per-dispatch metrics, aggregates) and
verdicts (decision tree); the text report is kerneltrace.render.l2.
"""

from __future__ import annotations

from collections.abc import Sequence

from kerneltrace import __version__
from kerneltrace.analysis.l2.decision_tree import verdicts
from kerneltrace.analysis.l2.inputs import (
    match_runs,
    resolve_peak,
    resolve_run_arch,
    select_run_kernel,
)
from kerneltrace.analysis.l2.metrics import (
    aggregate_dispatches,
    counter_medians,
    dispatch_metrics,
    ratio_of_sums,
)
from kerneltrace.errors import InputError
from kerneltrace.readers.counter_run import CounterRun

SCHEMA = "kerneltrace.l2/1"


def analyze(
    runs: Sequence[CounterRun],
    *,
    kernel: str | None = None,
    arch: str | None = None,
    ideal_gb: float | None = None,
    peak_gbps: float | None = None,
) -> dict:
    """The kerneltrace.l2/1 document for one kernel over one or more runs."""
    if not runs:
        raise InputError("no PMC input", "inputs", "pass counter CSVs, a workload dir or a rocpd .db")
    name = select_run_kernel(runs, kernel)
    matched, warnings = match_runs(runs, name)
    arch_choice, arch_warnings = resolve_run_arch(arch, runs)
    warnings.extend(arch_warnings)
    for run in runs:
        warnings.extend(f"{run.source}: {note}" for note in run.notes)
    peak = resolve_peak(peak_gbps, runs, arch_choice)
    ideal_bytes = ideal_gb * 1e9 if ideal_gb else None
    missing: dict[str, set[str]] = {}
    implausible: dict[str, set[str]] = {}
    dispatches = [
        dispatch_metrics(m, runs, arch_choice, ideal_bytes, peak["gbps"], missing, warnings, implausible)
        for m in matched
    ]
    if sum(1 for d in dispatches if d["duration_ns"] is None) and dispatches:
        warnings.append("some dispatches have no Start/End timestamps: no bandwidth for them")
    aggregate, spread = aggregate_dispatches(dispatches)
    unavailable = [{"metric": metric, "collect": sorted(counters)} for metric, counters in missing.items() if counters]
    for metric, bad in implausible.items():
        reason = "counter values that are counts: " + "; ".join(sorted(bad)[:3])
        unavailable.append({"metric": metric, "collect": [], "needs": reason})
        warnings.append(f"{metric} unavailable: implausible counter value(s) " + "; ".join(sorted(bad)[:3]))
    if ideal_bytes is None:
        unavailable.append({"metric": "overfetch", "collect": [], "needs": "--ideal-gb (bytes the kernel must read per dispatch)"})
    if peak["gbps"] is None:
        unavailable.append({"metric": "fraction_of_peak", "collect": [], "needs": peak["reason"]})
    doc = {
        "schema": SCHEMA,
        "tool": {"name": "kernel-trace-analysis", "version": __version__},
        "kernel": name,
        "arch": {"name": arch_choice.name, "formula_family": arch_choice.family, "source": arch_choice.source},
        "inputs": [{"source": run.source, "format": run.format, "run": i,
                    "dispatches": sum(1 for d in run.dispatches if d.kernel == name)}
                   for i, run in enumerate(runs)],
        "matching": "dispatches paired by order within each run (dispatch ids restart per run)",
        "ideal_read_bytes": ideal_bytes,
        "peak": peak,
        "dispatches": dispatches,
        "aggregate": aggregate,
        "spread": spread,
        "ratio_of_sums": ratio_of_sums(dispatches, peak["gbps"]),
        "counter_medians": counter_medians(matched),
        "unavailable": unavailable,
        "warnings": list(dict.fromkeys(warnings)),
    }
    doc["verdicts"] = verdicts(doc)
    return doc
