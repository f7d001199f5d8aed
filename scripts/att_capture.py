#!/usr/bin/env python3
"""ATT capture of one kernel: `rocprofv3 -i JOB -d DIR -o att -- bash -c CMD`, retried on empty traces,
promoted into place only on success (an earlier good capture survives a failed one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import os  # noqa: E402

from kerneltrace import atomic  # noqa: E402
from kerneltrace.errors import InputError, run_cli  # noqa: E402
from kerneltrace.rocprof import capture, commands, decoder, jobfile  # noqa: E402


def preflight_decoder(att_library_path: list[str], env: dict[str, str]) -> str:
    """Fail before the (expensive) run when rocprofv3 could not decode the trace anyway."""
    lookup = decoder.find_decoder(att_library_path, env)
    if lookup.found is None:
        raise InputError(decoder.missing_message(lookup, decoder.rocm_version()), "att_capture",
                         "install the decoder, then re-run (discovery results are kept)")
    return str(lookup.found)


def att_capture(*, job_path: Path, job_format: str, cmd: str, rocprofv3: str, env_extra: dict[str, str],
                att_library_path: list[str], timeout: float, retries: int, capture_dir: Path,
                log_path: Path) -> capture.AttCaptureRecord:
    env = commands.child_env(os.environ, env_extra)
    exe = commands.which(rocprofv3, env)
    if not exe:
        raise InputError(f"rocprofv3 not found ({rocprofv3!r} is not an executable on PATH)",
                         "config rocprofv3", "set `rocprofv3: /opt/rocm/bin/rocprofv3` in the config")
    found = preflight_decoder(att_library_path, env)
    jobs = jobfile.load_jobs(job_path.read_text(encoding="utf-8"), job_path.suffix)
    if len(jobs) != 1:
        raise InputError(f"{len(jobs)} jobs in the ATT job file", str(job_path), "one ATT job per file")
    return capture.capture_att(rocprofv3=exe, job=jobs[0], job_format=job_format,
                               app=commands.AppCommand(cmd), env=env, final_dir=capture_dir,
                               log_path=log_path, timeout=timeout, retries=retries, decoder=found)


def main_from_snakemake(snakemake) -> None:  # noqa: ANN001
    from kerneltrace.rocprof.smk import run_job

    def job(smk) -> None:  # noqa: ANN001
        record = att_capture(job_path=Path(smk.input.job), job_format=smk.params.job_format,
                             cmd=smk.params.cmd, rocprofv3=smk.params.rocprofv3,
                             env_extra=dict(smk.params.env), att_library_path=list(smk.params.att_library_path),
                             timeout=float(smk.params.timeout), retries=int(smk.params.retries),
                             capture_dir=Path(smk.params.capture_dir), log_path=Path(smk.log[0]))
        atomic.write_json(smk.output.record, record.to_dict())

    run_job(snakemake, job)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--job", type=Path, required=True, help="job file from write_input_yaml.py")
    parser.add_argument("--cmd", required=True, help="benchmark command (one shell string, run once by bash -c)")
    parser.add_argument("--out-dir", type=Path, required=True, help="final capture folder")
    parser.add_argument("--rocprofv3", default="rocprofv3")
    parser.add_argument("--att-library-path", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=3600, help="seconds (0 = none)")
    parser.add_argument("--retries", type=int, default=2, help="extra attempts on an empty trace")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--log", type=Path, help="log file (default OUT_DIR.log)")
    args = parser.parse_args(argv)
    try:
        record = att_capture(job_path=args.job, job_format="json" if args.job.suffix == ".json" else "yaml",
                             cmd=args.cmd, rocprofv3=args.rocprofv3,
                             env_extra=dict(item.split("=", 1) for item in args.env if "=" in item),
                             att_library_path=args.att_library_path, timeout=args.timeout,
                             retries=args.retries, capture_dir=args.out_dir,
                             log_path=args.log or args.out_dir.with_suffix(".log"))
    except capture.CaptureFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    atomic.write_json(args.out_dir.with_name(args.out_dir.name + ".capture.json"), record.to_dict())
    print(f"captured into {record.capture_dir} ({len(record.attempts)} attempt(s))")
    return 0


if "snakemake" in globals():
    main_from_snakemake(snakemake)  # noqa: F821
elif __name__ == "__main__":
    sys.exit(run_cli(main))
