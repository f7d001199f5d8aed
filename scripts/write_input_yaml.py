#!/usr/bin/env python3
"""Write one rocprofv3 -i job file (one ATT job) for one kernel; YAML via yaml.safe_dump or JSON."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace import atomic
from kerneltrace.errors import run_cli
from kerneltrace.rocprof import jobfile


def main(argv: list[str] | None = None) -> int:
    defaults = jobfile.AttSettings()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kernel_name", help="exact kernel name as in the discovery table (escaped + anchored)")
    parser.add_argument("-o", "--output", type=Path, help="job file (suffix .yaml/.json); default stdout")
    parser.add_argument("--format", choices=jobfile.JOB_FORMATS, default="yaml")
    parser.add_argument("--iterations", default=defaults.kernel_iteration_range,
                        help="kernel_iteration_range, a set of 1-based iterations (default %(default)s)")
    parser.add_argument("--att-target-cu", default=defaults.att_target_cu)
    parser.add_argument("--att-shader-engine-mask", default=defaults.att_shader_engine_mask)
    parser.add_argument("--att-simd-select", default=defaults.att_simd_select)
    parser.add_argument("--att-buffer-size", default=defaults.att_buffer_size)
    parser.add_argument("--att-library-path", action="append", default=[])
    parser.add_argument("--truncate-kernels", action="store_true", help="set truncate_kernels in the job")
    args = parser.parse_args(argv)
    def number(value: object) -> object:  # decimal digits are a number (as in the config), 0x.. stays text
        return int(value) if str(value).isdigit() else value

    settings = {"kernel_iteration_range": args.iterations,
                "att_target_cu": number(args.att_target_cu),
                "att_shader_engine_mask": number(args.att_shader_engine_mask),
                "att_simd_select": number(args.att_simd_select),
                "att_buffer_size": number(args.att_buffer_size),
                "att_library_path": args.att_library_path,
                "truncate_kernels": args.truncate_kernels}
    text = jobfile.att_job_text(args.kernel_name, settings, args.format)
    if args.output:
        atomic.write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the write_input_yaml rule (ATT settings from the config)."""
    settings = dict(smk.params.settings)
    argv = ["-o", smk.output.job, f"--format={smk.params.job_format}",
            f"--iterations={settings['kernel_iteration_range']}",
            f"--att-target-cu={settings['att_target_cu']}",
            f"--att-shader-engine-mask={settings['att_shader_engine_mask']}",
            f"--att-simd-select={settings['att_simd_select']}",
            f"--att-buffer-size={settings['att_buffer_size']}"]
    argv += [f"--att-library-path={path}" for path in settings.get("att_library_path") or []]
    if settings.get("truncate_kernels"):
        argv.append("--truncate-kernels")
    return [*argv, "--", smk.params.kernel_name]


if __name__ == "__main__":
    sys.exit(run_cli(main))
