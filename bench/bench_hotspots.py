#!/usr/bin/env python3
"""Benchmark the hotspot analyzer: CLI vs a bare json.loads, in-process API, import time.

Ratios are measured against baselines in the same run (same machine load):
  * CLI run (interpreter start included) on the largest shared captures vs
    `python -c 'import json; json.loads(open(code.json).read())'` of the same file;
  * analyze_dispatch() over every shared capture, in one process;
  * `import kerneltrace` and `import kerneltrace.document.hotspot_report` vs `python -c pass`.
Usage: python bench/bench_hotspots.py [--repeat 7] [--largest 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CAPTURES = ROOT.parent / "shared" / "captures"
SCRIPT = ROOT / "scripts" / "hotspot_analyzer.py"


def timed(argv: list[str], repeat: int) -> float:
    """Median wall time of a subprocess (output discarded)."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--largest", type=int, default=3)
    args = parser.parse_args()
    if not CAPTURES.is_dir():
        print(f"no captures at {CAPTURES}; nothing to measure")
        return 0
    python = sys.executable
    dirs = sorted({p.parent for p in CAPTURES.rglob("code.json")})
    largest = sorted(dirs, key=lambda d: -(d / "code.json").stat().st_size)[: args.largest]

    print(f"# CLI vs bare json.loads (median of {args.repeat}, interpreter start included)")
    print(f"{'capture':<48} {'code.json':>9} {'json.loads':>10} {'CLI text':>9} {'CLI json':>9} {'ratio':>6}")
    for directory in largest:
        code = directory / "code.json"
        baseline = timed([python, "-c", f"import json; json.loads(open({str(code)!r}, 'rb').read())"], args.repeat)
        cli_text = timed([python, str(SCRIPT), str(directory)], args.repeat)
        cli_json = timed([python, str(SCRIPT), str(directory), "--json", "-"], args.repeat)
        size = code.stat().st_size / 1e6
        print(f"{directory.name[:48]:<48} {size:>7.2f}MB {baseline:>9.3f}s {cli_text:>8.3f}s {cli_json:>8.3f}s "
              f"{cli_text / baseline:>5.2f}x")

    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.errors import InputError

    rounds = []
    for _ in range(3):
        start = time.perf_counter()
        failures = 0
        for directory in dirs:
            try:
                analyze_dispatch(directory)
            except InputError:
                failures += 1
        rounds.append(time.perf_counter() - start)
    print(f"\n# in-process analyze_dispatch over all {len(dirs)} shared captures "
          f"({failures} clean InputError): best {min(rounds):.3f}s, median {statistics.median(rounds):.3f}s")

    bare = timed([python, "-c", "pass"], args.repeat)
    package = timed([python, "-c", "import kerneltrace"], args.repeat)
    report = timed([python, "-c", "import kerneltrace.document.hotspot_report, kerneltrace.render.text"], args.repeat)
    print("\n# import time (median, minus bare interpreter start)")
    print(f"python -c pass: {bare:.3f}s; import kerneltrace: +{package - bare:.3f}s; "
          f"import hotspot path: +{report - bare:.3f}s")
    heavy = subprocess.run(
        [python, "-c", "import sys, kerneltrace.document.hotspot_report, kerneltrace.render.text; "
         "print(sorted(m for m in ('numpy', 'pandas', 'matplotlib', 'jinja2', 'yaml') if m in sys.modules))"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()
    print(f"heavy libraries loaded on the hotspot path: {heavy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
