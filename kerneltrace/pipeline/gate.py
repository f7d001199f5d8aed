"""The regression gate at the end of a Snakemake run: the recorded outcomes printed as blocks, exit 1 on failure.

The gate job only records its outcome (scripts/regression_gate.py --record), because a failing
job ends in Snakemake's RuleException with file/line frames. The Snakefile's onsuccess/onerror
calls ``finish``: every run's block goes to stderr, failing ones last, and a failed gate exits 1
after Snakemake has removed its locks. A failed outcome is then deleted, so the next invocation
runs the gate again (and fails again) instead of finding its output and saying "Nothing to be
done".
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO


def outcome_path(run: str) -> Path:
    return Path("results") / run / "regression.gate.json"


def finish(runs: Iterable[str], stream: TextIO = sys.stderr) -> int:
    """Print the recorded gate blocks of ``runs``; 1 if any failed, else 0 (absent = not run)."""
    blocks = []
    for run in runs:
        path = outcome_path(run)
        try:
            outcome = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the gate did not run (an earlier job failed): Snakemake said why
        if isinstance(outcome, dict) and isinstance(outcome.get("block"), str):
            passed = outcome.get("passed") is True
            blocks.append((passed, outcome["block"]))
            if not passed:
                path.unlink(missing_ok=True)
    for _, block in sorted(blocks, key=lambda item: not item[0]):
        print(block, file=stream)
    return 1 if any(not passed for passed, _ in blocks) else 0
