#!/usr/bin/env python3
"""PMC planner CLI: one rocprofv3 input file per single-pass counter job (+ plan.json describing them)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.errors import InputError, run_cli


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
    from kerneltrace import atomic
    from kerneltrace.model.metadata import first_gpu_arch
    from kerneltrace.rocprof.jobfile import exact_name_regex, pmc_plan_files

    metrics = [m for item in (args.metrics or []) for m in item.split(",") if m]
    regex = args.kernel if args.kernel is not None else exact_name_regex(args.kernel_name)
    arch = args.arch or (first_gpu_arch(args.discover_dir) if args.discover_dir else None)
    if not arch:
        raise InputError("GPU arch unknown for the PMC plan", "--arch / config pmc.arch",
                         "pass --arch gfx942 (or gfx90a / gfx950); in the pipeline set pmc: {arch: gfx942}")
    capture_dir = None if args.no_output_location else str(args.capture_dir or args.out_dir)
    files, plan = pmc_plan_files(arch=arch, kernel_regex=regex, metrics=metrics or None,
                                 job_format=args.format, capture_dir=capture_dir)
    atomic.write_many({**{args.out_dir / name: text for name, text in files.items()},
                       args.out_dir / "plan.json": atomic.json_text(plan)})
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
