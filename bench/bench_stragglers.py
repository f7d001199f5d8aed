#!/usr/bin/env python3
"""Cost of the straggler analysis (kerneltrace/analysis/waves/stragglers.py) inside analyze_waves.

Measures analyze_waves(workers=1) CPU time (best of --repeat, after a warm-up) with the barrier
events recorded (the default) and off (StragglerTotals / straggler_summary patched to no-ops) in
the same run, interleaved, on the shared captures with the most barrier executions.
Usage: python bench/bench_stragglers.py [--repeat 3] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.timing import cpu_seconds  # noqa: E402

NAMED = {
    "preshuffle_gemm (68 files, 2,176 barrier events)": "captures/flydsl-kernel-profiling-lib/"
    "examples/preshuffle_gemm/att_viewer/big/ui_output_agent_58177_dispatch_135",
    "flash_attn big (32 files, 992 events)": "captures/flydsl-kernel-profiling-lib/examples/"
    "flash_attn_func/att_viewer/big/ui_output_agent_38430_dispatch_44",
    "skinny_M128 hack5 (7,504 events)": "calibration/aiter-glog-fork-calibration/skinny_M128/"
    "att_hack5/ui_output_agent_50282_dispatch_20",
}


class _Off:
    @staticmethod
    def empty(barrier_rows):
        return None


def main(argv: list[str] | None = None) -> int:
    from kerneltrace.analysis.waves import analyze as module
    from kerneltrace.readers.codejson import read_code_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    args = parser.parse_args(argv)
    on = (module.StragglerTotals, module.straggler_summary)
    off = (_Off, lambda totals: None)
    print("| capture | analyze_waves (1 process), stragglers off | on | on / off |\n"
          "|---|---:|---:|---:|")
    for name, relative in NAMED.items():
        path = args.shared / relative
        if not path.is_dir():
            continue
        table = read_code_json(path / "code.json")
        module.analyze_waves(path, table, workers=1)  # warm-up: page cache, imports
        best = {"off": float("inf"), "on": float("inf")}
        for _ in range(args.repeat):
            for label, (totals, summary) in (("off", off), ("on", on)):
                module.StragglerTotals, module.straggler_summary = totals, summary
                best[label] = min(best[label], cpu_seconds(
                    lambda path=path, table=table: module.analyze_waves(path, table, workers=1)))
        module.StragglerTotals, module.straggler_summary = on
        print(f"| {name} | {best['off']:.3f} s | {best['on']:.3f} s | "
              f"{best['on'] / best['off']:.2f}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
