#!/usr/bin/env python3
"""Render the optimization plan: hotspot (+ L2) JSON documents → plan.md, plan.html, summary.json.

Command line:
    render_plan.py --hotspots H1.json [H2.json ...] [--l2 L1.json ...] --out-dir reports/RUN
                   [--run RUN] [--charts] [--thresholds JSON]

In the pipeline (workflow/rules/report.smk), `snakemake_argv` builds the same command line from
the rule's input/output/params and `run_script` runs `main` with it.
"""


import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kerneltrace import atomic
from kerneltrace.errors import run_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0] or None)
    parser.add_argument(
        "--hotspots", nargs="+", type=Path, required=True, help="hotspot JSON files"
    )
    parser.add_argument("--l2", nargs="*", type=Path, default=[], help="L2 JSON files (optional)")
    parser.add_argument("--out-dir", type=Path, required=True, help="e.g. reports/RUN")
    parser.add_argument("--run", default=None, help="run name shown in the plan title")
    parser.add_argument("--charts", action="store_true", help="also write charts/*.svg")
    parser.add_argument("--thresholds", metavar="JSON", default=None,
                        help='plan thresholds overrides, e.g. \'{"verdict": {"tail_share": 0.5}}\' '
                             "(the config's plan.thresholds; names in docs/thresholds.md)")
    parser.add_argument("--kept", nargs="*", type=Path, default=None,
                        help="the hotspot/L2 copies kept in OUT_DIR/hotspots and OUT_DIR/l2; other "
                             "JSON files there (dispatches no longer in the run) are removed")
    args = parser.parse_args(argv)
    from kerneltrace.plan.inputs import load_plan_documents
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render.plan import plan_outputs

    out = args.out_dir
    thresholds = _thresholds(args.thresholds)
    inputs = args.hotspots + args.l2
    hotspot_docs, l2_docs = load_plan_documents(args.hotspots, args.l2)
    fixed = ("summary.json", "plan.md", "plan.html")
    atomic.refuse_input_overwrite([out / name for name in fixed], inputs)  # before any rendering
    summary = build_summary(hotspot_docs, l2_docs, run=args.run, thresholds=thresholds)
    files = plan_outputs(summary, hotspot_docs, l2_docs, charts=args.charts)
    # the chart files, whose names are known only now
    atomic.refuse_input_overwrite([out / name for name in files if name not in fixed], inputs)
    # all-or-nothing: a failing write leaves the previous plan.md/html/summary.json/charts whole
    atomic.write_many({out / name: text for name, text in files.items()})
    if args.kept is not None:
        from kerneltrace.pipeline.kept import remove_stale_copies

        for path in remove_stale_copies(out, args.kept):
            print(f"removed stale copy {path}", file=sys.stderr)
    count = sum(len(d["findings"]) for k in summary["kernels"] for d in k["dispatches"])
    print(
        f"plan: {count} finding(s) → {out / 'plan.md'}, {out / 'plan.html'}, {out / 'summary.json'}"
    )
    return 0


def _thresholds(text: str | None) -> dict | None:
    """The --thresholds JSON object (a bad one is an InputError, exit 2)."""
    if not text:
        return None
    import json

    from kerneltrace.errors import InputError

    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"--thresholds is not JSON ({err.msg})", "command line",
                         'give e.g. \'{"verdict": {"tail_share": 0.5}}\'') from None
    if not isinstance(value, dict):
        raise InputError("--thresholds must be a JSON object", "command line",
                         'give e.g. \'{"verdict": {"tail_share": 0.5}}\'')
    return value


def snakemake_argv(smk) -> list[str]:
    """The command line of the plan rule."""
    import json

    thresholds = getattr(smk.params, "thresholds", None) or {}
    return ["--hotspots", *smk.input.hotspots, "--l2", *smk.input.l2, "--out-dir", smk.params.out_dir,
            f"--run={smk.wildcards.run}", "--charts", "--kept", *smk.input.kept,
            *(["--thresholds", json.dumps(thresholds, sort_keys=True)] if thresholds else [])]


if __name__ == "__main__":
    sys.exit(run_cli(main))
