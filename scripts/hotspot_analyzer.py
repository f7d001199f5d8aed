#!/usr/bin/env python3
"""Hotspot analyzer CLI: one decoded ATT dispatch dir -> text report and/or kerneltrace.hotspots JSON."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# No BLAS call anywhere in the analysis: one BLAS thread spares the CPU time that starting
# OpenBLAS's thread pool costs at `import numpy` (~0.04 s a process; a user's setting wins).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse

from kerneltrace.cliargs import number
from kerneltrace.errors import run_cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Rank stall hotspots (source lines and instructions) of one decoded rocprofv3 ATT "
        "dispatch directory; report occupancy and the architecture.",
    )
    parser.add_argument("dispatch_dir", metavar="DISPATCH_DIR", help="ui_output_agent_<h>_dispatch_<d> directory (or legacy *_ui)")
    parser.add_argument("--topk", type=number("--topk", minimum=1, integer=True), default=15, help="rows in the source-line and instruction tables (default 15)")
    parser.add_argument("--mode", choices=("asm", "src", "both"), default="both", help="which ranking tables to print")
    parser.add_argument("--detail", action="store_true", help="show source snippets and the stalling instructions of the top lines")
    parser.add_argument("--context", type=number("--context", minimum=0, integer=True), default=3, help="snippet lines on each side with --detail (default 3)")
    parser.add_argument("--kernel", metavar="SUBSTR", help="select the kernel (multi-kernel code.json; also the CSV row by name)")
    parser.add_argument("--arch", help="gfx target, e.g. gfx950 (overrides every other source)")
    parser.add_argument("--kernel-trace", metavar="CSV", type=Path, help="kernel_trace.csv (default: found by content in the capture bundle)")
    parser.add_argument("--agent-info", metavar="CSV", type=Path, help="agent_info.csv (default: found in the capture bundle)")
    parser.add_argument("--json", metavar="PATH", help="write the kerneltrace.hotspots JSON to PATH ('-' = stdout, no text report)")
    parser.add_argument("--text", metavar="PATH", help="write the text report to PATH instead of stdout")
    parser.add_argument("--capture-report", metavar="JSON", type=Path,
                        help="the decode stage's report (results/RUN/att/KERNEL/decode.json): a truncated "
                             "capture is stated in capture_warnings")
    parser.add_argument("--waves", action="store_true", help="add the wave-level analysis (schema kerneltrace.hotspots/2)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from kerneltrace.atomic import refuse_input_overwrite, write_json, write_text
    from kerneltrace.document.hotspot_report import run_analysis

    outputs = (args.json, args.text)
    refuse_input_overwrite(outputs, (args.dispatch_dir, args.kernel_trace, args.agent_info, args.capture_report))

    result = run_analysis(
        args.dispatch_dir,
        arch=args.arch,
        kernel_trace_csv=args.kernel_trace,
        agent_info_csv=args.agent_info,
        kernel=args.kernel,
        waves=args.waves,
        capture_report=args.capture_report,
    )
    document = result.document
    refuse_input_overwrite(outputs, [document.get("metadata", {}).get("agent_info_csv")])
    if args.json:
        write_json(args.json, document)
    if args.json == "-" and not args.text:
        return 0
    from kerneltrace.render.text import render_text

    text, render_warnings = render_text(
        document,
        topk=args.topk,
        mode=args.mode,
        detail=args.detail,
        context=args.context,
        sources=result.sources,
    )
    write_text(args.text or "-", text)
    for warning in render_warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the hotspots rule (params.extra: --waves, --arch from the manifest/config)."""
    return [smk.params.dispatch_dir, "--topk", smk.params.topk, *smk.params.extra,
            "--json", smk.output.json, "--text", smk.output.text]


if __name__ == "__main__":
    sys.exit(run_cli(main))
