#!/usr/bin/env python3
"""Benchmark the MCP agent server: a real SDK client session vs one CLI run per question.

Baseline in the same run: what an agent paid per question before the server, one
`scripts/hotspot_analyzer.py DIR [--waves] --json -` process. Measured through a real MCP session over
stdio: the first summary() of a capture (analysis included), then the median of later queries on the
loaded capture (summary, hotspots, explain, next_capture), and the answer sizes.
Usage: python bench/bench_agent.py [--repeat 5]
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


def cli_seconds(directory: Path, waves: bool, repeat: int) -> float:
    argv = [sys.executable, str(SCRIPT), str(directory), "--json", "-", *(["--waves"] if waves else [])]
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not CAPTURES.is_dir():
        print(f"no captures at {CAPTURES}; nothing to measure")
        return 0
    from tests.agent_client import McpSession

    session = McpSession([CAPTURES])
    try:
        _, listing, _ = session.answer("list_dispatches")
        print(f"# MCP session vs one CLI run per question (median of {args.repeat}; ms)")
        print(f"{'capture':<44} {'waves':>5} {'CLI':>7} {'first':>7} {'later':>7} {'later/CLI':>9} {'summary chars':>13}")
        warm_all, ratios, sizes = [], [], []
        for row in listing["dispatches"]:
            name = row["dir"]
            directory = CAPTURES / name
            start = time.perf_counter()
            text, summary, error = session.answer("summary", dir=name)
            first = time.perf_counter() - start
            if error:
                print(f"{Path(name).name[:44]:<44} error: {text}")
                continue
            first_id = summary["findings"][0]["id"] if summary["findings"] else "#1"
            queries = [("summary", {"dir": name}), ("hotspots", {"dir": name, "by": "instruction", "top": 10}),
                       ("explain", {"dir": name, "id": first_id}), ("next_capture", {"dir": name})]
            warm = []
            for _ in range(args.repeat):
                for tool, arguments in queries:
                    start = time.perf_counter()
                    session.answer(tool, **arguments)
                    warm.append(time.perf_counter() - start)
            cli = cli_seconds(directory, row["wave_files"] > 0, args.repeat)
            later = statistics.median(warm)
            warm_all.extend(warm)
            ratios.append(later / cli)
            sizes.append(len(text))
            print(f"{Path(name).name[:44]:<44} {row['wave_files'] > 0!s:>5} {cli * 1e3:>7.0f} {first * 1e3:>7.0f} "
                  f"{later * 1e3:>7.1f} {later / cli:>8.3f}x {len(text):>13}")
        print(f"\nlater queries: median {statistics.median(warm_all) * 1e3:.1f} ms, "
              f"p90 {statistics.quantiles(warm_all, n=10)[-1] * 1e3:.1f} ms, max {max(warm_all) * 1e3:.1f} ms; "
              f"later/CLI median {statistics.median(ratios):.3f}x, worst {max(ratios):.3f}x; "
              f"summary size max {max(sizes)} chars (bound 4000)")
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
