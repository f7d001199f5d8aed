#!/usr/bin/env python3
"""Discover kernels: run `rocprofv3 --kernel-trace --stats` on a command (or read existing stats) → kernels.tsv/.md."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace import atomic
from kerneltrace.cliargs import number
from kerneltrace.errors import run_cli
from kerneltrace.pipeline import capture_cli
from kerneltrace.rocprof import discover, stages

# Rules run this script as its own process (kerneltrace/pipeline/jobs.py): it installs signal
# handlers and owns the rocprofv3 process group, which a thread of Snakemake cannot.
OWN_PROCESS = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--cmd", help="benchmark command (one shell string, run once by bash -c)")
    source.add_argument("--stats", type=Path, help="existing *_kernel_stats.csv or rocpd *_results.db")
    parser.add_argument("--out-dir", type=Path, default=Path("discover"), help="output folder (default: discover)")
    parser.add_argument("--rocprofv3", default="rocprofv3", help="rocprofv3 executable")
    parser.add_argument("--kernel", help="regex selecting kernels (default: the top --top-kernels)")
    parser.add_argument("--top-kernels", type=number("--top-kernels", minimum=1, integer=True), default=1)
    parser.add_argument("--timeout", type=number("--timeout", minimum=0), default=3600, help="seconds (0 = none)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for the command (repeatable)")
    parser.add_argument("--log", type=Path, help="rocprofv3 log (default OUT_DIR/discover.log)")
    args = parser.parse_args(argv)
    stats = args.stats
    if stats is None:
        stats = stages.discover_stats(cmd=args.cmd, raw_dir=args.out_dir / "raw", rocprofv3=args.rocprofv3,
                                      env_extra=capture_cli.env_pairs(args.env), timeout=args.timeout,
                                      log_path=args.log or args.out_dir / "discover.log")
    rows = discover.select_kernels(discover.read_discovery(stats), args.kernel, args.top_kernels)
    markdown = discover.to_markdown(rows)
    atomic.write_many({args.out_dir / "kernels.tsv": discover.to_tsv(rows), args.out_dir / "kernels.md": markdown})
    sys.stdout.write(markdown)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the discover_kernels checkpoint (outputs in the table's folder)."""
    argv = [f"--cmd={smk.params.cmd}", "--out-dir", str(Path(smk.output.table).parent),
            f"--rocprofv3={smk.params.rocprofv3}", f"--timeout={smk.params.timeout}",
            f"--top-kernels={smk.params.top_kernels}", "--log", smk.log[0]]
    if smk.params.kernel:
        argv.append(f"--kernel={smk.params.kernel}")
    return argv + [f"--env={key}={value}" for key, value in dict(smk.params.env).items()]


if __name__ == "__main__":
    sys.exit(run_cli(main))
