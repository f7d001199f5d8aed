#!/usr/bin/env python3
"""The dir= batch on a local one-node SLURM cluster against the same batch run locally (docs: bench/README.md).

Needs root and Debian's slurm-wlm + munge (installed with apt-get when missing). Brings up the
test cluster of tests/slurm_cluster.py (cpu + gpu partition, no accounting), then for each workload
runs ``snakemake -c2 --config dir=...`` locally (the baseline) and through ``profiles/slurm``, and
prints a Markdown table: wall times, their ratio, dispatches, cluster jobs submitted, whether the
plans are byte-identical. Workloads: ``--captures DIR`` (a folder of real dispatch dirs) and
``--synthetic N`` (N synthetic dispatch dirs from the project's generator, one run).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "bench")]

from bench_pipeline import synthetic_tree  # noqa: E402
from slurm_cluster import (  # noqa: E402
    Cluster,
    Site,
    free_port,
    install_packages,
    packages_missing,
    this_node,
)

SHARED = REPO.parent / "shared" / "captures" / "flydsl-kernel-profiling-lib" / "examples"


def snakemake(workdir: Path, env: dict[str, str], *args: str) -> tuple[float, str]:
    argv = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"error: snakemake in {workdir} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, done.stdout + done.stderr


def same_reports(a: Path, b: Path) -> bool:
    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return files(a / "reports") == files(b / "reports")


def measure(name: str, target: Path, cluster: Cluster, work: Path) -> str:
    env = {k: v for k, v in cluster.env.items() if not k.startswith("SNAKEMAKE_")}
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    local, slurm = work / f"{slug}_local", work / f"{slug}_slurm"
    local_s, _ = snakemake(local, env, "-c", "2", "--config", f"dir={target}")
    slurm_s, log = snakemake(slurm, env, "--workflow-profile", str(REPO / "profiles" / "slurm"),
                             "--config", f"dir={target}")
    dispatches = len(list(local.glob("results/*/hotspots/*.json")))
    jobs = len(re.findall(r"has been submitted with SLURM jobid", log))
    warnings = len(re.findall(r"(?im)^.*(warn|unable to guess).*$", log))
    identical = "yes" if same_reports(local, slurm) else "NO"
    return (f"| {name} | {dispatches} | {jobs} | {local_s:.1f} | {slurm_s:.1f} | "
            f"{slurm_s / local_s:.1f}× | {warnings} | {identical} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=Path, default=SHARED if SHARED.is_dir() else None)
    parser.add_argument("--synthetic", type=int, default=150)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("error: bench_slurm needs root (it starts munged, slurmctld and slurmd)")
    if packages_missing() and (why := install_packages()):
        sys.exit(f"error: cannot install slurm-wlm and munge: {why}")
    work = Path(tempfile.mkdtemp(prefix="kta-bench-slurm-"))
    root = Path(tempfile.mkdtemp(prefix="kta-slurm-"))
    cluster = Cluster(Site(root, this_node(), free_port(), free_port()))
    rows = []
    try:
        started = time.perf_counter()
        cluster.start()
        up = time.perf_counter() - started
        if args.captures:
            rows.append(measure(f"shared `{args.captures.name}`", args.captures, cluster, work))
        if args.synthetic:
            tree = synthetic_tree(work / "synthetic", args.synthetic)
            rows.append(measure(f"synthetic ×{args.synthetic}", tree, cluster, work))
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"cluster up in {up:.1f} s; load average {os.getloadavg()[0]:.1f}\n")
    print("| workload | dispatches | cluster jobs | local -c2 s | SLURM s | SLURM / local | "
          "warning lines | plans identical |\n|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
