#!/usr/bin/env python3
"""Write reports/index.html: every run of a batch with a link to its plan (and regression verdict)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.atomic import refuse_input_overwrite, write_text
from kerneltrace.compare.inputs import read_json
from kerneltrace.errors import run_cli
from kerneltrace.render.index import render_index, run_row


def write_index(reports: Path, runs: list[str], out: Path) -> None:
    documents = [(run, reports / run / "summary.json", reports / run / "regression.json") for run in runs]
    refuse_input_overwrite((out,), [path for _, *paths in documents for path in paths])
    rows = [run_row(run, read_json(summary) if summary.is_file() else None,
                    read_json(regression) if regression.is_file() else None)
            for run, summary, regression in documents]
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
