#!/usr/bin/env python3
"""Render the optimization plan: hotspot (+ L2) JSON documents → plan.md, plan.html, summary.json.

Command line:
    render_plan.py --hotspots H1.json [H2.json ...] [--l2 L1.json ...] --out-dir reports/RUN
                   [--run RUN] [--charts]

As a Snakemake `script:` (workflow/rules/report.smk, owner: pipeline), the rule provides
named `input.hotspots` (list), `input.l2` (list, may be empty), `output.md`, `output.html`,
`output.summary`, `params.run`, and optionally `output.charts` (a directory): chart SVGs are then
written there so the rule can register them, e.g.

    output:
        md=report("reports/{run}/plan.md", caption="../report/plan.rst", category="Plan"),
        html=report("reports/{run}/plan.html", caption="../report/plan.rst", category="Plan"),
        summary="reports/{run}/summary.json",
        charts=report(directory("reports/{run}/charts"), patterns=["{name}.svg"],
                      caption="../report/charts.rst", category="Charts"),

Captions live in workflow/report/*.rst (workflow.rst for `report: "report/workflow.rst"`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kerneltrace import atomic  # noqa: E402
from kerneltrace.errors import InputError, run_cli  # noqa: E402


def load_document(path: Path, schema_prefix: str) -> dict:
    """Read one stage JSON document and check its schema family."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise InputError("file not found", str(path), "pass an existing JSON file") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"not valid JSON ({err})", str(path), "regenerate the document") from err
    schema = doc.get("schema", "") if isinstance(doc, dict) else ""
    if not schema.startswith(schema_prefix):
        raise InputError(
            f"schema is {schema!r}, expected {schema_prefix}*",
            str(path),
            "pass hotspot JSON to --hotspots and L2 JSON to --l2",
        )
    return doc


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
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.readers.snippets import load_snippets
    from kerneltrace.render.plan import (
        dispatch_view,
        render_charts,
        render_html,
        render_markdown,
        snippet_locations,
    )

    if not hotspots:
        raise InputError("no hotspot documents given", "--hotspots", "pass at least one JSON file")
    hotspot_docs = [load_document(p, "kerneltrace.hotspots/") for p in hotspots]
    l2_docs = [load_document(p, "kerneltrace.l2/") for p in l2]
    summary = build_summary(hotspot_docs, l2_docs, run=run)
    # Source text is read here (I/O edge) through the safe snapshot reader; absent → no snippet.
    snippets = {
        doc.get("dispatch_dir"): load_snippets(doc.get("dispatch_dir"), snippet_locations(doc))
        for doc in hotspot_docs
    }
    atomic.write_json(summary_path, summary)
    atomic.write_text(md, render_markdown(summary, hotspot_docs))
    atomic.write_text(html, render_html(summary, hotspot_docs, l2_docs, snippets))
    if charts_dir is not None:
        charts_dir.mkdir(parents=True, exist_ok=True)
        by_dir = {doc.get("dispatch_dir"): doc for doc in hotspot_docs}
        for k, kernel in enumerate(summary["kernels"]):
            for n, dispatch in enumerate(kernel["dispatches"]):
                view = dispatch_view(dispatch, by_dir.get(dispatch.get("dispatch_dir")))
                for title, svg in render_charts(view).items():
                    if svg:
                        slug = title.lower().replace(" / ", "_").replace(" ", "_")
                        atomic.write_text(charts_dir / f"k{k}_d{n}_{slug}.svg", svg + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hotspots", nargs="+", type=Path, required=True, help="hotspot JSON files"
    )
    parser.add_argument("--l2", nargs="*", type=Path, default=[], help="L2 JSON files (optional)")
    parser.add_argument("--out-dir", type=Path, required=True, help="e.g. reports/RUN")
    parser.add_argument("--run", default=None, help="run name shown in the plan title")
    parser.add_argument("--charts", action="store_true", help="also write charts/*.svg")
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
    count = sum(len(d["findings"]) for k in summary["kernels"] for d in k["dispatches"])
    print(
        f"plan: {count} finding(s) → {out / 'plan.md'}, {out / 'plan.html'}, {out / 'summary.json'}"
    )
    return 0


def snakemake_main(smk) -> None:  # pragma: no cover - exercised by the pipeline
    charts = getattr(smk.output, "charts", None)
    render(
        [Path(p) for p in smk.input.hotspots],
        [Path(p) for p in getattr(smk.input, "l2", [])],
        Path(smk.output.md),
        Path(smk.output.html),
        Path(smk.output.summary),
        getattr(smk.params, "run", None),
        Path(charts) if charts else None,
    )


if "snakemake" in globals():
    snakemake_main(globals()["snakemake"])  # noqa: F821
elif __name__ == "__main__":
    sys.exit(run_cli(main))
