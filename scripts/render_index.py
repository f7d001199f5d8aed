#!/usr/bin/env python3
"""Write reports/index.html: every run under reports/ (by name) with a link to its plan, kernel time,
launch size and regression verdict."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.atomic import refuse_input_overwrite, write_text
from kerneltrace.compare.inputs import HOTSPOT_SCHEMA_PREFIX, read_json
from kerneltrace.errors import InputError, run_cli
from kerneltrace.render.index import render_index, run_row


def reported_runs(reports: Path) -> list[str]:
    """Every run with a summary under ``reports``, sorted by name."""
    return sorted(p.parent.name for p in reports.glob("*/summary.json") if p.is_file())


def _kept_hotspots(run_dir: Path, summary: dict) -> list[dict]:
    """The run's kept hotspot documents: their kernel-trace rows give grid and workgroup sizes (the
    summary's `launch` has the workgroup count and kernel time, not the sizes)."""
    entries = [d for k in summary.get("kernels") or [] if isinstance(k, dict)
               for d in k.get("dispatches") or [] if isinstance(d, dict)]
    if not entries:
        return []
    docs = []
    for path in sorted((run_dir / "hotspots").glob("*.json")):
        try:
            doc = read_json(path)
        except InputError:
            continue  # a damaged copy: its row shows n/a, the index is still written
        if isinstance(doc, dict) and str(doc.get("schema", "")).startswith(HOTSPOT_SCHEMA_PREFIX):
            docs.append(doc)
    return docs


def write_index(reports: Path, runs: list[str], out: Path) -> None:
    documents = [(run, reports / run / "summary.json", reports / run / "regression.json") for run in runs]
    refuse_input_overwrite((out,), [path for _, *paths in documents for path in paths])
    rows = []
    for run, summary_path, regression_path in documents:
        summary = read_json(summary_path) if summary_path.is_file() else None
        summary = summary if isinstance(summary, dict) else None
        rows.append(run_row(run, summary, read_json(regression_path) if regression_path.is_file() else None,
                            _kept_hotspots(summary_path.parent, summary) if summary else []))
    write_text(out, render_index(rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("reports", type=Path, help="the reports/ folder")
    parser.add_argument("--out", type=Path, help="default: REPORTS/index.html")
    parser.add_argument("runs", nargs="*", help="run names (default: every REPORTS/*/summary.json)")
    args = parser.parse_args(argv)
    runs = sorted(args.runs) if args.runs else reported_runs(args.reports)
    write_index(args.reports, runs, args.out or args.reports / "index.html")
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the batch_index rule: every run under reports/, this invocation's and earlier ones."""
    return ["--out", smk.output.html, str(Path(smk.output.html).parent)]


if __name__ == "__main__":
    sys.exit(run_cli(main))
