#!/usr/bin/env python3
"""Write reports/{run}/regression.{json,md}: one run's hotspots against a baseline reports/ folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace import atomic
from kerneltrace.cliargs import json_object
from kerneltrace.compare.gate import parse_thresholds
from kerneltrace.compare.regression import regression_check
from kerneltrace.errors import run_cli
from kerneltrace.render.compare import render_regression_markdown
from kerneltrace.thresholds import CompareThresholds, one_concern


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", required=True, type=Path,
                        help="an earlier run's reports/ folder")
    parser.add_argument("--run", required=True, help="run name (reports/{run})")
    parser.add_argument("--thresholds", default="", help="the gate's, e.g. total_stall=5%%,line_stall=20%%")
    parser.add_argument("--compare-thresholds", metavar="JSON", default=None,
                        type=json_object("--compare-thresholds", '{"compare": {"work_ratio": 2}}'),
                        help="the compare's work checks (config plan.thresholds.compare)")
    parser.add_argument("--json", required=True, type=Path, help="regression.json to write")
    parser.add_argument("--markdown", required=True, type=Path, help="regression.md to write")
    parser.add_argument("--summary", type=Path,
                        help="this run's summary.json (adds its L2 metrics)")
    parser.add_argument("hotspots", nargs="+", type=Path, help="this run's hotspot JSONs")
    args = parser.parse_args(argv)
    atomic.refuse_input_overwrite((args.json, args.markdown), [args.baseline, args.summary, *args.hotspots])
    limits = one_concern(CompareThresholds, args.compare_thresholds, "--compare-thresholds")
    result = regression_check(args.baseline, args.run, args.hotspots, parse_thresholds(args.thresholds),
                              summary_path=args.summary, limits=limits)
    atomic.write_many({args.json: atomic.json_text(result),
                       args.markdown: render_regression_markdown(result, args.run)})
    print(f"{args.run}: {result['verdict']}")
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the regression_report rule (config thresholds as NAME=VALUE,...)."""
    import json

    thresholds = ",".join(f"{name}={'off' if value is None or value is False else value}"
                          for name, value in dict(smk.params.thresholds).items())
    compare = dict(getattr(smk.params, "compare_thresholds", None) or {})
    return ["--baseline", smk.input.baseline, "--run", smk.wildcards.run, f"--thresholds={thresholds}",
            *(["--compare-thresholds", json.dumps(compare, sort_keys=True)] if compare else []),
            "--json", smk.output.json, "--markdown", smk.output.md, "--summary", smk.input.summary,
            *smk.input.hotspots]


if __name__ == "__main__":
    sys.exit(run_cli(main))
