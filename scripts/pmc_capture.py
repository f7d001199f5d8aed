#!/usr/bin/env python3
"""PMC capture of one planned job: `rocprofv3 -i JOB -d DIR -o pmc -- bash -c CMD`, checked and promoted on success."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.errors import run_cli
from kerneltrace.pipeline import capture_cli
from kerneltrace.rocprof.stages import capture_pmc

# Rules run this script as its own process (kerneltrace/pipeline/jobs.py): it installs signal
# handlers and owns the rocprofv3 process group, which a thread of Snakemake cannot.
OWN_PROCESS = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    capture_cli.add_common_arguments(parser, job_help="job file from pmc_plan.py (one single-pass job)",
                                     cmd_help="benchmark command (one shell string, run by bash -c)")
    args = parser.parse_args(argv)
    return capture_cli.run_from_args(
        args, capture_pmc,
        lambda record: f"captured {len(record['files'])} counter file(s) into {record['capture_dir']}")


def snakemake_argv(smk) -> list[str]:
    """The command line of the pmc_capture rule."""
    return capture_cli.snakemake_common_argv(smk)


if __name__ == "__main__":
    sys.exit(run_cli(main))
