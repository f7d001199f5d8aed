#!/usr/bin/env python3
"""Export one decoded ATT dispatch dir's waves as a Perfetto trace (open it in ui.perfetto.dev).

Command line:
    export_timeline.py DISPATCH_DIR -o OUT [--format perfetto|json] [--arch ARCH]
                       [--max-instruction-slices N] [--top-instructions N] [--max-mb MB]

In the pipeline (workflow/rules/timeline.smk) `snakemake_argv` builds the same command line.
Track layout, clock and SQL recipes: docs/timeline.md.
"""

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no BLAS call: spare its thread pool

from kerneltrace.cliargs import number
from kerneltrace.errors import run_cli


def build_parser() -> argparse.ArgumentParser:
    from kerneltrace.render.timeline.export import (
        DEFAULT_MAX_INSTRUCTION_SLICES,
        DEFAULT_MAX_MB,
        DEFAULT_TOP_INSTRUCTIONS,
        FORMATS,
    )

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("dispatch_dir", metavar="DISPATCH_DIR", type=Path,
                        help="ui_output_agent_<h>_dispatch_<d> directory with its wave files")
    parser.add_argument("-o", "--out", required=True, metavar="OUT",
                        help="trace file to write (e.g. dispatch.pftrace; '-' = stdout)")
    parser.add_argument("--format", choices=FORMATS, default="perfetto",
                        help="perfetto protobuf (default) or Chrome trace-event JSON, gzipped")
    parser.add_argument("--arch", help="gfx target, e.g. gfx942 (its clock converts cycles to ns)")
    parser.add_argument("--max-instruction-slices", type=number("--max-instruction-slices", minimum=0,
                                                                integer=True),
                        default=DEFAULT_MAX_INSTRUCTION_SLICES,
                        help=f"cap on instruction slices (default {DEFAULT_MAX_INSTRUCTION_SLICES})")
    parser.add_argument("--top-instructions", type=number("--top-instructions", minimum=0, integer=True),
                        default=DEFAULT_TOP_INSTRUCTIONS,
                        help=f"costliest instructions drawn first (default {DEFAULT_TOP_INSTRUCTIONS})")
    parser.add_argument("--max-mb", type=number("--max-mb", minimum=0.001), default=DEFAULT_MAX_MB,
                        help=f"size cap of the trace file in MB (default {DEFAULT_MAX_MB:g})")
    parser.add_argument("--drop-on-error", action="store_true",
                        help="pipeline: a capture that cannot be exported gets an empty trace (the plan "
                             "links none) and its reason on stderr, instead of failing the run; a "
                             "failed write still fails")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.drop_on_error:
        return _export(args)
    import traceback

    from kerneltrace import atomic
    from kerneltrace.errors import InputError
    from kerneltrace.safetext import one_line

    try:
        return _export(args)
    except atomic.WriteError:
        raise
    except Exception as err:  # one bad capture is one dropped timeline (the job's log has why)
        if not isinstance(err, InputError):
            traceback.print_exc(file=sys.stderr)
        print(f"dropped {one_line(str(args.dispatch_dir))}: no timeline ({one_line(str(err))})", file=sys.stderr)
        atomic.write_bytes(args.out, b"")  # an empty Perfetto trace: the plan links none
        return 0


def _export(args: argparse.Namespace) -> int:
    from kerneltrace.render.timeline.export import export_timeline

    result = export_timeline(args.dispatch_dir, args.out, fmt=args.format, arch=args.arch,
                             max_instruction_slices=args.max_instruction_slices,
                             top_instructions=args.top_instructions, max_mb=args.max_mb)
    stream = sys.stderr if args.out == "-" else sys.stdout
    for line in result.summary_lines():
        print(line, file=stream)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the timeline rule."""
    return [smk.params.dispatch_dir, "-o", smk.output.trace, "--drop-on-error", *smk.params.extra]


if __name__ == "__main__":
    sys.exit(run_cli(main))
