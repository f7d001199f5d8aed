#!/usr/bin/env python3
"""Byte-identity and same-run timing of the batch index (scripts/render_index.py) between two checkouts.

A reports/ tree is made once in a temporary folder from synthetic dispatch dirs (kerneltrace.synth)
analysed with this checkout: runs with kept hotspot JSONs (grid/workgroup from their kernel-trace
rows), twins (one kernel and dispatch id captured twice), a run whose hotspots/ holds two copies of
one dispatch dir and a damaged JSON, a summary-only run, a regression verdict, a run of `--many`
dispatches. render_index.py then runs from both checkouts with this interpreter over that tree;
index.html, stdout, stderr and the exit code are compared byte for byte. With --time, the median of
--repeat runs per checkout (interpreter start and imports included).
Usage: python bench/index_identity.py --baseline-root OTHER_CHECKOUT [--time] [--repeat N] [--many N]
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
from kerneltrace.plan.summary import build_summary  # noqa: E402
from kerneltrace.synth import spec as synth_spec  # noqa: E402
from kerneltrace.synth.writers import write_dispatch_dir  # noqa: E402


def _write_run(reports: Path, run: str, docs: list[dict], *, keep: list[dict] | None = None) -> Path:
    run_dir = reports / run
    (run_dir / "hotspots").mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(json.dumps(build_summary(docs, [], run=run), indent=2))
    for n, doc in enumerate(docs if keep is None else keep):
        (run_dir / "hotspots" / f"k{n:03d}.json").write_text(json.dumps(doc))
    return run_dir


def _with_trace_row(doc: dict, n: int) -> dict:
    """A copy of ``doc`` carrying a kernel-trace row (synthetic dirs have none): grid, workgroup, time."""
    doc = json.loads(json.dumps(doc))
    doc.setdefault("metadata", {})["kernel_trace"] = {
        "grid_size": [256 * (n + 1), 1, 1], "workgroup_size": [64 * (1 + n % 4), 1, 1],
        "kernel_time_ns": 1000 + 37 * n}
    return doc


def make_reports(tmp: Path, many: int) -> Path:
    caps, reports = tmp / "caps", tmp / "reports"
    analyzed = {}
    for name, spec, ident in (("vec", synth_spec.demo_vec_add(), 3), ("vec2", synth_spec.demo_vec_add(seed=1), 4),
                              ("gemm", synth_spec.demo_gemm(), 5), ("twin1", synth_spec.demo_vec_add(), 7),
                              ("twin2", synth_spec.demo_vec_add(), 7)):
        doc = analyze_dispatch(write_dispatch_dir(caps / name, spec, dispatch_id=ident), arch="gfx942")
        analyzed[name] = _with_trace_row(doc, ident)
    _write_run(reports, "alpha", [analyzed["vec"], analyzed["gemm"]])
    _write_run(reports, "twins", [analyzed["twin1"], analyzed["twin2"]])
    damaged = _write_run(reports, "dup_and_damaged", [analyzed["vec"], analyzed["vec2"]],
                         keep=[analyzed["vec"], _with_trace_row(analyzed["vec"], 11), analyzed["vec2"]])
    (damaged / "hotspots" / "k999.json").write_text("{not json")
    _write_run(reports, "summary_only", [analyzed["gemm"]], keep=[])
    reg = _write_run(reports, "regressed", [analyzed["vec2"]])
    (reg / "regression.json").write_text(json.dumps({"verdict": "regressed"}))
    docs = []
    for n in range(many):
        doc = _with_trace_row(analyzed["vec" if n % 2 else "gemm"], n)
        doc["dispatch_dir"] = f"{doc['dispatch_dir']}_{n}"
        doc["dispatch"] = {**(doc.get("dispatch") or {}), "id": 100 + n}
        docs.append(doc)
    _write_run(reports, "many", docs)
    return reports


def run_index(root: Path, reports: Path, out: Path) -> dict[str, bytes]:
    proc = subprocess.run([sys.executable, str(root / "scripts" / "render_index.py"), "--out", str(out),
                           str(reports)], capture_output=True, cwd=root, check=False)
    return {"rc": str(proc.returncode).encode(), "stdout": proc.stdout, "stderr": proc.stderr,
            "index.html": out.read_bytes() if out.exists() else b"<absent>"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline-root", type=Path, required=True)
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--many", type=int, default=200, help="dispatches of the large run")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="index_identity_"))
    try:
        reports = make_reports(tmp, args.many)
        base = run_index(args.baseline_root.resolve(), reports, tmp / "base.html")
        head = run_index(HEAD, reports, tmp / "head.html")
        differ = [key for key in base if base[key] != head[key]]
        print(f"{len(base)} outputs compared ({len(list(reports.glob('*/summary.json')))} runs), "
              f"{len(differ)} differ{': ' + ', '.join(differ) if differ else ''}")
        if args.time:
            root = args.baseline_root.resolve()
            b, h = alternating_medians(lambda: run_index(root, reports, tmp / "base.html"),
                                       lambda: run_index(HEAD, reports, tmp / "head.html"), args.repeat)
            print(ratio_line(f"render_index.py median of {args.repeat}", b, h))
        return 1 if differ else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
