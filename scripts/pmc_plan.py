#!/usr/bin/env python3
"""PMC planner CLI: one rocprofv3 input file per single-pass counter job (+ plan.json describing them)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402

from kerneltrace.errors import InputError, run_cli  # noqa: E402

PLAN_SCHEMA = "kerneltrace.pmc-plan/1"


def write_plan(*, arch: str, kernel_regex: str, out_dir: Path, metrics: list[str] | None,
               job_format: str, capture_dir: str | None, output_location: bool = True) -> dict:
    """Write pmc_job<N>.<ext> files and plan.json into out_dir; return the plan document."""
    from kerneltrace import atomic
    from kerneltrace.counters.planner import plan_jobs
    from kerneltrace.rocprof.jobfile import dump_jobs, job_suffix, pmc_job_document

    jobs = plan_jobs(arch, metrics or None)
    suffix = job_suffix(job_format)
    entries = []
    for number, job in enumerate(jobs, start=1):
        name = f"pmc_job{number}"
        location = f"{capture_dir or out_dir}/{name}" if output_location else None
        document = pmc_job_document(list(job.counters), kernel_regex, location, "pmc")
        path = out_dir / f"{name}{suffix}"
        atomic.write_text(path, dump_jobs([document], job_format))
        entries.append({"file": path.name, "counters": list(job.counters), "metrics": list(job.metrics),
                        "path_kind": job.path_kind, "block_usage": job.block_usage()})
    plan = {"schema": PLAN_SCHEMA, "arch": arch, "kernel_include_regex": kernel_regex,
            "job_format": job_format, "jobs": entries}
    atomic.write_json(out_dir / "plan.json", plan)
    return plan


def arch_from_agent_info(directory: Path) -> str | None:
    """gfx target of the first GPU in any *agent_info.csv under `directory` (discovery output)."""
    from kerneltrace.readers.csvs import gpu_agents, read_agent_info

    for info in sorted(directory.rglob("*agent_info.csv")):
        gpus = gpu_agents(read_agent_info(info))
        if gpus and gpus[0].name:
            return gpus[0].name
    return None


def main(argv: list[str] | None = None) -> int:
    from kerneltrace.counters.table import DEFAULT_METRICS, METRICS, SUPPORTED_ARCHES

    parser = argparse.ArgumentParser(
        description="Plan single-pass PMC jobs (every job fits the per-block counter limits) and write "
        "one rocprofv3 -i input file per job.",
        epilog=f"metrics: {', '.join(METRICS)}; default: {', '.join(DEFAULT_METRICS)}",
    )
    parser.add_argument("--arch", help=f"gfx target: {', '.join(SUPPORTED_ARCHES)} (default: from --discover-dir)")
    parser.add_argument("--discover-dir", type=Path, help="a discovery output folder whose agent_info CSV names the GPU")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--kernel", metavar="REGEX", help="kernel_include_regex, passed through as written")
    which.add_argument("--kernel-name", metavar="EXACT", help="exact kernel name (escaped into an anchored regex)")
    parser.add_argument("--out-dir", type=Path, required=True, help="where the job files and plan.json go")
    parser.add_argument("--metrics", nargs="+", metavar="METRIC", help="metrics to plan (default: the L2/HBM set)")
    parser.add_argument("--format", choices=("json", "yaml"), default="json", help="job file format (default json)")
    parser.add_argument("--capture-dir", help="output_directory base written into the jobs (default OUT_DIR)")
    parser.add_argument("--no-output-location", action="store_true",
                        help="write no output_directory into the jobs (the capture command line sets it)")
    args = parser.parse_args(argv)
    from kerneltrace.rocprof.jobfile import exact_name_regex

    metrics = [m for item in (args.metrics or []) for m in item.split(",") if m]
    regex = args.kernel if args.kernel is not None else exact_name_regex(args.kernel_name)
    arch = args.arch or (arch_from_agent_info(args.discover_dir) if args.discover_dir else None)
    if not arch:
        raise InputError("GPU arch unknown for the PMC plan", "--arch / config pmc.arch",
                         "pass --arch gfx942 (or gfx90a / gfx950); in the pipeline set pmc: {arch: gfx942}")
    plan = write_plan(arch=arch, kernel_regex=regex, out_dir=args.out_dir, metrics=metrics or None,
                      job_format=args.format, capture_dir=args.capture_dir,
                      output_location=not args.no_output_location)
    for entry in plan["jobs"]:
        usage = ", ".join(f"{block} {n}" for block, n in sorted(entry["block_usage"].items()))
        print(f"{args.out_dir / entry['file']}: {' '.join(entry['counters'])}  [{usage}]")
    print(f"{len(plan['jobs'])} single-pass job(s) for {arch}; run each as "
          "`rocprofv3 -i FILE -- <app>`; validate with `rocprofv3-avail pmc-check` first")
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the pmc_plan rule (arch from config, else the discovery's agent_info)."""
    argv = [f"--kernel-name={smk.params.kernel_name}", "--out-dir", smk.output.jobs,
            f"--format={smk.params.job_format}", "--no-output-location",
            f"--discover-dir={smk.params.discover_dir}"]
    if smk.params.arch:
        argv.append(f"--arch={smk.params.arch}")
    if smk.params.metrics:
        argv += ["--metrics", *smk.params.metrics]
    return argv


if __name__ == "__main__":
    sys.exit(run_cli(main))
