#!/usr/bin/env python3
"""Cost of the capture-bundle search (kerneltrace/model/metadata.py) per dispatch dir.

Run: .venv/bin/python bench/bench_bundle.py [--repeat 21]   (needs ../shared/captures)

For every shared dispatch dir: the median time of ``find_metadata`` (the kernel-trace and agent-info
lookups, what the analyzer and the dispatch list do) against the median time of reading its
code.json (``read_code_json``), the analysis's own first step, measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.timing import median_seconds
from kerneltrace.model.dispatchdir import find_dispatch_dirs
from kerneltrace.model.metadata import find_metadata
from kerneltrace.readers.codejson import read_code_json

SHARED = (Path(__file__).resolve().parents[2] / "shared" / "captures").resolve()



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"no {SHARED}", file=sys.stderr)
        return 2
    dirs = [item for item in find_dispatch_dirs(SHARED, metadata=False).kept]
    print("| dispatch dir | search | read code.json | search / read |")
    print("|---|---|---|---|")
    searches = []
    for item in dirs:
        search = median_seconds(lambda item=item: find_metadata(item.path, item.dispatch, [item.kernel]), args.repeat)
        read = median_seconds(lambda item=item: read_code_json(item.path / "code.json"), max(3, args.repeat // 4))
        searches.append(search)
        print(f"| `{item.path.relative_to(SHARED)}` | {search * 1e3:.2f} ms | {read * 1e3:.1f} ms "
              f"| {search / read:.2f} |")
    print(f"\nsearch: median {statistics.median(searches) * 1e3:.2f} ms, max {max(searches) * 1e3:.2f} ms "
          f"over {len(searches)} dispatch dirs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
