#!/usr/bin/env python3
"""Fail (exit 1) when reports/{run}/regression.json says the run regressed; else write a pass flag."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.atomic import refuse_input_overwrite, write_text
from kerneltrace.compare.inputs import read_json
from kerneltrace.compare.regression import gate_message
from kerneltrace.errors import run_cli

EXIT_REGRESSED = 1


def gate(report: Path, flag: Path) -> str | None:
    """The failure message, or None after writing the pass flag."""
    result = read_json(Path(report))
    message = gate_message(result)
    if message is None:
        write_text(flag, f"{result.get('run')}: {result.get('verdict')}\n")
    return message


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("report", type=Path, help="regression.json")
    parser.add_argument("flag", type=Path, help="file written when the gate passes")
    args = parser.parse_args(argv)
    refuse_input_overwrite((args.flag,), (args.report,))
    message = gate(args.report, args.flag)
    if message:
        # in the pipeline the regression report (another job's outputs) is kept; only this job fails
        print(f"error: regression gate: {message}", file=sys.stderr)
        return EXIT_REGRESSED
    print("regression gate: passed")
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the regression_gate rule."""
    return [smk.input.report, smk.output.flag]


if __name__ == "__main__":
    sys.exit(run_cli(main))
