"""Regression check of one pipeline run against a baseline reports/ folder (the CI gate logic)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kerneltrace.compare.document import compare_sets, keyed_dispatches
from kerneltrace.compare.gate import Thresholds
from kerneltrace.compare.inputs import attach_l2, load_side, read_json
from kerneltrace.errors import InputError


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


def regression_check(baseline: Path, run: str, hotspot_paths: list[Path],
                     thresholds: Thresholds, max_items: int = 50,
                     summary_path: Path | None = None) -> dict[str, Any]:
    """Compare a run's hotspot JSONs with the baseline's; the result is a compare/1 'set'."""
    summary = read_json(Path(summary_path)) if summary_path else None
    current = keyed_dispatches(attach_l2([read_json(Path(p)) for p in hotspot_paths], summary))
    before_path = baseline_summary(Path(baseline), run)
    if before_path is None:
        result = compare_sets({}, {}, thresholds)
        result["notes"] = [f"no baseline for run '{run}' under {baseline}: nothing to compare "
                           "(the gate passes; refresh the baseline to include this run)"]
        result["kernels"] = [{"key": key, "status": "new", "verdict": None, "comparison": None}
                             for key in current]
    else:
        before = load_side(before_path)
        result = compare_sets(before.keyed or {}, current, thresholds, max_items=max_items)
    result["run"] = run
    result["baseline"] = str(before_path) if before_path else str(baseline)
    return result


def gate_message(result: Mapping[str, Any]) -> str | None:
    """One line saying why the gate fails, or None when it passes."""
    if result.get("verdict") != "regressed":
        return None
    reasons = result.get("reasons") or ["regressed"]
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return (f"run '{result.get('run')}' regressed against {result.get('baseline')}: "
            f"{reasons[0]}{more}; see reports/{result.get('run')}/regression.md")
