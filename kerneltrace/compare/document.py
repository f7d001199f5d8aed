"""Before/after comparison of two hotspot (or summary) documents → kerneltrace.compare/1.

The parts: values (numbers, traced waves), align (instruction alignment),
lines (source lines, hotspot shifts), verdict (thresholds, checks, verdict).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kerneltrace.compare.align import (
    compare_instructions,
)
from kerneltrace.compare.estimate import estimate_time_change, time_verdict, unavailable
from kerneltrace.compare.gate import (
    DEFAULT_THRESHOLDS,
    Thresholds,
    checks_fired,
    verdict_of,
)
from kerneltrace.compare.lines import compare_lines, hotspot_changes
from kerneltrace.compare.values import (
    delta,
    mapped_fraction,
    num,
    out_of_range,
    relative,
    traced_waves,
)
from kerneltrace.compare.work import different_work, per_unit_of_work, work_per_wave
from kerneltrace.errors import InputError
from kerneltrace.thresholds import DEFAULT_COMPARE, CompareThresholds, values_of

NOT_COMPARABLE = "not-comparable"

SCHEMA = "kerneltrace.compare/1"
TOTAL_METRICS = ("stall_cycles", "latency_cycles", "idle_cycles", "hits", "executed_instructions")
# Totals that grow with the number of traced waves (and so are normalized per wave).
PER_WAVE_METRICS = ("stall_cycles", "latency_cycles", "idle_cycles", "hits")


def _check_hotspot_doc(doc: Any, side: str) -> None:
    if not isinstance(doc, Mapping):
        raise InputError("is not a JSON object", side, "pass a kerneltrace.hotspots document")
    schema = str(doc.get("schema", ""))
    if not schema.startswith("kerneltrace.hotspots/"):
        raise InputError(f"schema '{schema}' is not a hotspot document", side,
                         "pass the JSON written by scripts/hotspot_analyzer.py --json")
    if not isinstance(doc.get("totals"), Mapping) or not isinstance(doc.get("instructions"), list):
        raise InputError("hotspot document lacks 'totals' or 'instructions'", side,
                         "re-run scripts/hotspot_analyzer.py to regenerate it")


def compare(before: Mapping[str, Any], after: Mapping[str, Any],
            thresholds: Thresholds | None = None, *, max_items: int = 50,
            l2_before: Mapping[str, Any] | None = None,
            l2_after: Mapping[str, Any] | None = None,
            limits: CompareThresholds = DEFAULT_COMPARE) -> dict[str, Any]:
    """Compare two hotspot documents (one kernel dispatch each) → kerneltrace.compare/1;
    `thresholds`: the gate's, `limits`: the compare's work checks."""
    th = thresholds or DEFAULT_THRESHOLDS
    _check_hotspot_doc(before, "BEFORE")
    _check_hotspot_doc(after, "AFTER")
    notes: list[str] = []
    refusals = refusal_reasons(before, after)

    waves_before, waves_source_before = traced_waves(before)
    waves_after, waves_source_after = traced_waves(after)
    if waves_before and waves_after:
        scale_before, scale_after = float(waves_before), float(waves_after)
        basis = "per_wave"
        if waves_before != waves_after:
            notes.append(f"traced waves differ ({waves_before} vs {waves_after}): cycle sums are "
                         "compared per traced wave")
    else:
        scale_before = scale_after = 1.0
        basis = "none"
        notes.append("traced wave count unknown: raw sums compared without normalization")

    totals_before, totals_after = before["totals"], after["totals"]
    totals = {}
    for metric in TOTAL_METRICS:
        per_wave = metric in PER_WAVE_METRICS
        totals[metric] = delta(num(totals_before.get(metric)), num(totals_after.get(metric)),
                               scale_before if per_wave else 1.0,
                               scale_after if per_wave else 1.0)
    total_stall_before_pw = totals["stall_cycles"]["before_per_wave"]
    total_stall_after_pw = totals["stall_cycles"]["after_per_wave"]

    by_type = _compare_types(before, after, scale_before, scale_after,
                             total_stall_before_pw, total_stall_after_pw)
    alignment, instr_section, instr_pairs = compare_instructions(
        before, after, scale_before, scale_after, max_items)
    lines = compare_lines(before, after, scale_before, scale_after, instr_pairs, alignment,
                          limits.matched_line_share)
    hotspots = hotspot_changes(lines, instr_pairs, th, total_stall_before_pw,
                               total_stall_after_pw)
    occupancy = _compare_occupancy(before.get("occupancy"), after.get("occupancy"))
    l2 = compare_metrics(l2_before, l2_after)

    checks = checks_fired(th, totals["stall_cycles"], by_type, lines["items"], instr_pairs,
                          total_stall_before_pw)
    identical = bool(instr_section["identical_sequence"] and instr_section["matched"])
    work = work_per_wave(before, after, waves_before, waves_after, limits.work_ratio)
    if refusals:
        estimate = unavailable("; ".join(refusals), th.time_noise)
        verdict, reasons = NOT_COMPARABLE, list(refusals)
    else:
        estimate = estimate_time_change(before, after, waves_before=waves_before,
                                        waves_after=waves_after, identical_stream=identical,
                                        noise=th.time_noise, same_work=work["comparable_per_wave"],
                                        identical_capture=identical and _same_counts(before, after),
                                        limits=limits, work=work)
        verdict, reasons = _verdict(estimate, checks, th, notes)
        if not work["comparable_per_wave"] and estimate["value"] is None:
            # per-wave sums (and the stall checks on them) compare different work: no verdict
            verdict, reasons = NOT_COMPARABLE, [different_work(work) + "; " + estimate["why"]]
        elif not work["comparable_per_wave"]:
            # the stall checks sum per wave: with different work per wave they say nothing
            reasons = [r for r in reasons if not r.startswith("stall check")]
            source = ("the launch (estimated_time_change.launch)" if estimate["basis"] == "launch_rounds"
                      else f"the time per unit of work ({work.get('unit')})")
            notes.append(f"{different_work(work)}: per-wave sums compare different work; the time "
                         f"change comes from {source}")
    work["per_unit_of_work"] = per_unit_of_work(work, estimate.get("components") or {})
    if lines["status"] != "matched" and lines.get("reason"):
        notes.append(lines["reason"])
    if occupancy.get("changed"):
        notes.append(f"occupancy changed: {occupancy['before'].get('waves_per_simd')} → "
                     f"{occupancy['after'].get('waves_per_simd')} waves/SIMD")
    lines_out = dict(lines)
    lines_out["items"] = lines["items"][:max_items] if max_items else lines["items"]
    lines_out["count"] = len(lines["items"])
    return {
        "schema": SCHEMA,
        "kind": "hotspots",
        "verdict": verdict,
        "verdict_basis": "estimated_time_change" if estimate["value"] is not None
        else "stall_checks",
        "reasons": reasons,
        "estimated_time_change": estimate,
        "work_per_wave": work,
        "thresholds": th.as_dict(),
        "compare_thresholds": values_of(limits),
        "checks": checks,
        "before": _side_info(before, waves_before, waves_source_before),
        "after": _side_info(after, waves_after, waves_source_after),
        "normalization": {
            "basis": basis,
            "before_waves": waves_before,
            "after_waves": waves_after,
            "why": "ATT traces a sample of waves (one CU, selected SIMDs) and its size varies "
                   "between captures; cycle and hit sums scale with it, per-wave values do not",
        },
        "totals": totals,
        "stall_by_type": by_type,
        "lines": lines_out,
        "instructions": instr_section,
        "hotspots": hotspots,
        "occupancy": occupancy,
        "l2": l2,
        "notes": notes,
    }


def _arch_name(doc: Mapping[str, Any]) -> str | None:
    arch = doc.get("arch") if isinstance(doc.get("arch"), Mapping) else {}
    name = arch.get("name")
    return name.split(":")[0].lower() if isinstance(name, str) and name else None


def refusal_reasons(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Why two documents cannot be compared at all (different kernels, GPUs, unusable numbers)."""
    reasons = []
    kernel_b, kernel_a = before.get("kernel"), after.get("kernel")
    if kernel_b and kernel_a and kernel_b != kernel_a:
        reasons.append(f"different kernels: '{kernel_b}' vs '{kernel_a}' (compare two builds of "
                       "one kernel)")
    arch_b, arch_a = _arch_name(before), _arch_name(after)
    if arch_b and arch_a and arch_b != arch_a:
        reasons.append(f"different GPUs: {arch_b} vs {arch_a} (cycles and occupancy limits are "
                       "not the same units; compare captures from one GPU)")
    for side, doc in (("BEFORE", before), ("AFTER", after)):
        bad = sorted(out_of_range({key: doc.get(key) for key in ("totals", "instructions", "waves",
                                                                  "stall_by_type", "occupancy")}))
        if bad:
            more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
            reasons.append(f"{side} holds numbers out of any real range (not finite or beyond "
                           f"1e30) at {', '.join(bad[:3])}{more}")
    return reasons


def _counts(doc: Mapping[str, Any]) -> list[tuple]:
    keys = ("asm", "hits", "latency_cycles", "stall_cycles", "idle_cycles")
    return [tuple(item.get(key) for key in keys) for item in doc.get("instructions") or []
            if isinstance(item, Mapping)]


def _same_counts(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """True when two documents measured exactly the same (two copies of one capture)."""
    waves_b = before.get("waves") if isinstance(before.get("waves"), Mapping) else {}
    waves_a = after.get("waves") if isinstance(after.get("waves"), Mapping) else {}
    return (before.get("totals") == after.get("totals") and _counts(before) == _counts(after)
            and waves_b.get("per_wave") == waves_a.get("per_wave")
            and waves_b.get("timing") == waves_a.get("timing"))


def _verdict(estimate: Mapping[str, Any], checks: list[dict], th: Thresholds,
             notes: list[str]) -> tuple[str, list[str]]:
    """The verdict follows the time estimate; fired stall checks are listed as where it moved."""
    timed = time_verdict(estimate, th.time_change)
    stall_verdict, stall_reasons = verdict_of(checks)
    notes.extend(estimate["notes"])
    if timed is None:
        notes.append("no time estimate (" + estimate["why"] + "): the verdict follows the stall "
                     "checks")
        return stall_verdict, stall_reasons
    verdict, reason = timed
    if verdict == "neutral":
        if estimate["basis"] == "identical_capture":
            notes.append("no change: " + estimate["why"])
        return verdict, []
    where = [f"stall check (does not decide the verdict): {r}" for r in stall_reasons]
    return verdict, [reason, *where]


def _side_info(doc: Mapping[str, Any], waves: int | None, waves_source: str) -> dict:
    dispatch = doc.get("dispatch") if isinstance(doc.get("dispatch"), Mapping) else {}
    arch = doc.get("arch") if isinstance(doc.get("arch"), Mapping) else {}
    return {
        "kernel": doc.get("kernel"),
        "dispatch_dir": doc.get("dispatch_dir"),
        "dispatch_id": dispatch.get("id"),
        "format": doc.get("format"),
        "arch": arch.get("name"),
        "traced_waves": waves,
        "traced_waves_source": waves_source,
        "mapped_fraction": mapped_fraction(doc),
    }


def _compare_types(before, after, scale_before, scale_after, total_before_pw, total_after_pw):
    def stalls(doc):
        return {row.get("type"): num(row.get("stall_cycles"))
                for row in doc.get("stall_by_type") or [] if isinstance(row, Mapping)}

    import pandas as pd

    stall_before, stall_after = stalls(before), stalls(after)
    # rows in the type's name order, then ranked by pandas (stable sort: largest per-wave change
    # first, ties stay in name order); each row's numbers come from `delta` on Python floats
    types = sorted(set(stall_before) | set(stall_after), key=str)
    rows = []
    for stall_type in types:
        row = delta(stall_before.get(stall_type, 0.0), stall_after.get(stall_type, 0.0),
                    scale_before, scale_after)
        row["type"] = stall_type
        row["share_before"] = row["before_per_wave"] / total_before_pw if total_before_pw else None
        row["share_after"] = row["after_per_wave"] / total_after_pw if total_after_pw else None
        rows.append(row)
    if not rows:
        return rows
    rank = pd.Series([-abs(r["delta_per_wave"]) for r in rows])
    return [rows[i] for i in rank.sort_values(kind="mergesort").index]


def _compare_occupancy(before: Any, after: Any) -> dict:
    def pick(doc: Any) -> dict:
        if not isinstance(doc, Mapping):
            return {"waves_per_simd": None, "limited_by": None}
        return {"waves_per_simd": doc.get("waves_per_simd"), "limited_by": doc.get("limited_by")}

    side_before, side_after = pick(before), pick(after)
    wb, wa = side_before["waves_per_simd"], side_after["waves_per_simd"]
    known = isinstance(wb, int | float) and isinstance(wa, int | float)
    return {
        "before": side_before,
        "after": side_after,
        "delta_waves_per_simd": (wa - wb) if known else None,
        "changed": bool(known and wa != wb) or side_before["limited_by"] != side_after["limited_by"],
    }


def compare_metrics(before: Mapping[str, Any] | None,
                    after: Mapping[str, Any] | None) -> dict[str, Any]:
    """Numeric metric-by-metric change of two flat metric mappings (e.g. L2 metrics)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return {"status": "unavailable", "metrics": []}
    metrics = []
    for name in sorted(set(before) & set(after)):
        vb, va = before[name], after[name]
        if isinstance(vb, bool) or isinstance(va, bool):
            continue
        if isinstance(vb, int | float) and isinstance(va, int | float):
            metrics.append({"metric": name, "before": vb, "after": va, "delta": va - vb,
                            "relative": relative(float(vb), float(va))})
    return {"status": "compared" if metrics else "unavailable", "metrics": metrics}


def summary_level_doc(kernel: str | None, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A hotspot-shaped document from one summary dispatch entry (no lines, no instructions).

    Used when only a run's summary.json is available: totals, stall types, occupancy and L2
    can still be compared; line and instruction deltas cannot.
    """
    return {
        "schema": "kerneltrace.hotspots/1",
        "summary_level": True,
        "kernel": kernel,
        "dispatch_dir": entry.get("dispatch_dir"),
        "dispatch": entry.get("dispatch") or {},
        "arch": entry.get("arch") or {},
        "format": entry.get("format"),
        "totals": entry.get("totals") or {},
        "stall_by_type": entry.get("stall_by_type") or [],
        "occupancy": entry.get("occupancy"),
        "source_mapping": entry.get("source_mapping") or {},
        "source_lines": [],
        "instructions": [],
        "l2": entry.get("l2"),
    }


def _to_summary_level(doc: Mapping[str, Any]) -> dict[str, Any]:
    return doc if doc.get("summary_level") else summary_level_doc(doc.get("kernel"), doc)


def keyed_dispatches(docs: Iterable[Mapping[str, Any]], prefix: str = "") -> dict[str, Mapping]:
    """Key documents as ``[prefix:]kernel#n`` (n-th dispatch of that kernel by dispatch id).

    Dispatch ids and directory names change between runs; kernel name and order do not.
    """
    def order(doc: Mapping[str, Any]) -> tuple:
        dispatch = doc.get("dispatch") if isinstance(doc.get("dispatch"), Mapping) else {}
        ident = dispatch.get("id")
        return (ident is None, ident if isinstance(ident, int) else 0,
                str(doc.get("dispatch_dir") or ""))

    counts: dict[str, int] = {}
    keyed: dict[str, Mapping] = {}
    for doc in sorted(docs, key=order):
        name = str(doc.get("kernel") or "(unknown kernel)")
        counts[name] = counts.get(name, 0) + 1
        keyed[f"{prefix}{name}#{counts[name]}"] = doc
    return keyed


def _side_labels(before: Mapping[str, Mapping[str, Any]],
                 after: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """{key: {"before": label, "after": label}} (labels from dispatch_labels, "" when unambiguous)."""
    from kerneltrace.analysis.dispatch_labels import dispatch_labels

    out: dict[str, dict[str, str]] = {}
    for side, docs in (("before", before), ("after", after)):
        for key, label in zip(docs, dispatch_labels(list(docs.values())), strict=True):
            out.setdefault(key, {"before": "", "after": ""})[side] = label
    return out


def compare_sets(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]],
                 thresholds: Thresholds | None = None, *, max_items: int = 50,
                 limits: CompareThresholds = DEFAULT_COMPARE) -> dict[str, Any]:
    """Compare keyed dispatches of two runs; the worst matched verdict is the overall verdict."""
    th = thresholds or DEFAULT_THRESHOLDS
    kernels, notes = [], []
    labels = _side_labels(before, after)
    for key in list(before) + [k for k in after if k not in before]:
        if key not in after:
            kernels.append({"key": key, "status": "vanished", "verdict": None, "comparison": None})
            continue
        if key not in before:
            kernels.append({"key": key, "status": "new", "verdict": None, "comparison": None})
            continue
        doc_before, doc_after = before[key], after[key]
        if doc_before.get("summary_level") or doc_after.get("summary_level"):
            doc_before, doc_after = _to_summary_level(doc_before), _to_summary_level(doc_after)
        result = compare(doc_before, doc_after, th, max_items=max_items,
                         l2_before=doc_before.get("l2"), l2_after=doc_after.get("l2"),
                         limits=limits)
        if doc_before.get("summary_level"):
            result["notes"].append("summary-level comparison (no hotspot JSON found): totals, "
                                   "stall types, occupancy and L2 only")
        kernels.append({"key": key, "status": "matched", "verdict": result["verdict"],
                        "comparison": result})
    for entry in kernels:
        # dispatches sharing kernel name and id are told apart by a label from their path
        entry["labels"] = labels[entry["key"]]
    verdicts = [k["verdict"] for k in kernels if k["verdict"]]
    verdict = ("regressed" if "regressed" in verdicts
               else "improved" if "improved" in verdicts else "neutral")
    reasons = [f"{k['key']}: {reason}" for k in kernels if k["comparison"]
               for reason in k["comparison"]["reasons"] if k["verdict"] == verdict != "neutral"]
    for status in ("new", "vanished"):
        keys = [k["key"] for k in kernels if k["status"] == status]
        if keys:
            notes.append(f"{status} kernels/dispatches (not judged): {', '.join(keys)}")
    if not verdicts:
        notes.append("no kernel/dispatch present in both: nothing compared")
    return {"schema": SCHEMA, "kind": "set", "verdict": verdict, "reasons": reasons,
            "thresholds": th.as_dict(), "compare_thresholds": values_of(limits),
            "kernels": kernels, "notes": notes}
