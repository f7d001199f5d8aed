#!/usr/bin/env python3
"""Render the optimization plan: hotspot (+ L2) JSON documents → plan.md, plan.html, summary.json.

Command line:
    render_plan.py --hotspots H1.json [H2.json ...] [--l2 L1.json ...] --out-dir reports/RUN
                   [--run RUN] [--charts] [--thresholds JSON] [--discovery DISCOVERY.json] [--manifest dispatches.tsv]

A `kerneltrace.dropped/1` document among --hotspots (hotspot_analyzer --drop-on-error) is a
dispatch left out with its reason; --discovery adds those discovery dropped. They are listed in
the plan, summary.json and OUT_DIR/dispatches.md (with --manifest: also the kept ones).

In the pipeline (workflow/rules/report.smk), `snakemake_argv` builds the same command line from
the rule's input/output/params and `run_script` runs `main` with it.
"""


import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kerneltrace import atomic
from kerneltrace.cliargs import json_object
from kerneltrace.errors import run_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0] or None)
    parser.add_argument(
        "--hotspots", nargs="*", type=Path, default=[], help="hotspot JSON files (or dropped records)"
    )
    parser.add_argument("--discovery", type=Path, help="the dispatch list's discovery record (dropped entries)")
    parser.add_argument("--manifest", type=Path, help="dispatches.tsv: the kept dispatch dirs for dispatches.md")
    parser.add_argument("--l2", nargs="*", type=Path, default=[], help="L2 JSON files (optional)")
    parser.add_argument("--out-dir", type=Path, required=True, help="e.g. reports/RUN")
    parser.add_argument("--run", default=None, help="run name shown in the plan title")
    parser.add_argument("--charts", action="store_true", help="also write charts/*.svg")
    parser.add_argument("--timelines", nargs="*", type=Path, default=[],
                        help="wave timelines (timeline/<id>.pftrace) to link: each goes with the "
                             "hotspot JSON of the same file stem")
    parser.add_argument("--thresholds", metavar="JSON", default=None,
                        type=json_object("--thresholds", '{"verdict": {"tail_share": 0.5}}'),
                        help='thresholds overrides, e.g. \'{"verdict": {"tail_share": 0.5}}\' '
                             "(the config's plan.thresholds but `structure`, which the hotspot "
                             "documents record; `compare` and `gate`, the config's "
                             "regression_thresholds, are listed in summary.json; names in "
                             "docs/thresholds.md)")
    parser.add_argument("--kept", nargs="*", type=Path, default=None,
                        help="the hotspot/L2 copies kept in OUT_DIR/hotspots and OUT_DIR/l2; other "
                             "JSON files there (dispatches no longer in the run) are removed")
    args = parser.parse_args(argv)
    from kerneltrace.plan.inputs import discovery_dropped, load_plan_documents
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render.plan import plan_outputs

    out = args.out_dir
    thresholds = args.thresholds
    inputs = args.hotspots + args.l2 + [p for p in (args.discovery, args.manifest) if p]
    discovery = _discovery(args.discovery)
    hotspot_docs, l2_docs, dropped, hotspot_paths = load_plan_documents(
        args.hotspots, args.l2, discovery_dropped(discovery.get("notes") or []))
    fixed = ("summary.json", "plan.md", "plan.html", "dispatches.md")
    atomic.refuse_input_overwrite([out / name for name in fixed], inputs)  # before any rendering
    summary = build_summary(hotspot_docs, l2_docs, run=args.run, dropped=dropped, thresholds=thresholds)
    files = plan_outputs(summary, hotspot_docs, l2_docs, charts=args.charts,
                         timelines=timeline_links(hotspot_paths, hotspot_docs, args.timelines, out))
    if args.discovery or args.manifest or dropped:
        files["dispatches.md"] = _dispatches_md(args.manifest, dropped, str(discovery.get("searched") or ""))
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


def timeline_links(hotspots: list[Path], docs: list[dict], timelines: list[Path],
                   out: Path) -> dict[str, str]:
    """{dispatch_dir: link relative to OUT_DIR} for the timelines whose stem names a hotspot JSON."""
    import os

    by_stem = {path.stem: doc.get("dispatch_dir") for path, doc in zip(hotspots, docs, strict=True)}
    # an empty trace is a timeline the export dropped (export_timeline.py --drop-on-error)
    return {by_stem[path.stem]: os.path.relpath(path, out).replace(os.sep, "/")
            for path in timelines if path.stem in by_stem and path.stat().st_size > 0}


def _discovery(path: Path | None) -> dict:
    if path is None:
        return {}
    from kerneltrace.readers.regular import read_json

    record = read_json(path, "discovery record", fix="re-run the dispatches step (it is regenerated)")
    return record if isinstance(record, dict) else {}


def _dispatches_md(manifest: Path | None, dropped: list[dict], searched: str) -> str:
    """Every dispatch dir of the run: kept (minus those dropped by the analysis), and dropped with why."""
    from kerneltrace.pipeline.dispatches import notes_markdown
    from kerneltrace.pipeline.manifest import read_manifest

    failed = {item["dispatch_dir"] for item in dropped if item["stage"] == "analysis"}
    rows = [row for row in (read_manifest(manifest) if manifest else []) if row["dispatch_dir"] not in failed]
    notes = [f"dropped {item['dispatch_dir']} ({item['stage']}): {item['reason']}" for item in dropped]
    return notes_markdown(rows, notes, searched or "this run")


def snakemake_argv(smk) -> list[str]:
    """The command line of the plan rule."""
    import json

    thresholds = getattr(smk.params, "thresholds", None) or {}
    return ["--hotspots", *smk.input.hotspots, "--l2", *smk.input.l2, "--out-dir", smk.params.out_dir,
            f"--run={smk.wildcards.run}", "--charts", "--kept", *smk.input.kept,
            "--timelines", *smk.input.timelines,
            "--discovery", smk.input.discovery, "--manifest", smk.input.dispatches,
            *(["--thresholds", json.dumps(thresholds, sort_keys=True)] if thresholds else [])]


if __name__ == "__main__":
    sys.exit(run_cli(main))
