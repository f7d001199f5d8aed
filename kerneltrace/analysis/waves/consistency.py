"""Invariant check of the wave files: listed vs present files, skipped files, code.json = Σ waves."""

from __future__ import annotations

import os
from pathlib import Path

from kerneltrace.readers.codejson import CodeFormat
from kerneltrace.readers.regular import optional_json

TYPE_CHECKING = False  # typing's flag without importing typing (CLI start-up path)
if TYPE_CHECKING:
    from typing import Any

    from kerneltrace.analysis.waves.accumulate import WaveTotals
    from kerneltrace.readers.codejson import CodeTable


def read_listed_wave_files(dispatch_dir: Path) -> tuple[set[str] | None, str]:
    """(wave file names listed in filenames.json, ""), (None, "") when it is absent, or
    (None, "filenames.json unreadable: why")."""
    path = Path(dispatch_dir) / "filenames.json"
    if not os.path.lexists(path):
        return None, ""
    document, problem = optional_json(path, "filenames.json")
    if problem:
        return None, problem
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list) and node and isinstance(node[0], str):
            names.add(node[0])

    walk(document.get("wave_filenames") if isinstance(document, dict) else None)
    return names, ""


def consistency(dispatch_dir: Path, paths: list[Path], totals: WaveTotals,
                table: CodeTable) -> dict[str, Any]:
    """The `consistency` object: every way the wave files and code.json disagree, worded."""
    details: list[str] = []
    if not paths:
        details.append("no wave files (se*_sm*_sl*_wv*.json) in the dispatch dir: "
                       "wave-level analyses unavailable, code.json totals unchecked")
    listed, listed_problem = read_listed_wave_files(dispatch_dir)
    if listed_problem:
        # an unreadable list must never let the check say ok
        details.append(f"{listed_problem}: listed vs present wave files unchecked")
    present = {path.name for path in paths}
    missing = sorted(listed - present) if listed else []
    if missing:
        details.append(f"{len(missing)} wave file(s) listed in filenames.json are missing "
                       f"(e.g. {', '.join(missing[:3])})")
    if totals.skipped:
        details.append(f"{len(totals.skipped)} wave file(s) skipped as unreadable "
                       f"(e.g. {totals.skipped[0]['file']}: {totals.skipped[0]['error']})")
    mismatched_rows: dict[str, int] = {}
    if paths:
        for name, attribute in (("Hit", "hits"), ("Latency", "latency"), ("Stall", "stall"),
                                ("Idle", "idle")):
            expected = [(row.index, getattr(row, attribute)) for row in table.rows]
            checked = [(index, value) for index, value in expected if value is not None]
            if not checked:
                continue
            wave_sums = getattr(totals, attribute)
            bad = [index for index, value in checked
                   if (int(wave_sums[index]) if index < totals.rows else 0) != value]
            extra = int(wave_sums.sum()) - sum(value for _, value in checked)
            if bad:
                mismatched_rows[name] = len(bad)
                details.append(f"code.json {name} differs from the wave-file sums on {len(bad)} of "
                               f"{len(checked)} rows (total difference {-extra:+d}: code.json − waves)")
    if mismatched_rows and CodeFormat.LEGACY in totals.layouts:
        details.append("legacy (rocprofv2) layout: the exact code.json = Σ wave files invariant is "
                       "documented for V3 only, so these differences may be normal")
    return {"ok": not details, "details": details, "missing_files": missing,
            "mismatched_rows": mismatched_rows}
