#!/usr/bin/env python3
"""Render the optimization plan: hotspot (+ L2) JSON documents → plan.md, plan.html, summary.json.

Command line:
    render_plan.py --hotspots H1.json [H2.json ...] [--l2 L1.json ...] --out-dir reports/RUN
                   [--run RUN] [--charts]

In the pipeline (workflow/rules/report.smk), `snakemake_argv` builds the same command line from
the rule's input/output/params and `run_script` runs `main` with it.
"""


import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kerneltrace import atomic  # noqa: E402
from kerneltrace.errors import run_cli  # noqa: E402


def render(
    hotspots: list[Path],
    l2: list[Path],
    md: Path,
    html: Path,
    summary_path: Path,
    run: str | None,
    charts_dir: Path | None = None,
) -> dict:
    """Build the summary and write the three reports (and chart SVGs when asked)."""
    from kerneltrace.plan.inputs import load_plan_documents, plan_snippets
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render.plan import chart_files, plan_charts, render_html, render_markdown

    hotspot_docs, l2_docs = load_plan_documents(hotspots, l2)
    atomic.refuse_input_overwrite([md, html, summary_path, charts_dir], hotspots + l2)
    summary = build_summary(hotspot_docs, l2_docs, run=run)
    snippets = plan_snippets(hotspot_docs)
    # Everything is rendered before anything is written, and written all-or-nothing: a failing
    # renderer leaves the previous plan.md/html/summary.json/charts whole.
    outputs: dict[Path, str] = {summary_path: atomic.json_text(summary),
                                md: render_markdown(summary, hotspot_docs)}
    charts = plan_charts(summary, hotspot_docs)  # drawn once: inline in plan.html and as files
    outputs[html] = render_html(summary, hotspot_docs, l2_docs, snippets, charts)
    if charts_dir is not None:
        charts_dir.mkdir(parents=True, exist_ok=True)
        for name, svg in chart_files(summary, hotspot_docs, charts).items():
            outputs[charts_dir / name] = svg
    atomic.write_many(outputs)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0] or None)
    parser.add_argument(
        "--hotspots", nargs="+", type=Path, required=True, help="hotspot JSON files"
    )
    parser.add_argument("--l2", nargs="*", type=Path, default=[], help="L2 JSON files (optional)")
    parser.add_argument("--out-dir", type=Path, required=True, help="e.g. reports/RUN")
    parser.add_argument("--run", default=None, help="run name shown in the plan title")
    parser.add_argument("--charts", action="store_true", help="also write charts/*.svg")
    parser.add_argument("--kept", nargs="*", type=Path, default=None,
                        help="the hotspot/L2 copies kept in OUT_DIR/hotspots and OUT_DIR/l2; other "
                             "JSON files there (dispatches no longer in the run) are removed")
    args = parser.parse_args(argv)
    out = args.out_dir
    summary = render(
        args.hotspots,
        args.l2,
        out / "plan.md",
        out / "plan.html",
        out / "summary.json",
        args.run,
        out / "charts" if args.charts else None,
    )
    if args.kept is not None:
        from kerneltrace.pipeline.kept import remove_stale_copies

        for path in remove_stale_copies(out, args.kept):
            print(f"removed stale copy {path}", file=sys.stderr)
    count = sum(len(d["findings"]) for k in summary["kernels"] for d in k["dispatches"])
    print(
        f"plan: {count} finding(s) → {out / 'plan.md'}, {out / 'plan.html'}, {out / 'summary.json'}"
    )
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the plan rule."""
    return ["--hotspots", *smk.input.hotspots, "--l2", *smk.input.l2, "--out-dir", smk.params.out_dir,
            f"--run={smk.wildcards.run}", "--charts", "--kept", *smk.input.kept]


if __name__ == "__main__":
    sys.exit(run_cli(main))
