#!/usr/bin/env python3
"""Hostile asm benchmark: the analysis + text report of one capture whose asm holds one long token, against the clean capture.

One row of a synthetic vec_add dispatch dir gets an asm token of N characters (an encoding-suffix
run without a match, the worst case of the old `_ENCODING_SUFFIX` regex); the ratio to the
clean capture, analysed in the same run, shows whether the cost grows with N (linear parsing:
flat) or with N² (the old regex: ~14 s for 120 KB). Usage: python bench/bench_hostile_asm.py
[--sizes 20000 200000 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.timing import best_seconds  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.render.text import render_text
    from kerneltrace.synth import spec as synth_spec
    from kerneltrace.synth.writers import write_dispatch_dir

    with tempfile.TemporaryDirectory() as tmp:
        clean = write_dispatch_dir(Path(tmp) / "clean", synth_spec.demo_vec_add())

        def run(path: Path) -> None:
            render_text(analyze_dispatch(path, arch="gfx942", waves=True))

        baseline = best_seconds(lambda: run(clean), args.repeat)
        print(f"clean capture: {baseline * 1000:.1f} ms (best of {args.repeat})")
        print("| asm token | analysis + text report | / clean |")
        print("|---:|---:|---:|")
        for size in args.sizes:
            hostile = Path(tmp) / f"h{size}" / clean.name
            shutil.copytree(clean, hostile)
            document = json.loads((hostile / "code.json").read_text())
            row = next(i for i, r in enumerate(document["code"]) if not r[0].lstrip().startswith(";"))
            document["code"][row][0] = "v_add" + "_e32" * (size // 4) + "x"
            (hostile / "code.json").write_text(json.dumps(document))
            seconds = best_seconds(lambda path=hostile: run(path), args.repeat)
            print(f"| {size:,} chars | {seconds * 1000:.1f} ms | {seconds / baseline:.1f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
