#!/usr/bin/env python3
"""Write a SYNTHETIC rocprofv3 capture (ATT run dir, single dispatch dir, or discovery run)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace.errors import InputError, run_cli

KERNELS = ("demo_gemm", "demo_vec_add", "demo_spill", "demo_large")
LAYOUTS = ("run", "dispatch", "discovery")


def build_parser() -> argparse.ArgumentParser:
    from kerneltrace.synth import VARIANTS

    parser = argparse.ArgumentParser(
        description="Generate a SYNTHETIC capture with the real rocprofv3 layouts "
                    "(see docs/synthetic-captures.md).")
    parser.add_argument("--kernel", choices=KERNELS, default="demo_gemm")
    parser.add_argument("--arch", choices=("gfx90a", "gfx942", "gfx950"), default="gfx942")
    parser.add_argument("--variant", choices=VARIANTS, default="v3",
                        help="code.json flavour of the decoded directory (default v3)")
    parser.add_argument("--layout", choices=LAYOUTS, default="run",
                        help="run: rocprofv3 ATT run dir (default); dispatch: one "
                             "ui_output_* dir + stats CSV; discovery: discover_* CSVs")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--scale", type=int, default=1, help="demo_large size factor")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-file", default=None,
                        help="file prefix (default att for run, discover for discovery)")
    parser.add_argument("--agent-handle", type=int, default=20001)
    parser.add_argument("--dispatch-id", type=int, default=1, help="dispatch layout only")
    parser.add_argument("--calls", type=int, default=3, help="dispatches per kernel (run layout)")
    parser.add_argument("--iteration", type=int, default=1,
                        help="which call of the kernel is traced (run layout)")
    parser.add_argument("--no-waves", action="store_true", help="omit the wave files")
    return parser


def make_spec(kernel: str, arch: str, scale: int, seed: int):
    from kerneltrace import synth

    if kernel == "demo_gemm":
        return synth.demo_gemm(arch, seed=seed)
    if kernel == "demo_vec_add":
        return synth.demo_vec_add(arch, seed=seed)
    if kernel == "demo_spill":
        return synth.demo_spill(arch, seed=seed)
    return synth.demo_large(scale, arch, seed=seed)


def main(argv: list[str] | None = None) -> int:
    from kerneltrace import synth

    args = build_parser().parse_args(argv)
    if args.scale < 1 or args.calls < 1:
        raise InputError("--scale and --calls must be >= 1", "command line", "pass positive values")
    spec = make_spec(args.kernel, args.arch, args.scale, args.seed)
    if args.layout == "dispatch":
        path = synth.write_dispatch_dir(args.out, spec, args.variant,
                                        agent_handle=args.agent_handle,
                                        dispatch_id=args.dispatch_id,
                                        with_waves=not args.no_waves)
        print(path)
    elif args.layout == "discovery":
        paths = synth.write_discovery_run(args.out, [spec], args.output_file or "discover",
                                          calls=args.calls)
        for path in paths.values():
            print(path)
    else:
        dirs = synth.write_att_run(args.out, [spec], args.output_file or "att",
                                   variant=args.variant, agent_handle=args.agent_handle,
                                   calls=args.calls, traced_iteration=args.iteration,
                                   with_waves=not args.no_waves)
        for path in dirs:
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
