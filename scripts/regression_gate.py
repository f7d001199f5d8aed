#!/usr/bin/env python3
"""The regression gate of one run: its verdict as one block (which dispatches regressed, by how much, why).

Standalone: prints the block and exits 1 when the gate fails. In the pipeline (``--record``) the
job only records the outcome (results/{run}/regression.gate.json) and succeeds; the Snakefile's
onsuccess/onerror prints the blocks and sets the exit code (kerneltrace/pipeline/gate.py), so a
failing gate is one block, not a Snakemake traceback.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.atomic import refuse_input_overwrite, write_json
from kerneltrace.compare.inputs import read_json
from kerneltrace.compare.regression import gate_outcome
from kerneltrace.errors import run_cli

EXIT_REGRESSED = 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report", type=Path, help="regression.json")
    parser.add_argument("outcome", type=Path, help="JSON written with the outcome and its block")
    parser.add_argument("--allow-missing", action="store_true",
                        help="a baselined dispatch missing from this run does not fail the gate")
    parser.add_argument("--record", action="store_true",
                        help="only record the outcome, exit 0 (the pipeline sets the exit code)")
    args = parser.parse_args(argv)
    refuse_input_overwrite((args.outcome,), (args.report,))
    result = read_json(args.report)
    passed, block = gate_outcome(result, allow_missing=args.allow_missing)
    # the thresholds the report judged by (the gate's and the compare's work checks)
    write_json(args.outcome, {"run": result.get("run"), "passed": passed, "block": block,
                              "thresholds": {"gate": result.get("thresholds"),
                                             "compare": result.get("compare_thresholds")}})
    if args.record:
        return 0
    print(block, file=sys.stdout if passed else sys.stderr)
    return 0 if passed else EXIT_REGRESSED


def snakemake_argv(smk) -> list[str]:
    """The command line of the regression_gate rule."""
    return [smk.input.report, smk.output.outcome, "--record",
            *(["--allow-missing"] if smk.params.allow_missing else [])]


if __name__ == "__main__":
    sys.exit(run_cli(main))
