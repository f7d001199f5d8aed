#!/usr/bin/env python3
"""L2/HBM analyzer CLI: counter CSVs, a rocprof-compute workload dir or a rocpd .db -> text + kerneltrace.l2/1 JSON."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.cliargs import number
from kerneltrace.errors import run_cli

EA_CHANNELS_WARNING = (
    "warning: --ea-channels is ignored. The *_sum counters already cover every L2 channel; read bytes "
    "come from the request-size counters instead (128-byte requests are counted by TCC_BUBBLE_sum on "
    "gfx942, TCC_EA0_RDREQ_128B_sum on gfx950), so no channel multiplier is needed."
)


def analyze_paths(paths: list[Path], *, kernel: str | None, arch: str | None, ideal_gb: float | None,
                  peak_gbps: float | None) -> dict:
    from kerneltrace.analysis.l2.document import analyze
    from kerneltrace.readers.pmc_inputs import load_pmc_inputs

    return analyze(load_pmc_inputs(paths), kernel=kernel, arch=arch, ideal_gb=ideal_gb, peak_gbps=peak_gbps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="L2 hit rate, read-size mix, fabric read/write bytes, DRAM share, over-fetch and "
        "achieved bandwidth per dispatch and aggregated (median, spread), with decision-tree verdicts.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="*_counter_collection.csv files (each = one run), a directory with pass_N/ "
                        "subdirs, a rocprof-compute workload dir, or a rocpd .db")
    parser.add_argument("--kernel", metavar="SUBSTR", help="select the kernel (exact name or a unique substring)")
    parser.add_argument("--ideal-gb", type=number("--ideal-gb", minimum=0, exclusive_min=True), help="bytes the kernel must read per dispatch, in GB (1e9)")
    parser.add_argument("--arch", help="gfx target (default: agent_info / sysinfo / rocpd, else counter names)")
    parser.add_argument("--peak-gbps", type=number("--peak-gbps", minimum=0, exclusive_min=True), help="peak HBM bandwidth in GB/s (overrides the product table)")
    parser.add_argument("--json", metavar="PATH", help="write kerneltrace.l2/1 JSON to PATH ('-' = stdout, no text)")
    parser.add_argument("--ea-channels", type=int, metavar="N", help="accepted for compatibility; ignored (see the warning)")
    args = parser.parse_args(argv)
    if args.ea_channels is not None:
        print(EA_CHANNELS_WARNING, file=sys.stderr)
    from kerneltrace.atomic import refuse_input_overwrite

    refuse_input_overwrite((args.json,), args.files)
    doc = analyze_paths(args.files, kernel=args.kernel, arch=args.arch, ideal_gb=args.ideal_gb,
                        peak_gbps=args.peak_gbps)
    from kerneltrace import atomic

    if args.json == "-":
        atomic.write_json(args.json, doc)
        return 0
    from kerneltrace.render.l2 import format_text

    atomic.write_text("-", format_text(doc))
    if args.json:
        atomic.write_json(args.json, doc)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the l2_analysis rule (empty params are left to the defaults)."""
    argv = [*smk.params.inputs, "--json", smk.output.json]
    for option, value in (("--kernel", smk.params.kernel), ("--arch", smk.params.arch),
                          ("--ideal-gb", smk.params.ideal_gb), ("--peak-gbps", smk.params.peak_gbps)):
        if value:
            argv.append(f"{option}={value}")
    return argv


if __name__ == "__main__":
    sys.exit(run_cli(main))
