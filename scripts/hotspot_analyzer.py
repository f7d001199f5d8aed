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

from kerneltrace import atomic
from kerneltrace.cliargs import LazyWidthHelpFormatter, json_object, number
from kerneltrace.errors import InputError, exit_cli, run_cli
from kerneltrace.safetext import one_line

STRUCTURE_EXAMPLE = '{"structure": {"min_chain": 4}}'


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Rank stall hotspots (source lines and instructions) of one decoded rocprofv3 ATT "
        "dispatch directory; report occupancy and the architecture.",
        formatter_class=LazyWidthHelpFormatter,  # shutil only when help or usage is printed
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
    parser.add_argument("--keep", metavar="PATH", help="also write the JSON to PATH (the copy kept under reports/)")
    parser.add_argument("--thresholds", metavar="JSON", type=json_object("--thresholds", STRUCTURE_EXAMPLE),
                        help="structure-detection thresholds, e.g. '" + STRUCTURE_EXAMPLE + "' (the config's "
                             "plan.thresholds.structure; names and defaults in docs/thresholds.md); the JSON "
                             "document records the values used")
    parser.add_argument("--drop-on-error", action="store_true",
                        help="a dispatch that cannot be analysed is a kerneltrace.dropped/1 record (JSON and "
                             "text say why; exit 0) instead of an error (the pipeline: one bad capture "
                             "drops that capture only)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from kerneltrace.atomic import refuse_input_overwrite

    outputs = (args.json, args.text, args.keep)
    refuse_input_overwrite(outputs, (args.dispatch_dir, args.kernel_trace, args.agent_info, args.capture_report))
    if args.keep and not args.json:
        raise InputError("--keep needs --json", "command line", "add --json PATH")
    if not args.drop_on_error:
        return _analyse(args)
    from kerneltrace.document.hotspot_report import dropped_record

    try:
        staged: list[tuple[str, object]] = []
        _analyse(args, staged)
    except Exception as err:
        record = dropped_record(args.dispatch_dir, err)
        if not isinstance(err, InputError):
            import traceback  # only for a failure: its imports (linecache, tokenize, textwrap) cost every run

            traceback.print_exc(file=sys.stderr)
        print(f"dropped {args.dispatch_dir}: {record['reason']}", file=sys.stderr)
        staged = [(args.json, atomic.json_text(record)), (args.text, f"dropped: {record['reason']}\n")]
    if args.keep:
        staged.append((args.keep, dict(staged)[args.json]))
    for path, text in staged:
        if path:
            atomic.write_text(path, text)
    return 0


def _analyse(args: argparse.Namespace, staged: list | None = None) -> int:
    """The analysis and its reports; with ``staged``, the outputs are returned there, not written
    (so a failure while rendering leaves nothing half-written)."""
    from kerneltrace.atomic import json_text, refuse_input_overwrite, write_json, write_text
    from kerneltrace.document.hotspot_report import run_analysis

    outputs = (args.json, args.text)
    structure = None
    if args.thresholds is not None:  # the thresholds table (dataclasses) only when asked: start-up
        from kerneltrace.thresholds import StructureThresholds, one_concern

        structure = one_concern(StructureThresholds, args.thresholds, "--thresholds")
    result = run_analysis(
        args.dispatch_dir,
        arch=args.arch,
        kernel_trace_csv=args.kernel_trace,
        agent_info_csv=args.agent_info,
        kernel=args.kernel,
        waves=args.waves,
        capture_report=args.capture_report,
        text_only=not args.json,
        structure=structure,
    )
    document = result.document
    refuse_input_overwrite(outputs, [document.get("metadata", {}).get("agent_info_csv")])
    if args.json and staged is not None:
        staged.append((args.json, json_text(document)))
    elif args.json:
        write_json(args.json, document)
        if args.keep:
            write_json(args.keep, document)
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
    if staged is not None:
        staged.append((args.text or "-", text))
    else:
        write_text(args.text or "-", text)
    for warning in render_warnings:
        print(f"warning: {one_line(warning)}", file=sys.stderr)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the hotspots rule (params.extra: --waves, --arch from the manifest/config,
    --thresholds from the config's plan.thresholds.structure)."""
    return [smk.params.dispatch_dir, "--topk", smk.params.topk, *smk.params.extra,
            "--json", smk.output.json, "--text", smk.output.text, "--keep", smk.output.kept]


if __name__ == "__main__":
    exit_cli(run_cli(main))  # sys.exit without the teardown (40-60 ms after --waves)
