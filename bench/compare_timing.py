#!/usr/bin/env python3
"""Same-run timing (and byte-identity) of the compare CLI (scripts/compare.py) between two checkouts.

Before/after hotspot JSONs are made once from synthetic dispatch dirs (kerneltrace.synth, analysed
with this checkout): two builds of the demo GEMM (different loop counts: the instruction alignment
inserts and deletes), two seeds of the vector add, and two seeds of the large kernel (`--scale`:
thousands of instructions, where the per-instruction table is longest). compare.py runs on each pair
from both checkouts with this interpreter (--json and --markdown); stdout, stderr, exit code and both
outputs are compared byte for byte, and the median of --repeat runs per checkout is printed
(alternating checkouts; interpreter start and imports included), then the in-process cost of one
`compare()` call with pandas already imported (the pipeline's case). The real calibration pairs are
covered by bench/plan_identity.py.
Usage: python bench/compare_timing.py --baseline-root OTHER_CHECKOUT [--repeat N] [--scale N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HEAD = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HEAD))

from bench.timing import alternating_medians, ratio_line  # noqa: E402
from kerneltrace.document.hotspot_report import analyze_dispatch  # noqa: E402
from kerneltrace.synth import spec as synth_spec  # noqa: E402
from kerneltrace.synth.writers import write_dispatch_dir  # noqa: E402


def make_pairs(tmp: Path, scale: int) -> dict[str, tuple[Path, Path]]:
    specs = {
        "gemm": (synth_spec.demo_gemm(iterations=8), synth_spec.demo_gemm(iterations=6)),
        "vec_add": (synth_spec.demo_vec_add(seed=0), synth_spec.demo_vec_add(seed=1)),
        "large": (synth_spec.demo_large(scale, seed=0), synth_spec.demo_large(scale, seed=1)),
    }
    pairs = {}
    for name, (before, after) in specs.items():
        paths = []
        for side, spec in (("before", before), ("after", after)):
            doc = analyze_dispatch(write_dispatch_dir(tmp / "caps" / name / side, spec), arch="gfx942")
            path = tmp / f"{name}_{side}.json"
            path.write_text(json.dumps(doc))
            paths.append(path)
        pairs[name] = (paths[0], paths[1])
    return pairs


def run_compare(root: Path, pair: tuple[Path, Path], out: Path) -> dict[str, bytes]:
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():
        stale.unlink()
    proc = subprocess.run([sys.executable, str(root / "scripts" / "compare.py"), str(pair[0]), str(pair[1]),
                           "--quiet", "--json", str(out / "compare.json"), "--markdown", str(out / "compare.md")],
                          capture_output=True, cwd=root, check=False)
    result = {"rc": str(proc.returncode).encode(), "stdout": proc.stdout, "stderr": proc.stderr}
    for name in ("compare.json", "compare.md"):
        result[name] = (out / name).read_bytes() if (out / name).exists() else b"<absent>"
    return result


IN_PROCESS = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import pandas  # noqa: F401  (the Snakemake process has it loaded already)
from kerneltrace.compare.document import compare
before, after = (json.load(open(p)) for p in sys.argv[2:4])
compare(before, after)
start = time.perf_counter()
for _ in range(int(sys.argv[4])):
    compare(before, after)
print((time.perf_counter() - start) / int(sys.argv[4]))
"""


def in_process(root: Path, pair: tuple[Path, Path], loops: int) -> float:
    """Seconds per `compare()` call with pandas already imported (as in the Snakemake process)."""
    proc = subprocess.run([sys.executable, "-c", IN_PROCESS, str(root), str(pair[0]), str(pair[1]), str(loops)],
                          capture_output=True, text=True, cwd=root, check=True)
    return float(proc.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline-root", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=int, default=4, help="size of the large kernel pair")
    args = parser.parse_args(argv)
    base_root = args.baseline_root.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="compare_timing_"))
    try:
        pairs = make_pairs(tmp, args.scale)
        compared, differ = 0, []
        for name, pair in pairs.items():
            base, head = run_compare(base_root, pair, tmp / "base"), run_compare(HEAD, pair, tmp / "head")
            compared += len(base)
            differ += [f"{name}:{key}" for key in base if base[key] != head[key]]
        print(f"{compared} outputs compared ({len(pairs)} pairs), {len(differ)} differ"
              f"{': ' + ', '.join(differ) if differ else ''}")
        for name, pair in pairs.items():
            b, h = alternating_medians(lambda pair=pair: run_compare(base_root, pair, tmp / "base"),
                                       lambda pair=pair: run_compare(HEAD, pair, tmp / "head"), args.repeat)
            print(ratio_line(f"compare.py {name} median of {args.repeat}", b, h))
            b, h = in_process(base_root, pair, 20), in_process(HEAD, pair, 20)
            print(ratio_line("  compare() in-process, pandas loaded", b, h, "ms", 1e3))
        return 1 if differ else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
