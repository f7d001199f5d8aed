#!/usr/bin/env python3
"""ATT capture of one kernel: `rocprofv3 -i JOB -d DIR -o att -- bash -c CMD`, retried on empty traces,
promoted into place only on success (an earlier good capture survives a failed one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.cliargs import number
from kerneltrace.errors import run_cli
from kerneltrace.pipeline import capture_cli
from kerneltrace.rocprof import jobfile, stages

# Rules run this script as its own process (kerneltrace/pipeline/jobs.py): it installs signal
# handlers and owns the rocprofv3 process group, which a thread of Snakemake cannot.
OWN_PROCESS = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    capture_cli.add_common_arguments(parser, job_help="job file from write_input_yaml.py",
                                     cmd_help="benchmark command (one shell string, run once by bash -c)")
    parser.add_argument("--att-library-path", action="append", default=[])
    parser.add_argument("--job-format", choices=jobfile.JOB_FORMATS, help="default: from the job file's suffix")
    parser.add_argument("--retries", type=number("--retries", minimum=0, integer=True), default=2, help="extra attempts on an empty trace")
    args = parser.parse_args(argv)
    job_format = args.job_format or ("json" if args.job.suffix == ".json" else "yaml")
    return capture_cli.run_from_args(
        args,
        lambda **common: stages.capture_att_job(job_format=job_format, att_library_path=args.att_library_path,
                                            retries=args.retries, **common),
        lambda record: f"captured into {record['capture_dir']} ({len(record['attempts'])} attempt(s))")


def snakemake_argv(smk) -> list[str]:
    """The command line of the att_capture rule."""
    argv = capture_cli.snakemake_common_argv(smk)
    argv += [f"--job-format={smk.params.job_format}", f"--retries={smk.params.retries}"]
    return argv + [f"--att-library-path={path}" for path in smk.params.att_library_path]


if __name__ == "__main__":
    sys.exit(run_cli(main))
