"""Regression check of one pipeline run against a baseline reports/ folder (the CI gate logic)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kerneltrace.compare.document import compare_sets, keyed_dispatches
from kerneltrace.compare.gate import Thresholds
from kerneltrace.compare.inputs import (
    HOTSPOT_SCHEMA_PREFIX,
    attach_l2,
    load_side,
    read_json,
)
from kerneltrace.errors import InputError
from kerneltrace.thresholds import DEFAULT_COMPARE, CompareThresholds

MISSING = "missing"  # status of a baselined dispatch absent from this run (fails the gate)


def baseline_summary(baseline: Path, run: str) -> Path | None:
    """``baseline/{run}/summary.json``, or ``baseline/summary.json`` for a one-run folder."""
    if not baseline.is_dir():
        raise InputError("baseline folder does not exist", str(baseline),
                         "set config 'baseline' to an earlier run's reports/ folder")
    if baseline.resolve() == Path("reports").resolve():
        # The gate would compare the run with itself (its summary is rewritten by this run).
        raise InputError("baseline is this working directory's own reports/ folder",
                         str(baseline), "copy the earlier reports/ elsewhere, e.g. baseline/, "
                         "and point 'baseline' there")
    for candidate in (baseline / run / "summary.json", baseline / "summary.json"):
        if candidate.is_file():
            return candidate
    return None


def require_baseline_summary(baseline: Path, run: str) -> Path:
    """The baseline summary of ``run``; an InputError (never a silent pass) when there is none."""
    found = baseline_summary(Path(baseline), run)
    if found is not None:
        return found
    try:
        runs = sorted(p.parent.name for p in Path(baseline).glob("*/summary.json"))
    except OSError:
        runs = []
    holds = f"it holds runs: {', '.join(runs)}" if runs else "it holds no summary.json at all"
    raise InputError(f"baseline holds no summary for run '{run}' ({holds})", str(baseline),
                     "point 'baseline' at the earlier run's reports/ folder (the one with "
                     f"{run}/summary.json), or name this run as the baseline run was named")


def regression_check(baseline: Path, run: str, hotspot_paths: list[Path],
                     thresholds: Thresholds, max_items: int = 50,
                     summary_path: Path | None = None,
                     limits: CompareThresholds = DEFAULT_COMPARE) -> dict[str, Any]:
    """Compare a run's hotspot JSONs with the baseline's; the result is a compare/1 'set'
    (`thresholds`: the gate's, `limits`: the compare's work checks)."""
    summary = read_json(Path(summary_path)) if summary_path else None
    documents = [read_json(Path(p)) for p in hotspot_paths]
    # a dispatch the pipeline dropped (kerneltrace.dropped/1) is missing from this run, not compared
    documents = [doc for doc in documents
                 if isinstance(doc, dict) and str(doc.get("schema", "")).startswith(HOTSPOT_SCHEMA_PREFIX)]
    current = keyed_dispatches(attach_l2(documents, summary))
    before_path = require_baseline_summary(Path(baseline), run)
    before = load_side(before_path)
    result = compare_sets(before.keyed or {}, current, thresholds, max_items=max_items,
                          limits=limits)
    missing = [entry["key"] for entry in result["kernels"] if entry["status"] == "vanished"]
    for entry in result["kernels"]:
        if entry["status"] == "vanished":
            entry["status"] = MISSING
    if missing:
        result["notes"] = [n for n in result["notes"] if not n.startswith("vanished")]
        result["notes"].insert(0, f"missing from this run (in the baseline, not judged; the gate "
                                  f"fails unless allow_missing is set): {', '.join(missing)}")
    result["missing"] = missing
    result["run"] = run
    result["baseline"] = str(before_path)
    return result


def _pct(value: Any) -> str:
    return f"{value:+.1%}" if isinstance(value, int | float) else "?"


def _regressed_lines(entry: Mapping[str, Any]) -> list[str]:
    comparison = entry.get("comparison") or {}
    estimate = comparison.get("estimated_time_change") or {}
    if estimate.get("value") is not None:
        head = (f"estimated time change {_pct(estimate['value'])} (band {_pct(estimate['low'])} … "
                f"{_pct(estimate['high'])}, basis {estimate.get('basis')})")
        lines = [f"  REGRESSED {entry['key']}: {head}", f"      why: {estimate.get('why')}"]
        where = [r for r in comparison.get("reasons") or [] if r.startswith("stall check")]
        if where:
            lines.append("      where: " + where[0].removeprefix(
                "stall check (does not decide the verdict): "))
        return lines
    reasons = comparison.get("reasons") or ["regressed"]
    return [f"  REGRESSED {entry['key']}: no time estimate; the stall checks decided: {reasons[0]}",
            *(f"      also: {r}" for r in reasons[1:3])]


def _basis(entry: Mapping[str, Any]) -> Any:
    return ((entry.get("comparison") or {}).get("estimated_time_change") or {}).get("basis")


def gate_outcome(result: Mapping[str, Any], allow_missing: bool = False) -> tuple[bool, str]:
    """(passed, the block to print): which dispatches regressed, by how much and why; which
    baselined ones are missing (a failure unless ``allow_missing``)."""
    kernels = [k for k in result.get("kernels") or [] if isinstance(k, Mapping)]
    regressed = [k for k in kernels if k.get("verdict") == "regressed"]
    missing = [k for k in kernels if k.get("status") == MISSING]
    unjudged = [k for k in kernels if k.get("verdict") == "not-comparable"]
    failed = bool(regressed) or (bool(missing) and not allow_missing)
    run = result.get("run")
    lines = [f"regression gate: {'FAILED' if failed else 'passed'} for run '{run}' "
             f"(baseline {result.get('baseline')})"]
    for entry in regressed:
        lines += _regressed_lines(entry)
    for entry in missing:
        lines.append(f"  MISSING {entry['key']}: in the baseline, not in this run (its capture was "
                     "dropped as broken or empty, the kernel was renamed, or it was not captured)"
                     + ("; accepted: allow_missing is set" if allow_missing
                        else "; set allow_missing: true to accept"))
    for entry in unjudged:
        reasons = (entry.get("comparison") or {}).get("reasons") or []
        lines.append(f"  NOT COMPARABLE {entry['key']} (not judged): {reasons[0] if reasons else ''}")
    if not failed and not missing and not unjudged:
        verdicts = ["no change" if _basis(k) == "identical_capture" else k.get("verdict")
                    for k in kernels if k.get("verdict")]
        lines.append(f"  {len(verdicts)} dispatch(es) compared: "
                     + ", ".join(f"{verdicts.count(v)} {v}" for v in sorted(set(verdicts))))
    lines.append(f"  details: reports/{run}/regression.md")
    return not failed, "\n".join(lines)
