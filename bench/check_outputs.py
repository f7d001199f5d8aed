#!/usr/bin/env python3
"""Byte-identity check of the hotspot CLI between two checkouts (a performance change keeps outputs).

For every dispatch dir with a code.json under ../shared/captures, the bundled example and a set
of synthetic dispatch dirs (scripts/make_synthetic_capture.py --layout dispatch: every kernel ×
variant v3 / v3-develop / legacy / pcsampling / no-source / empty, plus gfx90a and gfx950 GEMMs),
runs `scripts/hotspot_analyzer.py DIR --json J --text T [--waves]` and the default text report
on stdout (`DIR --topk 15 --mode both`, and `--detail --mode src`) from each checkout with the same
interpreter, and compares JSON, text, stdout, stderr and exit code byte for byte (`cmp`).
Usage: python bench/check_outputs.py --baseline-root OTHER_CHECKOUT [--captures DIR] [--only NAME ...]
(`--only json+text+waves`: just the `--waves` command line, for a change to the wave reader).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT.parent / "shared" / "captures"
KERNELS = ("demo_gemm", "demo_vec_add", "demo_spill", "demo_large")
VARIANTS = ("v3", "v3-develop", "legacy", "pcsampling", "no-source", "empty")


def synthetic_dirs(parent: Path) -> list[Path]:
    made = []
    specs = [(kernel, "gfx942", variant) for kernel in KERNELS for variant in VARIANTS]
    specs += [("demo_gemm", "gfx90a", "v3"), ("demo_gemm", "gfx950", "v3")]
    for kernel, arch, variant in specs:
        out = parent / f"{kernel}_{arch}_{variant}"
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_synthetic_capture.py"), "--kernel", kernel,
                        "--arch", arch, "--variant", variant, "--layout", "dispatch", "--out", str(out)],
                       check=True, capture_output=True)
        made += sorted({path.parent for path in out.rglob("code.json")})
    return made


def run(root: Path, argv: list[str], outdir: Path, script: str = "hotspot_analyzer.py") -> dict[str, bytes]:
    """Outputs of one CLI run: the files it wrote, stdout, stderr (the output dir written `@`), code."""
    outdir.mkdir(parents=True)
    argv = [str(outdir / a[1:]) if a.startswith("@") else a for a in argv]
    done = subprocess.run([sys.executable, str(root / "scripts" / script), *argv],
                          capture_output=True, check=False)
    where = str(outdir).encode() + b"/"
    found = {"stdout": done.stdout.replace(where, b"@"), "stderr": done.stderr.replace(where, b"@"),
             "rc": str(done.returncode).encode()}
    for path in sorted(outdir.iterdir()):
        found[path.name] = path.read_bytes()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-root", type=Path, required=True, help="the other checkout (e.g. main)")
    parser.add_argument("--captures", type=Path, default=CAPTURES, help=f"real captures (default {CAPTURES})")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="compare only these command lines "
                        "(json+text, json+text+waves, stdout, detail, json-stdout, timeline, "
                        "timeline-json)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        dirs = sorted({p.parent for p in args.captures.rglob("code.json")}) if args.captures.is_dir() else []
        dirs += sorted({p.parent for p in (ROOT / "examples").rglob("code.json")})
        dirs += synthetic_dirs(tmp_path / "synthetic")
        commands = {
            "json+text": ["--json", "@out.json", "--text", "@out.txt"],
            "json+text+waves": ["--json", "@out.json", "--text", "@out.txt", "--waves"],
            "stdout": ["--topk", "15", "--mode", "both"],
            "detail": ["--detail", "--mode", "src", "--topk", "7"],
            "json-stdout": ["--json", "-"],
            # scripts/export_timeline.py (issue 25): the Perfetto trace and the JSON one
            "timeline": ["-o", "@out.pftrace"],
            "timeline-json": ["--format", "json", "-o", "@out.json.gz"],
        }
        if args.only:
            unknown = set(args.only) - commands.keys()
            if unknown:
                parser.error(f"unknown command line(s): {', '.join(sorted(unknown))}")
            commands = {name: extra for name, extra in commands.items() if name in args.only}
        runs = differences = 0
        for number, directory in enumerate(dirs):
            for name, extra in commands.items():
                outputs = []
                for side, root in (("new", ROOT), ("old", args.baseline_root.resolve())):
                    script = "export_timeline.py" if name.startswith("timeline") else "hotspot_analyzer.py"
                    outputs.append(run(root, [str(directory), *extra], tmp_path / f"{number}-{name}-{side}",
                                       script))
                runs += 1
                if outputs[0] != outputs[1]:
                    differences += 1
                    keys = sorted(k for k in outputs[0].keys() | outputs[1].keys()
                                  if outputs[0].get(k) != outputs[1].get(k))
                    print(f"DIFFERENT {name} {directory}: {', '.join(keys)}")
        print(f"{len(dirs)} dispatch dirs x {len(commands)} command lines = {runs} runs compared; "
              f"{differences} differ")
        return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
