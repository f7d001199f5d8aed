#!/usr/bin/env python3
"""Render hotspots + plan (+ L2 text, compare) for every real capture with two source trees and diff.

Used to show a refactoring leaves the outputs byte-identical (issue 28): every dispatch dir under
../shared/captures and ../shared/calibration gets `hotspot_analyzer.py --json --text --waves` and
`render_plan.py`; every PMC counter file gets `pmc_l2_analyzer.py` (text and JSON); the calibration
pairs get `compare.py`. Outputs land in OUT/<tree-name>/…; the diff lists every file that differs.

    python bench/plan_identity.py --base /tmp/base_tree --head . --out /tmp/identity

The base tree's outputs are cached (re-used when present); `--fresh` recomputes them.
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import subprocess
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"


def dispatch_dirs(shared: Path) -> list[Path]:
    found = [p.parent for root in ("captures", "calibration") for p in (shared / root).rglob("code.json")]
    return sorted(set(found))


def counter_files(shared: Path) -> list[Path]:
    captures = shared / "captures"
    return sorted([*captures.rglob("*counter_collection.csv"),
                   *(p.parent for p in captures.rglob("pmc_perf.csv"))])


def key(path: Path) -> str:
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10] + "_" + path.name


def run(tree: Path, script: str, args: list[str], log: Path) -> None:
    with log.open("a") as out:
        out.write(f"$ {script} {' '.join(args)}\n")
        out.flush()
        result = subprocess.run([sys.executable, str(tree / "scripts" / script), *args],
                                stdout=out, stderr=subprocess.STDOUT, cwd=tree, check=False)
        out.write(f"exit {result.returncode}\n")


def l2_kernel(tree: Path, path: Path) -> list[str]:
    """`--kernel NAME` for a counter file holding several kernels: the first that is not a
    runtime copy/fill (the capture's own kernel), else nothing."""
    result = subprocess.run([sys.executable, str(tree / "scripts" / "pmc_l2_analyzer.py"), str(path)],
                            capture_output=True, text=True, cwd=tree, check=False)
    if result.returncode != 2 or "kernels in the input:" not in result.stderr:
        return []
    names = result.stderr.split("kernels in the input:", 1)[1].split(" -- fix")[0].split("; ")
    own = [n.strip() for n in names if not n.strip().startswith("__amd_rocclr")]
    return ["--kernel", own[0].split("(")[0].split("<")[0].rstrip(". ")] if own else []


def render(tree: Path, out: Path, shared: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "log.txt"
    log.write_text("")
    jsons = {}
    for d in dispatch_dirs(shared):
        k = key(d)
        hot = out / k / "hotspots.json"
        hot.parent.mkdir(parents=True, exist_ok=True)
        run(tree, "hotspot_analyzer.py", [str(d), "--waves", "--json", str(hot),
                                          "--text", str(out / k / "hotspots.txt")], log)
        if hot.exists():
            jsons[d] = hot
            run(tree, "render_plan.py", ["--hotspots", str(hot), "--out-dir", str(out / k / "plan"),
                                         "--run", "identity", "--charts"], log)
    for f in counter_files(shared):
        k = key(f)
        (out / "l2" / k).mkdir(parents=True, exist_ok=True)
        kernel = l2_kernel(tree, f)
        run(tree, "pmc_l2_analyzer.py", [str(f), *kernel, "--json", str(out / "l2" / k / "l2.json")], log)
        with (out / "l2" / k / "l2.txt").open("w") as text:
            subprocess.run([sys.executable, str(tree / "scripts" / "pmc_l2_analyzer.py"), str(f), *kernel],
                           stdout=text, stderr=subprocess.STDOUT, cwd=tree, check=False)
    # before/after pairs: consecutive dispatch dirs of one calibration folder
    cal = sorted(d for d in jsons if "calibration" in str(d))
    for before, after in zip(cal, cal[1:], strict=False):
        if before.parent.parent != after.parent.parent:  # att_<version>/ui_output_…
            continue
        k = key(before) + "__" + after.name
        (out / "compare" / k).mkdir(parents=True, exist_ok=True)
        run(tree, "compare.py", [str(jsons[before]), str(jsons[after]), "--quiet",
                                 "--json", str(out / "compare" / k / "compare.json"),
                                 "--markdown", str(out / "compare" / k / "compare.md")], log)


def _without(path: Path, keys: list[str]) -> object:
    doc = json.loads(path.read_text())
    return {k: v for k, v in doc.items() if k not in keys} if isinstance(doc, dict) else doc


def differing(a: Path, b: Path, new_keys: list[str] | None = None) -> list[str]:
    """Files that differ; a JSON file whose only difference is top-level keys in `new_keys`
    (added on purpose by the head) is listed as `only new keys`."""
    names = {p.relative_to(a) for p in a.rglob("*") if p.is_file()} | {
        p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    diff = []
    for name in sorted(names):
        if name.name == "log.txt":
            continue
        left, right = a / name, b / name
        if not (left.exists() and right.exists()) or not filecmp.cmp(left, right, shallow=False):
            if (new_keys and name.suffix == ".json" and left.exists() and right.exists()
                    and _without(left, new_keys) == _without(right, new_keys)):
                diff.append(f"{name} (only the new key(s) {', '.join(new_keys)})")
            else:
                diff.append(str(name))
    return diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="source tree of the baseline")
    parser.add_argument("--head", type=Path, default=Path("."), help="source tree to check")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--fresh", action="store_true", help="recompute the base outputs")
    parser.add_argument("--new-key", action="append", default=[],
                        help="top-level JSON key the head adds on purpose (e.g. thresholds)")
    parser.add_argument("--compare-only", action="store_true", help="diff existing outputs")
    args = parser.parse_args(argv)
    base_out, head_out = args.out / "base", args.out / "head"
    if args.fresh or not (base_out / "log.txt").exists():
        render(args.base.resolve(), base_out, args.shared.resolve())
    if not args.compare_only:
        render(args.head.resolve(), head_out, args.shared.resolve())
    diff = differing(base_out, head_out, args.new_key)
    files = sum(1 for p in base_out.rglob("*") if p.is_file())
    for name in diff:
        print(f"differs: {name}")
    real = [name for name in diff if "(only the new key" not in name]
    print(f"{files} files compared, {len(diff)} differ, {len(real)} beyond the new key(s)")
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main())
