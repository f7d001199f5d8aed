#!/usr/bin/env python3
"""Write reports/index.html: every run of a batch with a link to its plan (and regression verdict)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402

from kerneltrace.analysis.compare.inputs import read_json  # noqa: E402
from kerneltrace.atomic import write_text  # noqa: E402
from kerneltrace.errors import run_cli  # noqa: E402
from kerneltrace.render.index import render_index, run_row  # noqa: E402


def write_index(reports: Path, runs: list[str], out: Path) -> None:
    rows = []
    for run in runs:
        summary_path = reports / run / "summary.json"
        regression_path = reports / run / "regression.json"
        summary = read_json(summary_path) if summary_path.is_file() else None
        regression = read_json(regression_path) if regression_path.is_file() else None
        rows.append(run_row(run, summary, regression))
    write_text(out, render_index(rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("reports", type=Path, help="the reports/ folder")
    parser.add_argument("--out", type=Path, help="default: REPORTS/index.html")
    parser.add_argument("runs", nargs="*", help="run names (default: every REPORTS/*/summary.json)")
    args = parser.parse_args(argv)
    runs = args.runs or sorted(p.parent.name for p in args.reports.glob("*/summary.json"))
    write_index(args.reports, runs, args.out or args.reports / "index.html")
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the batch_index rule."""
    return ["--out", smk.output.html, str(Path(smk.output.html).parent), *smk.params.runs]


if __name__ == "__main__":
    sys.exit(run_cli(main))
