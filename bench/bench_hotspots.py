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
  * with --extra-captures DIR ...: the dispatch dirs under other capture roots too (captures not
    among the shared ones, e.g. held-out bundles), measured in the same interleaved run and
    summarised apart as well as together.
Usage: python bench/bench_hotspots.py [--repeat 9] [--original PATH] [--captures DIR]
                                      [--extra-captures DIR ...]
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


def capture_dirs(root: Path) -> list[Path]:
    """Every dispatch dir with a code.json under one capture root, smallest code.json first."""
    dirs = {path.parent for path in root.rglob("code.json")}
    return sorted(dirs, key=lambda d: ((d / "code.json").stat().st_size, str(d)))


def label_of(directory: Path, roots: dict[Path, str]) -> str:
    """The dispatch dir relative to its root (the root's name first for an extra root), ≤ 70 chars."""
    root = next(r for r in roots if directory.is_relative_to(r))
    label = str(directory.relative_to(root))
    label = label if not roots[root] else f"{roots[root]}:{label}"
    return label if len(label) <= 70 else "…" + label[-69:]


def summary(ratios: dict[Path, tuple[float, float]], title: str) -> None:
    """Median and worst ratio of one set of captures, by code.json size class and overall."""
    print(f"\n{title}\n")
    print("| code.json size | captures | median (wall) | worst (wall) | median (CPU) | worst (CPU) |")
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


def versus_original(original: Path, repeat: int, extra: list[Path]) -> None:
    """The per-capture table, then median and worst ratio (overall and by size class), for the
    shared captures, the extra roots and both together."""
    python = sys.executable
    contenders = {"ours": [python, str(SCRIPT)], "original": [python, str(original)]}
    roots = {CAPTURES: "", **{root: root.name for root in extra}}
    by_root = {root: capture_dirs(root) for root in roots}
    dirs = [d for root in roots for d in by_root[root]]
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

    extra_note = f" + {len(dirs) - len(by_root[CAPTURES])} under {', '.join(map(str, extra))}" if extra else ""
    print(f"# CLI vs the original hotspot_analyzer.py ({len(by_root[CAPTURES])} shared captures{extra_note}, median of "
          f"{repeat} interleaved runs, interpreter start included, .pyc warm; wall time, and CPU "
          "time = the child's user + system)\n")
    print("| capture | code.json MB | original s | ours s | ours / original (wall) | ours / original (CPU) |")
    print("|---|---:|---:|---:|---:|---:|")
    ratios: dict[Path, tuple[float, float]] = {}
    for directory in dirs:
        ours = [statistics.median(v) for v in zip(*samples[directory, "ours"], strict=True)]
        theirs = [statistics.median(v) for v in zip(*samples[directory, "original"], strict=True)]
        size = (directory / "code.json").stat().st_size
        label = label_of(directory, roots)
        if codes[directory, "original"] != 0:
            note = f"original exits {codes[directory, 'original']}"
            print(f"| {label} | {size / 1e6:.2f} | ({note}) {theirs[0]:.3f} | {ours[0]:.3f} | — | — |")
            continue
        ratios[directory] = (ours[0] / theirs[0], ours[1] / theirs[1])
        print(f"| {label} | {size / 1e6:.2f} | {theirs[0]:.3f} | {ours[0]:.3f} | "
              f"{ratios[directory][0]:.2f}x | {ratios[directory][1]:.2f}x |")

    shared = set(by_root[CAPTURES])
    summary({d: r for d, r in ratios.items() if d in shared}, f"shared captures ({CAPTURES})")
    if extra:
        for root in extra if len(extra) > 1 else ():
            summary({d: r for d, r in ratios.items() if d in set(by_root[root])}, f"extra captures ({root})")
        summary({d: r for d, r in ratios.items() if d not in shared}, f"extra captures ({', '.join(map(str, extra))})")
        summary(ratios, "all captures")


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
    parser.add_argument("--extra-captures", type=Path, nargs="+", default=[], metavar="DIR",
                        help="more capture roots (every dispatch dir with a code.json under each), measured "
                        "in the same run and summarised apart")
    args = parser.parse_args()
    CAPTURES = args.captures
    if not CAPTURES.is_dir():
        print(f"no captures at {CAPTURES}; nothing to measure")
        return 0
    if args.original is None or not Path(args.original).is_file():
        print("no --original hotspot_analyzer.py (see bench/README.md for how to get it): "
              "CLI comparison skipped")
    else:
        missing = [root for root in args.extra_captures if not root.is_dir()]
        if missing:
            print(f"no capture root at {missing[0]}", file=sys.stderr)
            return 2
        versus_original(Path(args.original), args.repeat, [root.resolve() for root in args.extra_captures])
    start_up(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
