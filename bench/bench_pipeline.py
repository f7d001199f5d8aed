#!/usr/bin/env python3
"""Pipeline cost against the work it does, measured in one run (docs: bench/README.md).

Sections (each prints a Markdown table; all ratios are against baselines timed in the same run):
* ``--captures DIR`` (default ../shared/captures when present): ``snakemake -c2 --config dir=DIR``
  from scratch against Snakemake's start-up + the same per-dispatch analyses run in ONE process +
  the plan rendered by its CLI; and the no-op re-run against Snakemake's start-up.
* ``--scale N ...``: N synthetic dispatch dirs (the project's generator) through ``dir=``: wall
  time per dispatch and the peak RSS of the largest process of the run (Snakemake included).
* ``--slurm N``: dry run of N synthetic dispatch dirs through ``profiles/slurm``: how many
  cluster jobs (groups) it would submit.
* ``--uses``: use 4 (bundled example) and use 1 (``cmd=`` on the rocprofv3 test double).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "captures"


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"error: {' '.join(argv[:6])} ... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def timed_rss(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of the largest process in the child's tree."""
    wrapper = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
               "r = subprocess.run(sys.argv[1:], capture_output=True); "
               "w = time.perf_counter() - t; "
               "m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; "
               "sys.stderr.buffer.write(r.stderr[-3000:]) if r.returncode else None; "
               "print(w, m); sys.exit(r.returncode)")
    done = subprocess.run([sys.executable, "-c", wrapper, *argv], env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode:
        sys.exit(f"error: {' '.join(argv[:6])} ... failed:\n{done.stderr}")
    wall, rss_kb = done.stdout.split()
    return float(wall), float(rss_kb) / 1024


def smk(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-c", "2", *args]


def analyse_all(root: Path, out: Path) -> int:
    """The baseline: every dispatch dir analysed in this one process, as the pipeline does it."""
    sys.path.insert(0, str(REPO))
    from kerneltrace.atomic import write_json, write_text
    from kerneltrace.document.hotspot_report import run_analysis
    from kerneltrace.model.dispatchdir import find_dispatch_dirs
    from kerneltrace.render.text import render_text

    out.mkdir(parents=True, exist_ok=True)
    for number, item in enumerate(find_dispatch_dirs(root).kept):
        result = run_analysis(str(item.path), waves=item.wave_files > 0)
        write_json(out / f"d{number:03d}.json", result.document)
        write_text(out / f"d{number:03d}.txt", render_text(result.document, topk=15)[0])
    return 0


TRIVIAL = """rule all:
    input: "done.txt"
rule one:
    output: "done.txt"
    shell: "echo > {output}"
"""


def startup(work: Path) -> float:
    """Snakemake's own start-up: a no-op run of a one-rule workflow (plugins, DAG, lock)."""
    trivial = work / "trivial"
    trivial.mkdir(parents=True, exist_ok=True)
    (trivial / "Snakefile").write_text(TRIVIAL)
    argv = [sys.executable, "-m", "snakemake", "-s", str(trivial / "Snakefile"), "-d", str(trivial), "-c", "2"]
    if not (trivial / "done.txt").exists():
        timed(argv)
    return timed(argv)


def startup_running(work: Path) -> float:
    """Snakemake's fixed cost of a run that executes something: the one-rule workflow from scratch
    (≈ 1 s more than its no-op: job machinery, then the shutdown waits of Snakemake's threads)."""
    trivial = work / "trivial_run"
    shutil.rmtree(trivial, ignore_errors=True)
    trivial.mkdir(parents=True)
    (trivial / "Snakefile").write_text(TRIVIAL)
    return timed([sys.executable, "-m", "snakemake", "-s", str(trivial / "Snakefile"), "-d", str(trivial),
                  "-c", "2"])


def baseline_parts(root: Path, work: Path) -> tuple[float, float, float]:
    """Snakemake start-up (of a run executing one job), the analyses in one process, the plan CLI."""
    start = startup_running(work)
    analysed = work / "one_process"
    shutil.rmtree(analysed, ignore_errors=True)
    analyses = timed([sys.executable, __file__, "--analyse-all", str(root), str(analysed)])
    docs = sorted(str(p) for p in analysed.glob("*.json"))
    plan = timed([sys.executable, str(REPO / "scripts" / "render_plan.py"), "--hotspots", *docs,
                  "--out-dir", str(work / "one_process_plan"), "--run", "bench", "--charts"])
    return start, analyses, plan


def captures_section(root: Path, repeat: int, work: Path) -> None:
    rows: dict[str, list[float]] = {k: [] for k in (
        "Snakemake start-up, running one job (one-rule workflow from scratch)",
        "analyses in one process", "plan CLI", "baseline = start-up + analyses + plan",
        "pipeline from scratch", "Snakemake start-up (one-rule workflow, no-op)", "no-op re-run")}
    for number in range(repeat):
        start, analyses, plan = baseline_parts(root, work)
        target = work / f"captures_{number}"
        shutil.rmtree(target, ignore_errors=True)  # from scratch, even in a reused --work folder
        full = timed(smk("-d", str(target), "--config", f"dir={root}"))
        noop = timed(smk("-d", str(target), "--config", f"dir={root}"))
        for key, value in zip(rows, (start, analyses, plan, start + analyses + plan, full,
                                     startup(work), noop), strict=True):
            rows[key].append(value)
    # the no-op and the start-up are short and noisy on a shared machine: more pairs, interleaved
    for _ in range(2 * repeat):
        rows["no-op re-run"].append(timed(smk("-d", str(work / "captures_0"), "--config", f"dir={root}")))
        rows["Snakemake start-up (one-rule workflow, no-op)"].append(startup(work))
    med = {key: statistics.median(values) for key, values in rows.items()}
    base = med["baseline = start-up + analyses + plan"]
    start = med["Snakemake start-up (one-rule workflow, no-op)"]
    bare = med["analyses in one process"] + med["plan CLI"] + start
    print(f"\n### dir={root} (medians: n={repeat} full runs, {3 * repeat} start-up / no-op pairs)\n\n"
          "| measurement | s | ratio |\n|---|---|---|")
    for key, value in med.items():
        ratio = ""
        if key == "pipeline from scratch":
            ratio = (f"{value / base:.2f}× baseline (target ≤ 1.5×); {value / bare:.2f}× the "
                     "baseline taken with the no-op start-up")
        elif key == "no-op re-run":
            ratio = f"{value / start:.2f}× start-up (target ≤ 1.2×)"
        print(f"| {key} | {value:.2f} | {ratio} |")


def synthetic_tree(root: Path, count: int, per_folder: int = 50) -> Path:
    """``count`` synthetic dispatch dirs in folders of ``per_folder`` (one rocprofv3 ATT run each)."""
    sys.path.insert(0, str(REPO))
    from kerneltrace import synth

    template = root / "_template"
    if not template.exists():
        synth.write_att_run(template, [synth.demo_gemm()], calls=1)
    tree = root / f"batch_{count}"
    if tree.exists():
        return tree
    made = 0
    folder = 0
    while made < count:
        run = tree / f"run_{folder:03d}"
        run.mkdir(parents=True)
        for path in template.iterdir():
            if path.is_file():
                shutil.copy2(path, run / path.name)
        source = next(p for p in template.iterdir() if p.is_dir())
        for number in range(min(per_folder, count - made)):
            name = re.sub(r"dispatch_\d+", f"dispatch_{number + 1}", source.name)
            shutil.copytree(source, run / name)
            made += 1
        folder += 1
    return tree


def scale_section(counts: list[int], work: Path) -> None:
    print("\n### synthetic batches (from scratch, -c2)\n")
    print("one `dir=` run over all dirs (one plan of N dispatches), and the same dirs as a `runs:` "
          "batch of one run per folder of 50 (one plan each)\n")
    print("| dispatch dirs | layout | wall s | s per dispatch | peak RSS MB (largest process) |\n"
          "|---|---|---|---|---|")
    for count in counts:
        tree = synthetic_tree(work / "synthetic", count)
        target = work / f"scale_{count}"
        shutil.rmtree(target, ignore_errors=True)
        wall, rss = timed_rss(smk("-d", str(target), "--config", f"dir={tree}"))
        print(f"| {count} | one run | {wall:.1f} | {wall / count:.3f} | {rss:.0f} |")
        batch = work / f"batch_{count}.yaml"
        folders = sorted(p for p in tree.iterdir() if p.is_dir())
        batch.write_text("runs:\n" + "".join(f"  {p.name}:\n    dir: {p}\n" for p in folders))
        target = work / f"scale_runs_{count}"
        shutil.rmtree(target, ignore_errors=True)
        wall, rss = timed_rss(smk("-d", str(target), "--configfile", str(batch)))
        print(f"| {count} | {len(folders)} runs | {wall:.1f} | {wall / count:.3f} | {rss:.0f} |")


def slurm_section(count: int, work: Path) -> None:
    """Dry run of the batch through profiles/slurm (the dispatch list made first, for real)."""
    tree = synthetic_tree(work / "synthetic", count)
    target = work / f"slurm_{count}"
    target.mkdir(parents=True, exist_ok=True)
    # The dispatches checkpoint runs first (a dry run cannot look past it): run it for real.
    subprocess.run([*smk("-d", str(target), "--config", f"dir={tree}"), "--until", "dispatches"],
                   check=True, capture_output=True)
    argv = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(target),
            "-n", "--workflow-profile", str(REPO / "profiles" / "slurm"), "--config", f"dir={tree}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    text = done.stdout + done.stderr
    jobs = re.search(r"^total\s+(\d+)", text, re.M)
    hotspots = re.search(r"^hotspots\s+(\d+)", text, re.M)
    groups = len(re.findall(r"\] Group job ", text))
    print(f"\n### profiles/slurm dry run, {count} synthetic dispatch dirs (exit {done.returncode})\n")
    print(f"jobs in the DAG: {jobs.group(1) if jobs else '?'}, of which hotspots: "
          f"{hotspots.group(1) if hotspots else '?'}; cluster submissions of hotspots: {groups} "
          "group jobs (the rest are localrules on the submit host)")
    (work / f"slurm_{count}.log").write_text(text)


def uses_section(repeat: int, work: Path) -> None:
    lib = work / "lib"
    lib.mkdir(exist_ok=True)
    (lib / "librocprof-trace-decoder.so").write_text("")
    env = {**os.environ, "PATH": f"{REPO / 'tests' / 'rocprofv3_double'}{os.pathsep}{os.environ['PATH']}",
           "ROCPROF_ATT_LIBRARY_PATH": str(lib)}
    rows: dict[str, list[float]] = {"snakemake --version (baseline)": [], "use 4 full run": [],
                                    "use 4 no-op re-run": [], "use 1 full run (double)": [],
                                    "use 1 no-op re-run": []}
    for number in range(repeat):
        rows["snakemake --version (baseline)"].append(timed([*smk()[:3], "--version"], env))
        d4, d1 = work / f"u4_{number}", work / f"u1_{number}"
        rows["use 4 full run"].append(timed(smk("-d", str(d4)), env))
        rows["use 4 no-op re-run"].append(timed(smk("-d", str(d4)), env))
        rows["use 1 full run (double)"].append(timed(smk("-d", str(d1), "--config", "cmd=true"), env))
        rows["use 1 no-op re-run"].append(timed(smk("-d", str(d1), "--config", "cmd=true"), env))
    base = statistics.median(rows["snakemake --version (baseline)"])
    print(f"\n### uses 4 and 1\n\n| measurement | median s (n={repeat}) | × baseline |\n|---|---|---|")
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {median / base:.1f}× |")


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--analyse-all":
        return analyse_all(Path(sys.argv[2]), Path(sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--captures", type=Path, default=SHARED if SHARED.is_dir() else None)
    parser.add_argument("--no-captures", action="store_true", help="skip the dir= captures section")
    parser.add_argument("--scale", type=int, nargs="*", default=[], help="e.g. 50 125 250 500")
    parser.add_argument("--slurm", type=int, default=0, help="dispatch dirs for the SLURM dry run")
    parser.add_argument("--uses", action="store_true", help="also time uses 4 and 1")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a new temp dir)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_pipeline_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.1f}; scratch {work}")
    if args.captures and not args.no_captures:
        captures_section(args.captures.resolve(), args.repeat, work)
    if args.scale:
        scale_section(args.scale, work)
    if args.slurm:
        slurm_section(args.slurm, work)
    if args.uses:
        uses_section(args.repeat, work)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}; max RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
