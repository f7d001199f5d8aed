"""Build the `kerneltrace.summary/1` document: per kernel, per dispatch, findings in priority order."""

from __future__ import annotations

from kerneltrace import __version__
from kerneltrace.analysis.costs import cost_summary
from kerneltrace.analysis.cu_usage import judged_usage, usage_bound
from kerneltrace.analysis.dispatch_labels import dispatch_labels
from kerneltrace.analysis.launch import launch_judgement
from kerneltrace.compare.gate import parse_thresholds
from kerneltrace.document.busy_view import busy_view
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.coverage import capture_notes, work_split_notes
from kerneltrace.plan.gains import group_gain
from kerneltrace.plan.l2_metrics import l2_metrics
from kerneltrace.plan.occupancy_check import observed as observed_occupancy
from kerneltrace.plan.pipeline import run_all
from kerneltrace.plan.rules import DEFAULT_TABLE
from kerneltrace.plan.verdict import doc_structure
from kerneltrace.readers.codejson import CodeFormat
from kerneltrace.thresholds import (
    DEFAULT_COMPARE,
    CoverageThresholds,
    LaunchBoundThresholds,
    StructureThresholds,
    Table,
    describe,
    one_concern,
)

SCHEMA = "kerneltrace.summary/1"
SYNTHETIC_ROOT = "/synthetic/"  # source root used by kerneltrace.synth (docs/synthetic-captures.md)


def is_synthetic(hotspot_doc: dict) -> bool:
    """True when the capture came from kerneltrace.synth (the document or its metadata says so)."""
    meta = hotspot_doc.get("metadata") or {}
    if hotspot_doc.get("synthetic") or (isinstance(meta, dict) and meta.get("synthetic")):
        return True
    # the generator's documented marker: every source path lives under /synthetic/
    locations = [line.get("location") or "" for line in hotspot_doc.get("source_lines") or []]
    mapped = [loc for loc in locations if loc]
    return bool(mapped) and all(loc.startswith(SYNTHETIC_ROOT) for loc in mapped)


def l2_for(kernel: str | None, l2_docs: list[dict]) -> dict | None:
    """The first L2 document that has metrics for this kernel."""
    return next((doc for doc in l2_docs if l2_metrics(doc, kernel)), None)


def with_costs(hotspot_doc: dict) -> dict:
    """The document with its `costs` object (older documents lack it; the input is not changed)."""
    if hotspot_doc.get("costs"):
        return hotspot_doc
    waves = (hotspot_doc.get("waves") or {}).get("waves") or None
    return {**hotspot_doc, "costs": cost_summary(hotspot_doc.get("instructions") or [], waves)}


def with_launch_judged(hotspot_doc: dict, limits: LaunchBoundThresholds) -> dict:
    """The document with `structure.launch` judged by the launch-bound thresholds in use (the
    hotspot stage judged it with the defaults; `plan.thresholds.launch_bound` may differ)."""
    structure = doc_structure(hotspot_doc)
    launch, usage = structure.get("launch"), structure.get("cu_usage")
    if launch:
        bound, reason = launch_judgement(launch, limits)
        return {**hotspot_doc, "structure": {**structure, "launch": {
            **launch, "launch_bound": bound, "reason": reason}}}
    if usage:  # no launch facts: the occupancy.json observation, judged again the same way
        # (every field: the launch-bound share and the last round's levels both use `limits`);
        # a document without the raw observation keeps its judgement but for the bound
        judged = judged_usage(hotspot_doc.get("cu_usage"), usage.get("cus_per_se"), limits)
        usage = judged.to_dict() if judged else {
            **usage, "launch_bound": usage_bound(usage["busy_share"], limits)}
        return {**hotspot_doc, "structure": {**structure, "cu_usage": usage}}
    return hotspot_doc


# Notes about the capture, not about the kernel (issue 21.2): shown before the findings, never ranked.
CAPTURE_QUALITY_RULES = frozenset({"SRC-no-source-mapping"})


def capture_quality(doc: dict, findings: list) -> list[dict]:
    """What limits this capture's evidence: missing line tables, no stall column, no wave
    files, an uncertain arch, truncation — each {kind, note}."""
    notes = [{"kind": f.rule, "note": f"{f.title}. {f.fix}"} for f in findings
             if f.rule in CAPTURE_QUALITY_RULES]
    if doc.get("format") == CodeFormat.LEGACY:
        notes.append({"kind": "no-stall-column", "note": "rocprofv2 legacy code.json: no stall or "
                      "idle columns; instructions are ranked by latency and waits by their latency"})
    if doc.get("format") != CodeFormat.PCSAMPLING and not doc.get("waves"):
        notes.append({"kind": "no-wave-files", "note": "no wave-level analysis (no wave files, or "
                      "run without --waves): loops and waits come from code.json alone, kernel-"
                      "time gains carry the wider prior (docs/calibration.md), and the work split "
                      "cannot be judged (whether many waves exit without work: their prologue "
                      "then sits in the totals with the busy waves' work)"})
    arch = doc.get("arch") or {}
    if not arch.get("name") or not arch.get("certain", True):
        notes.append({"kind": "arch-uncertain", "note": f"{arch_wording(arch)}: pass --arch or "
                      "--agent-info for exact limits, the clock, the CU count and the HBM peak"})
    notes += [{"kind": "incomplete-capture", "note": w} for w in doc.get("capture_warnings") or []]
    return notes


def arch_wording(arch: dict) -> str:
    """'architecture gfx942 (uncertain, from isa)' or, without a name, the candidates left."""
    if arch.get("name"):
        return f"architecture {arch['name']} (uncertain, from {arch.get('source')})"
    candidates = arch.get("candidates") or []
    return "architecture unknown" + (f" (candidates: {', '.join(candidates)})" if candidates else "")


def _traffic(hotspot_doc: dict, traffic: dict | None) -> dict | None:
    """The structure's request traffic plus the GPU product whose HBM peak it is held against
    (MI300X and MI325X are both gfx942 with different peaks: the plan says which one it used)."""
    if not traffic:
        return traffic
    agent = (hotspot_doc.get("metadata") or {}).get("agent") or {}
    product = agent.get("product_name")
    arch = (hotspot_doc.get("arch") or {}).get("name")
    if not product and traffic.get("peak_gbps") and arch:
        product = f"{arch} (every listed product; no agent_info)"
    return {**traffic, "peak_product": product}


def dispatch_entry(hotspot_doc: dict, l2_doc: dict | None, thresholds: Table = DEFAULT_TABLE) -> dict:
    hotspot_doc = with_launch_judged(with_costs(hotspot_doc), thresholds.of(LaunchBoundThresholds))
    whole = hotspot_doc
    # many traced waves did no work: the kernel's work is ranked on the busy waves (issue 21)
    hotspot_doc = busy_view(hotspot_doc, thresholds.of(CoverageThresholds).empty_waves_note) or hotspot_doc
    ctx = PlanContext(hotspot_doc, l2_doc, thresholds=thresholds)
    findings = run_all(ctx)
    entry = {
        "bottleneck": ctx.verdict.to_dict(),
        "gain_bound": round(group_gain(findings), 4),
        "gain_bound_kernel_time": round(group_gain(findings, "kernel_time"), 4),
        "dispatch_dir": hotspot_doc.get("dispatch_dir"),
        "dispatch": hotspot_doc.get("dispatch"),
        "arch": hotspot_doc.get("arch"),
        "format": hotspot_doc.get("format"),
        "synthetic": is_synthetic(hotspot_doc),
        "totals": hotspot_doc.get("totals"),
        "stall_by_type": hotspot_doc.get("stall_by_type") or [],
        "occupancy": hotspot_doc.get("occupancy"),
        "source_mapping": hotspot_doc.get("source_mapping"),
        "costs": hotspot_doc.get("costs"),
        "capture_warnings": list(hotspot_doc.get("capture_warnings") or []),
        # the capture's own limits first: whether the traced waves stand for the dispatch
        "capture_quality": (capture_notes(ctx.coverage)
                            + work_split_notes(hotspot_doc, thresholds.of(CoverageThresholds))
                            + capture_quality(hotspot_doc, findings)),
        "launch": ctx.structure.get("launch"),
        "launch_unmatched": ctx.structure.get("launch_unmatched"),
        "cu_usage": ctx.structure.get("cu_usage"),
        "trace_coverage": ctx.coverage.to_dict() if ctx.coverage else None,
        "occupancy_observed": observed_occupancy(hotspot_doc),
        "traffic": _traffic(whole, ctx.structure.get("traffic")),
        "bandwidth": _bandwidth(whole, ctx.structure),
        "findings": [finding.to_dict() for finding in findings],
    }
    metrics = ctx.l2_metrics
    if metrics:
        entry["l2"] = metrics
    return entry


def structure_used(hotspot_docs: list[dict]) -> list[tuple[str, StructureThresholds]]:
    """(dispatch_dir, the structure thresholds its hotspot document records) per document (the
    defaults for one written before documents recorded them)."""
    return [(str(doc.get("dispatch_dir")), one_concern(
        StructureThresholds, {"structure": (doc.get("thresholds") or {}).get("structure") or {}},
        f"{doc.get('dispatch_dir')}: thresholds")) for doc in hotspot_docs]


def thresholds_rows(table: Table, hotspot_docs: list[dict], gate: dict | None) -> list[dict]:
    """summary.json's `thresholds`: every concern with the values in use — the plan's own, the
    structure's the hotspot documents record (the first one's; a field whose value differs
    between documents lists them all in `by_dispatch`), the compare's and the gate's (what a
    compare of this run applies: config `plan.thresholds.compare`, `regression_thresholds`)."""
    used = structure_used(hotspot_docs)
    first = used[0][1] if used else StructureThresholds()
    rows = Table({**table.concerns, "structure": first}).describe()
    for row in rows:
        values = {where: getattr(limits, row["name"]) for where, limits in used
                  if row["concern"] == "structure"}
        if len(set(values.values())) > 1:
            row["by_dispatch"] = values
    return rows + describe("gate", parse_thresholds(gate, where="regression_thresholds"))


def _bandwidth(doc: dict, structure: dict) -> dict | None:
    """The capture's own request-rate estimate (analysis/bandwidth.py), or None."""
    from kerneltrace.analysis.bandwidth import bandwidth_estimate

    estimate = bandwidth_estimate(doc, structure)
    return estimate.to_dict() if estimate is not None else None


def build_summary(hotspot_docs: list[dict], l2_docs: list[dict], run: str | None = None,
                  dropped: list[dict] | None = None, thresholds: dict | None = None) -> dict:
    """Group dispatches by kernel (first-seen order) and run every rule on each dispatch.

    ``dropped``: dispatch dirs left out of the plan, each ``{dispatch_dir, stage, reason}``
    (stage "discovery" or "analysis"), listed in the summary and the plan; ``thresholds``: the
    config's ``plan.thresholds:`` overrides (kerneltrace/thresholds.py) but the structure's
    (applied by the hotspot stage), and ``gate``: the config's ``regression_thresholds``
    (listed, as the compare's are)."""
    overrides = dict(thresholds or {})
    gate = overrides.pop("gate", None)
    table = Table({**DEFAULT_TABLE.concerns, "compare": DEFAULT_COMPARE}).override(overrides)
    kernels: dict[str, dict] = {}
    for doc, label in zip(hotspot_docs, dispatch_labels(hotspot_docs), strict=True):
        name = doc.get("kernel") or "(unknown kernel)"
        kernel = kernels.setdefault(name, {"name": name, "dispatches": []})
        entry = dispatch_entry(doc, l2_for(doc.get("kernel"), l2_docs), table)
        entry["dispatch_label"] = label  # tells apart dispatches sharing kernel and id (from the path)
        kernel["dispatches"].append(entry)
    return {
        "schema": SCHEMA,
        "tool": {"name": "kernel-trace-analysis", "version": __version__},
        "run": run,
        "synthetic": any(is_synthetic(doc) for doc in hotspot_docs),
        # every truncated or partial capture of the run, so nobody reads a plan without knowing
        "capture_warnings": [{"kernel": kernel["name"], "dispatch_dir": entry["dispatch_dir"], "warning": warning}
                             for kernel in kernels.values() for entry in kernel["dispatches"]
                             for warning in entry["capture_warnings"]],
        "kernels": list(kernels.values()),
        "dropped": list(dropped or []),
        # every threshold in use: value, tag, source, what it decides
        "thresholds": thresholds_rows(table, hotspot_docs, gate),
    }
