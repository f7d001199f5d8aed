#!/usr/bin/env python3
"""ATT capture of one kernel: `rocprofv3 -i JOB -d DIR -o att -- bash -c CMD`, retried on empty traces,
promoted into place only on success (an earlier good capture survives a failed one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import os  # noqa: E402

from kerneltrace.cliargs import number  # noqa: E402
from kerneltrace.errors import InputError, run_cli  # noqa: E402
from kerneltrace.pipeline import capture_cli  # noqa: E402
from kerneltrace.rocprof import capture, commands, decoder, jobfile  # noqa: E402

# Rules run this script as its own process (kerneltrace/pipeline/jobs.py): it installs signal
# handlers and owns the rocprofv3 process group, which a thread of Snakemake cannot.
OWN_PROCESS = True


def preflight_decoder(att_library_path: list[str], env: dict[str, str]) -> str:
    """Fail before the (expensive) run when rocprofv3 could not decode the trace anyway."""
    lookup = decoder.find_decoder(att_library_path, env)
    if lookup.found is None:
        raise InputError(decoder.missing_message(lookup, decoder.rocm_version()), "att_capture",
                         "install the decoder, then re-run (discovery results are kept)")
    return str(lookup.found)


def att_capture(*, job_path: Path, job_format: str, cmd: str, rocprofv3: str, env_extra: dict[str, str],
                att_library_path: list[str], timeout: float, retries: int, capture_dir: Path,
                log_path: Path) -> dict[str, object]:
    env = commands.child_env(os.environ, env_extra)
    exe = commands.require_rocprofv3(rocprofv3, env)
    found = preflight_decoder(att_library_path, env)
    jobs = jobfile.load_jobs(job_path.read_text(encoding="utf-8"), job_path.suffix)
    if len(jobs) != 1:
        raise InputError(f"{len(jobs)} jobs in the ATT job file", str(job_path), "one ATT job per file")
    return capture.capture_att(rocprofv3=exe, job=jobs[0], job_format=job_format,
                               app=commands.AppCommand(cmd), env=env, final_dir=capture_dir,
                               log_path=log_path, timeout=timeout, retries=retries, decoder=found).to_dict()


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
        lambda **common: att_capture(job_format=job_format, att_library_path=args.att_library_path,
                                     retries=args.retries, **common),
        lambda record: f"captured into {record['capture_dir']} ({len(record['attempts'])} attempt(s))")


def snakemake_argv(smk) -> list[str]:
    """The command line of the att_capture rule."""
    argv = capture_cli.snakemake_common_argv(smk)
    argv += [f"--job-format={smk.params.job_format}", f"--retries={smk.params.retries}"]
    return argv + [f"--att-library-path={path}" for path in smk.params.att_library_path]


if __name__ == "__main__":
    sys.exit(run_cli(main))
