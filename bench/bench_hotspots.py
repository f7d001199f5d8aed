#!/usr/bin/env python3
"""Benchmark the hotspot CLI against the original hotspot_analyzer.py on every shared capture.

Ratios are measured against baselines in the same run (same machine load):
  * `scripts/hotspot_analyzer.py DIR --topk 15 --mode both` (interpreter start included) against
    the original FlyDSL `hotspot_analyzer.py DIR --topk 15 --mode both` (the skill's script in
    ROCm/FlyDSL; not part of this repository: pass its path with
    --original or KERNELTRACE_ORIGINAL_ANALYZER) on every dispatch dir with a code.json under
    ../shared/captures; one interleaved run (ours, original, original, ours, … per capture and
    round), median wall time per capture and contender, bytecode caches warm
    (PYTHONDONTWRITEBYTECODE removed from the children's environment, one warm-up run each);
  * the median and worst ratio ours / original over the captures the original completes, and
    the same by code.json size class;
  * `import kerneltrace` and the hotspot start-up path vs `python -c pass`, and the heavy
    libraries the text-only start-up path loads (none expected).
Usage: python bench/bench_hotspots.py [--repeat 9] [--original PATH] [--captures DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CAPTURES = ROOT.parent / "shared" / "captures"
SCRIPT = ROOT / "scripts" / "hotspot_analyzer.py"
ARGS = ["--topk", "15", "--mode", "both"]
SIZE_CLASSES = ((0.1e6, "< 0.1 MB"), (1e6, "0.1-1 MB"), (float("inf"), ">= 1 MB"))
# bytecode caching as a user has it (this workplace may set PYTHONDONTWRITEBYTECODE)
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run_once(argv: list[str]) -> tuple[float, float, int]:
    """Wall time, CPU time (user + system of the child) and exit code of one run (output discarded)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, child.returncode


def timed(argv: list[str], repeat: int) -> float:
    """Median wall time of a subprocess (output discarded)."""
    return statistics.median(run_once(argv)[0] for _ in range(repeat))


def capture_dirs() -> list[Path]:
    """Every dispatch dir with a code.json under the shared captures, smallest code.json first."""
    dirs = {path.parent for path in CAPTURES.rglob("code.json")}
    return sorted(dirs, key=lambda d: ((d / "code.json").stat().st_size, str(d)))


def versus_original(original: Path, repeat: int) -> None:
    """The per-capture table, then median and worst ratio (overall and by size class)."""
    python = sys.executable
    contenders = {"ours": [python, str(SCRIPT)], "original": [python, str(original)]}
    dirs = capture_dirs()
    samples = {(d, name): [] for d in dirs for name in contenders}
    codes: dict[tuple[Path, str], int] = {}
    for directory in dirs:  # warm-up: page cache and .pyc files
        for name, argv in contenders.items():
            codes[directory, name] = run_once([*argv, str(directory), *ARGS])[2]
    for attempt in range(repeat):
        for directory in dirs:
            order = list(contenders.items())
            for name, argv in order if (attempt + dirs.index(directory)) % 2 == 0 else order[::-1]:
                samples[directory, name].append(run_once([*argv, str(directory), *ARGS])[:2])

    print(f"# CLI vs the original hotspot_analyzer.py ({len(dirs)} shared captures, median of "
          f"{repeat} interleaved runs, interpreter start included, .pyc warm; wall time, and CPU "
          "time = the child's user + system)\n")
    print("| capture | code.json MB | original s | ours s | ours / original (wall) | ours / original (CPU) |")
    print("|---|---:|---:|---:|---:|---:|")
    ratios: dict[Path, tuple[float, float]] = {}
    for directory in dirs:
        ours = [statistics.median(v) for v in zip(*samples[directory, "ours"], strict=True)]
        theirs = [statistics.median(v) for v in zip(*samples[directory, "original"], strict=True)]
        size = (directory / "code.json").stat().st_size
        label = str(directory.relative_to(CAPTURES))
        label = label if len(label) <= 70 else "…" + label[-69:]
        if codes[directory, "original"] != 0:
            note = f"original exits {codes[directory, 'original']}"
            print(f"| {label} | {size / 1e6:.2f} | ({note}) {theirs[0]:.3f} | {ours[0]:.3f} | — | — |")
            continue
        ratios[directory] = (ours[0] / theirs[0], ours[1] / theirs[1])
        print(f"| {label} | {size / 1e6:.2f} | {theirs[0]:.3f} | {ours[0]:.3f} | "
              f"{ratios[directory][0]:.2f}x | {ratios[directory][1]:.2f}x |")

    print("\n| code.json size | captures | median (wall) | worst (wall) | median (CPU) | worst (CPU) |")
    print("|---|---:|---:|---:|---:|---:|")
    lower = 0.0
    classes = [*SIZE_CLASSES, (None, "all the original completes")]
    for upper, name in classes:
        members = [r for d, r in ratios.items()
                   if upper is None or lower <= (d / "code.json").stat().st_size < upper]
        lower = upper if upper is not None else lower
        if members:
            wall, cpu = [r[0] for r in members], [r[1] for r in members]
            print(f"| {name} | {len(members)} | {statistics.median(wall):.2f}x | {max(wall):.2f}x | "
                  f"{statistics.median(cpu):.2f}x | {max(cpu):.2f}x |")


def start_up(repeat: int) -> None:
    python = sys.executable
    bare = timed([python, "-c", "pass"], repeat)
    package = timed([python, "-c", "import kerneltrace"], repeat)
    report = timed([python, "-c", "import kerneltrace.document.hotspot_report, kerneltrace.render.text"], repeat)
    print("\n# import time (median, minus bare interpreter start)")
    print(f"python -c pass: {bare:.3f}s; import kerneltrace: +{package - bare:.3f}s; "
          f"import hotspot path: +{report - bare:.3f}s")
    heavy = subprocess.run(
        [python, "-c", "import sys, kerneltrace.document.hotspot_report, kerneltrace.render.text; "
         "print(sorted(m for m in ('numpy', 'pandas', 'matplotlib', 'jinja2', 'yaml', 'dataclasses') "
         "if m in sys.modules))"],
        capture_output=True, text=True, check=False, env=ENV,
    ).stdout.strip()
    print(f"heavy modules loaded on the hotspot path: {heavy}")


def main() -> int:
    global CAPTURES  # --captures: measure another copy of the shared captures
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--original", type=Path, default=os.environ.get("KERNELTRACE_ORIGINAL_ANALYZER"),
                        help="the original hotspot_analyzer.py (ROCm/FlyDSL, blob dfa24fc9; "
                        "default $KERNELTRACE_ORIGINAL_ANALYZER)")
    parser.add_argument("--captures", type=Path, default=CAPTURES, help=f"real captures (default {CAPTURES})")
    args = parser.parse_args()
    CAPTURES = args.captures
    if not CAPTURES.is_dir():
        print(f"no captures at {CAPTURES}; nothing to measure")
        return 0
    if args.original is None or not Path(args.original).is_file():
        print("no --original hotspot_analyzer.py (see bench/README.md for how to get it): "
              "CLI comparison skipped")
    else:
        versus_original(Path(args.original), args.repeat)
    start_up(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
