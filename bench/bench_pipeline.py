#!/usr/bin/env python3
"""Pipeline orchestration overhead: use 4 (no config) and use 1 (cmd= on the rocprofv3 test double),
full run and no-op re-run, against `snakemake --version` (Snakemake's fixed start-up) in the same run."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_pipeline_"))
    lib = work / "lib"
    lib.mkdir()
    (lib / "librocprof-trace-decoder.so").write_text("")
    env = {**os.environ, "PATH": f"{REPO / 'tests' / 'rocprofv3_double'}{os.pathsep}{os.environ['PATH']}",
           "ROCPROF_ATT_LIBRARY_PATH": str(lib)}
    smk = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-c", "2"]
    rows: dict[str, list[float]] = {"snakemake --version (baseline)": [], "use 4 full run": [],
                                    "use 4 no-op re-run": [], "use 1 full run (double)": [],
                                    "use 1 no-op re-run": []}
    for number in range(args.repeat):
        rows["snakemake --version (baseline)"].append(timed([*smk[:3], "--version"], env))
        d4, d1 = work / f"u4_{number}", work / f"u1_{number}"
        rows["use 4 full run"].append(timed([*smk, "-d", str(d4)], env))
        rows["use 4 no-op re-run"].append(timed([*smk, "-d", str(d4)], env))
        rows["use 1 full run (double)"].append(timed([*smk, "-d", str(d1), "--config", "cmd=true"], env))
        rows["use 1 no-op re-run"].append(timed([*smk, "-d", str(d1), "--config", "cmd=true"], env))
    base = statistics.median(rows["snakemake --version (baseline)"])
    print(f"| measurement | median s (n={args.repeat}) | × baseline |\n|---|---|---|")
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {median / base:.1f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
