#!/usr/bin/env python3
"""Compare two captures (before/after) and say whether the kernel improved or regressed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.atomic import refuse_input_overwrite, write_json, write_text
from kerneltrace.cliargs import json_object, number
from kerneltrace.compare.gate import DEFAULT_THRESHOLDS, parse_thresholds
from kerneltrace.compare.inputs import analyzer, compare_sides, load_side
from kerneltrace.errors import run_cli
from kerneltrace.thresholds import CompareThresholds, one_concern

EXIT_REGRESSED = 1  # 0 = not regressed (improved, neutral or not-comparable), 2 = bad input
COMPARE_EXAMPLE = '{"compare": {"work_ratio": 2}}'


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compare.py",
        description="Before/after comparison of two captures: estimated kernel-time change "
                    "(band and basis), stall deltas per total, type, source line and aligned "
                    "instruction, new/vanished hotspots, occupancy and L2 changes, and a verdict "
                    "that follows the time estimate; two different kernels or GPUs, or waves doing "
                    "different work without a known launch, are 'not-comparable' (the reason is "
                    "printed, no time change). Exit 0 = not regressed (improved, neutral, "
                    "not-comparable), 1 = regressed, 2 = bad input.",
        epilog="BEFORE/AFTER: a hotspot JSON, a ui_output_agent_*_dispatch_* dir (analyzed "
               "in-process), a run's reports/{run}/summary.json or reports/{run}/ folder, or a "
               "reports/ folder (runs matched by name).")
    parser.add_argument("before", type=Path, help="the baseline capture")
    parser.add_argument("after", type=Path, help="the new capture")
    parser.add_argument("--json", metavar="PATH",
                        help="write the kerneltrace.compare/1 document ('-' = stdout)")
    parser.add_argument("--markdown", metavar="PATH", type=Path, help="write a Markdown report")
    parser.add_argument("--fail-on", metavar="SPEC", default="",
                        help="thresholds, e.g. 'time_noise=5%%' or 'total_stall=5%%,line_stall=20%%' (defaults: "
                             + ", ".join(f"{k}={v}" for k, v in DEFAULT_THRESHOLDS.as_dict().items())
                             + "); 'off' disables a check")
    parser.add_argument("--thresholds", metavar="JSON", type=json_object("--thresholds", COMPARE_EXAMPLE),
                        help="the compare's work-check thresholds, e.g. '" + COMPARE_EXAMPLE + "' (the "
                             "config's plan.thresholds.compare; names in docs/thresholds.md); the "
                             "document records the values used (compare_thresholds)")
    parser.add_argument("--run", help="with reports/ folders: compare only this run")
    parser.add_argument("--arch", help="gfx target of dispatch dirs analysed here, e.g. gfx950 "
                                       "(when their agent_info CSV is missing: occupancy and "
                                       "MFMA figures need it)")
    parser.add_argument("--max-items", type=number("--max-items", minimum=0, integer=True), default=50,
                        help="lines/instructions listed per section in the JSON (0 = all)")
    parser.add_argument("--quiet", action="store_true", help="no text report on stdout")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    thresholds = parse_thresholds(args.fail_on)
    limits = one_concern(CompareThresholds, args.thresholds, "--thresholds")
    refuse_input_overwrite((args.json, args.markdown), (args.before, args.after))
    analyze = analyzer(args.arch)
    before = load_side(args.before, run=args.run, analyze=analyze)
    after = load_side(args.after, run=args.run, analyze=analyze)
    result = compare_sides(before, after, thresholds, max_items=args.max_items, limits=limits)
    if args.json:
        write_json(args.json, result)
    if args.markdown:
        from kerneltrace.render.compare import render_markdown

        write_text(args.markdown, render_markdown(result))
    if args.json != "-" and not args.quiet:
        from kerneltrace.render.compare import render_text

        write_text("-", render_text(result))
    return EXIT_REGRESSED if result["verdict"] == "regressed" else 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
