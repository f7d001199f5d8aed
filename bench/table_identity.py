#!/usr/bin/env python3
"""Byte-identity of the table stages (L2 analyzer, kernel discovery) between two checkouts, good and bad inputs.

Inputs, made once in a temporary folder: single-pass PMC jobs (scripts/pmc_plan.py per arch, each
job run through the rocprofv3 test double: pass layout, the agent_info beside each CSV), a
rocprof-compute workload dir, a rocpd database, synthetic discovery runs (kernel_stats.csv and a
rocpd results.db), and hostile variants of each CSV (short row, missing column, non-numeric value,
empty file, BOM, duplicate header, header only, an extra field, kernel names "nan" / "1e5" /
"NA", 19-digit timestamps). Every command line runs from both checkouts with this interpreter;
stdout, stderr, exit code and every output file are compared byte for byte. With --time, the L2
analyzer and discovery CLIs are also timed (same run, both checkouts, the median of --repeat runs
each, interpreter start and imports included) and the readers in-process over large counter CSVs
(two passes of 100 and 5000 dispatches) and a kernel_stats.csv of as many kernels.
Usage: python bench/table_identity.py --baseline-root OTHER_CHECKOUT [--time] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = ROOT / "tests" / "rocprofv3_double" / "rocprofv3"
ARCHES = ("gfx90a", "gfx942", "gfx950")


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, check=False, env=env)


def pmc_captures(tmp: Path) -> dict[str, list[str]]:
    """Per arch: the pass dirs of its single-pass jobs, captured by the rocprofv3 double."""
    found = {}
    for arch in ARCHES:
        base = tmp / f"pmc_{arch}"
        done = _run([sys.executable, str(ROOT / "scripts" / "pmc_plan.py"), "--arch", arch, "--kernel", "gemm",
                     "--out-dir", str(base / "jobs"), "--format", "yaml", "--capture-dir", str(base / "cap")], tmp)
        assert done.returncode == 0, done.stderr
        env = {**os.environ, "ROCPROF_DOUBLE_KERNELS": "demo_gemm,demo_vec_add"}
        for job in sorted((base / "jobs").glob("pmc_job*.yaml")):
            done = _run([sys.executable, str(DOUBLE), "-i", str(job), "--", "true"], tmp, env)
            assert done.returncode == 0, done.stderr
        found[arch] = [str(base / "cap")]
    return found


def workload_dir(tmp: Path) -> Path:
    folder = tmp / "workload"
    folder.mkdir()
    (folder / "pmc_perf.csv").write_text(
        "Dispatch_ID,Kernel_Name,GPU_ID,TCC_HIT_sum,TCC_MISS_sum,TCC_EA_RDREQ_sum,TCC_EA_RDREQ_32B_sum,"
        "TCC_EA_WRREQ_sum,TCC_EA_WRREQ_64B_sum,Start_Timestamp,End_Timestamp\n"
        '0,"vcopy(double*) [clone .kd]",2,10.0,90.0,200.0,20.0,50,40,1000,3000\n'
        '1,"vcopy(double*) [clone .kd]",2,12.0,88.0,,0.0,52,41,,\n'
        '2,"vcopy(double*) [clone .kd]",2,11.0,89.0,210.0,25.0,51,40,5000,7000\n')
    (folder / "timestamps.csv").write_text("Dispatch_ID,Kernel_Name,Start_Timestamp,End_Timestamp\n1,k,4000,4600\n")
    (folder / "sysinfo.csv").write_text("gpu_model,gpu_arch,hbm_bw\nMI200,gfx90a,1638.4\n")
    return folder


def rocpd_db(path: Path, *, counters: bool) -> Path:
    """A small rocpd database (un-suffixed views over suffixed tables), two runs (guids)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE k_ab (id, guid, agent_id, kernel_id, dispatch_id, start, \"end\", event_id);"
        "CREATE TABLE s_ab (id, guid, kernel_name, display_name);"
        "CREATE TABLE a_ab (id, guid, type, name, product_name);"
        "CREATE TABLE e_ab (guid, event_id, pmc_id, value);"
        "CREATE TABLE p_ab (id, guid, name);"
        "CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM k_ab;"
        "CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM s_ab;"
        "CREATE VIEW rocpd_info_agent AS SELECT * FROM a_ab;"
        + ("CREATE VIEW rocpd_pmc_event AS SELECT * FROM e_ab;CREATE VIEW rocpd_info_pmc AS SELECT * FROM p_ab;"
           if counters else ""))
    row = 1
    for guid in ("g1", "g2"):
        conn.execute("INSERT INTO a_ab VALUES (5, ?, 'GPU', 'gfx942', 'AMD Instinct MI300X')", (guid,))
        for kid, name in ((3, "gemm_kernel"), (4, "nan"), (6, "1e5")):
            conn.execute("INSERT INTO s_ab VALUES (?, ?, ?, ?)", (kid, guid, f"_Z{kid}", name))
        for pmc_id, counter in enumerate(("TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum"), start=1):
            conn.execute("INSERT INTO p_ab VALUES (?, ?, ?)", (pmc_id, guid, counter))
        for dispatch in range(1, 7):
            kid = (3, 4, 6)[dispatch % 3]
            start = 1_700_000_000_000_000_000 + 1000 * dispatch
            conn.execute("INSERT INTO k_ab VALUES (?, ?, 5, ?, ?, ?, ?, ?)",
                         (row, guid, kid, dispatch, start, start + 700 + 13 * dispatch, 100 + row))
            for pmc_id in (1, 2, 3):
                conn.execute("INSERT INTO e_ab VALUES (?, ?, ?, ?)", (guid, 100 + row, pmc_id, 1000.5 * pmc_id + row))
            row += 1
    conn.commit()
    conn.close()
    return path


COUNTER_HEADER = ('"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size",'
                  '"Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count",'
                  '"Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"')


def _counter_line(dispatch: int, kernel: str, counter: str, value: str, start: str, end: str) -> str:
    return (f'{dispatch},{dispatch},"Agent 2",1,9,9,1024,3,"{kernel}",256,0,0,8,0,16,'
            f'"{counter}",{value},{start},{end}')


def hostile_csvs(tmp: Path) -> dict[str, Path]:
    """Bad (and odd but valid) counter and kernel_stats CSVs, each in its own file."""
    folder = tmp / "hostile"
    folder.mkdir()
    good = [_counter_line(d, k, c, v, "100", "400") for d, k, c, v in (
        (1, "k", "TCC_HIT_sum", "2.000000"), (1, "k", "TCC_MISS_sum", "1.5"), (2, "k", "TCC_HIT_sum", "3"),
        (2, "k", "TCC_MISS_sum", "0.00000000e+00"))]
    stats_header = '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"'
    stats = ['"gemm",4,4000,1000.0,40.0,900,1100,50.0', '"nan",2,3000,1500.0,30.0,1400,1600,50.0',
             '"1e5",3,2000,666.7,20.0,600,700,40.0', '"NA",1,1000,1000.0,10.0,1000,1000,0.0']
    cases = {
        "counter_ok": [COUNTER_HEADER, *good],
        "counter_short_row": [COUNTER_HEADER, good[0], '2,2,"Agent 2",1,9,9,1024,3,"k"'],
        "counter_missing_column": [COUNTER_HEADER.replace('"Counter_Value",', ""), *good],
        "counter_non_numeric": [COUNTER_HEADER, good[0], _counter_line(1, "k", "TCC_MISS_sum", "n/a", "100", "400")],
        "counter_inf": [COUNTER_HEADER, _counter_line(1, "k", "TCC_MISS_sum", "inf", "100", "400")],
        "counter_bad_dispatch": [COUNTER_HEADER, good[0], _counter_line("x", "k", "TCC_HIT", "1", "1", "2")],
        "counter_bad_stamp": [COUNTER_HEADER, _counter_line(1, "k", "TCC_HIT", "1", "soon", "2")],
        "counter_empty": [],
        "counter_header_only": [COUNTER_HEADER],
        "counter_bom": ["\ufeff" + COUNTER_HEADER, *good],
        "counter_duplicate_header": [COUNTER_HEADER + ',"Counter_Value"', *(line + ",9" for line in good)],
        "counter_extra_field": [COUNTER_HEADER, good[0] + ",7", *good[1:]],
        "counter_names_like_numbers": [COUNTER_HEADER, *(_counter_line(d, k, "TCC_HIT_sum", "1", "100", "400")
                                                         for d, k in ((1, "nan"), (2, "1e5"), (3, "NA")))],
        "counter_big_stamps": [COUNTER_HEADER, *(_counter_line(d, "k", c, "5", f"170000000000000000{d}",
                                                               f"170000000000000123{d}")
                                                 for d in (1, 2) for c in ("TCC_HIT", "TCC_MISS"))],
        "stats_ok": [stats_header, *stats],
        "stats_bom": ["\ufeff" + stats_header, *stats],
        "stats_missing_column": ['"Name","Calls"', '"a",1'],
        "stats_non_numeric": [stats_header, '"gemm",four,4000,1000.0,40.0,900,1100,50.0'],
        "stats_short_row": [stats_header, '"gemm",4'],
        "stats_empty": [],
        "stats_duplicate_header": [stats_header + ',"Calls"', stats[0] + ",9"],
        "stats_big_total": [stats_header, '"gemm",4,12345678901234567891,1000.0,40.0,900,1100,50.0',
                            '"other",4,12345678901234567890,1000.0,40.0,900,1100,50.0'],
    }
    paths = {}
    for name, lines in cases.items():
        suffix = "_kernel_stats.csv" if name.startswith("stats") else "_counter_collection.csv"
        path = folder / name / f"x{suffix}"
        path.parent.mkdir()
        path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
        paths[name] = path
    return paths


def command_lines(tmp: Path) -> dict[str, list[str]]:
    """name -> argv (script first; '@NAME' is an output path inside that run's own folder)."""
    lines: dict[str, list[str]] = {}
    for arch, inputs in pmc_captures(tmp).items():
        lines[f"l2_{arch}_text"] = ["pmc_l2_analyzer.py", *inputs, "--kernel", "gemm"]
        lines[f"l2_{arch}_json"] = ["pmc_l2_analyzer.py", *inputs, "--kernel", "gemm", "--ideal-gb", "0.5",
                                    "--json", "@l2.json"]
        lines[f"l2_{arch}_two_kernels"] = ["pmc_l2_analyzer.py", *inputs]  # refused: two kernels
    lines["l2_workload"] = ["pmc_l2_analyzer.py", str(workload_dir(tmp)), "--json", "@l2.json"]
    db = rocpd_db(tmp / "pmc_results.db", counters=True)
    lines["l2_rocpd"] = ["pmc_l2_analyzer.py", str(db), "--kernel", "gemm", "--json", "@l2.json"]
    lines["l2_rocpd_nan"] = ["pmc_l2_analyzer.py", str(db), "--kernel", "nan", "--json", "@l2.json"]
    from kerneltrace import synth  # sys.path set in main

    for count in (1, 4):
        specs = [synth.demo_gemm(), synth.demo_vec_add(), synth.demo_spill(), synth.demo_large()][:count]
        stats = synth.write_discovery_run(tmp / f"disc{count}", specs, calls=3)["kernel_stats"]
        lines[f"discover_csv_{count}"] = ["discover_kernels.py", "--stats", str(stats), "--out-dir", "@out",
                                          "--top-kernels", "2"]
    lines["discover_rocpd"] = ["discover_kernels.py", "--stats", str(rocpd_db(tmp / "disc_results.db",
                                                                               counters=False)),
                               "--out-dir", "@out", "--kernel", "nan|1e5"]
    for name, path in hostile_csvs(tmp).items():
        if name.startswith("stats"):
            lines[name] = ["discover_kernels.py", "--stats", str(path), "--out-dir", "@out", "--top-kernels", "3"]
        else:
            lines[name] = ["pmc_l2_analyzer.py", str(path), "--json", "@l2.json"]
    return lines


def run_in(root: Path, argv: list[str], outdir: Path) -> dict[str, bytes]:
    outdir.mkdir(parents=True)
    argv = [str(outdir / a[1:]) if a.startswith("@") else a for a in argv]
    done = _run([sys.executable, str(root / "scripts" / argv[0]), *argv[1:]], outdir)
    found = {"stdout": done.stdout, "stderr": done.stderr, "rc": str(done.returncode).encode()}
    for path in sorted(p for p in outdir.rglob("*") if p.is_file()):
        found[str(path.relative_to(outdir))] = path.read_bytes()
    return {key: value.replace(str(outdir).encode(), b"OUT") for key, value in found.items()}


def _around(text: bytes | None, other: bytes | None, width: int = 160) -> str:
    """The bytes around the first difference from ``other`` (or "(absent)")."""
    if text is None:
        return "(absent)"
    at = next((i for i, (a, b) in enumerate(zip(text, other or b"", strict=False)) if a != b), min(len(text), len(other or b"")))
    return repr(text[max(0, at - width // 2): at + width // 2])


def timed(root: Path, argv: list[str], outdir: Path, repeat: int) -> float:
    walls = []
    for n in range(repeat):
        start = time.perf_counter()
        run_in(root, argv, outdir / str(n))
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


IN_PROCESS = """
import statistics, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from kerneltrace.analysis.l2.document import analyze
from kerneltrace.readers.pmc_inputs import load_pmc_inputs
from kerneltrace.rocprof.discover import read_kernel_stats_csv
paths = [Path(p) for p in {paths!r}]
walls = {{"read": [], "read+analyze": [], "kernel_stats": []}}
for _ in range({repeat}):
    start = time.perf_counter(); runs = load_pmc_inputs(paths); walls["read"].append(time.perf_counter() - start)
    start = time.perf_counter(); analyze(load_pmc_inputs(paths), kernel="gemm")
    walls["read+analyze"].append(time.perf_counter() - start)
    start = time.perf_counter(); read_kernel_stats_csv(Path({stats!r})); walls["kernel_stats"].append(time.perf_counter() - start)
print(" ".join(f"{{k}}={{statistics.median(v):.4f}}" for k, v in walls.items()))
"""


def large_inputs(tmp: Path, dispatches: int) -> tuple[list[str], str]:
    """Two single-pass counter CSVs of ``dispatches`` gemm dispatches each, and a kernel_stats.csv of as many kernels."""
    from kerneltrace import synth

    spec = synth.demo_gemm()
    groups = (("TCC_EA0_RDREQ_sum", "TCC_EA0_RDREQ_32B_sum", "TCC_BUBBLE_sum", "TCC_EA0_RDREQ_DRAM_sum",
               "TCP_TCC_READ_REQ_sum"), ("TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum", "TCC_HIT_sum", "TCC_MISS_sum"))
    paths = []
    for number, group in enumerate(groups, start=1):
        rows = [row for d in range(1, dispatches + 1) for row in synth.counter_rows(
            spec, d, {name: 1000.0 * d + n for n, name in enumerate(group)}, start_ns=1_000_000 * d)]
        paths.append(str(synth.write_counter_collection(tmp / "large" / f"pass_{number}" / "pmc_counter_collection.csv",
                                                        rows)))
    stats = tmp / "large" / "x_kernel_stats.csv"
    stats.write_text('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n' + "".join(
        f'"kernel_{n}",{n},{1000 * n},1000.0,0.1\n' for n in range(1, dispatches + 1)))
    return paths, str(stats)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-root", type=Path, required=True, help="the other checkout (e.g. main)")
    parser.add_argument("--time", action="store_true", help="also time the stages (same run, both checkouts)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timed command line (median)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    same, differ = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        lines = command_lines(tmp_path)
        for name, line in lines.items():
            base = run_in(args.baseline_root.resolve(), line, tmp_path / "runs" / "base" / name)
            ours = run_in(ROOT, line, tmp_path / "runs" / "ours" / name)
            if base == ours:
                same += 1
                continue
            differ.append(name)
            for key in sorted(set(base) | set(ours)):
                if base.get(key) != ours.get(key):
                    print(f"DIFF {name} {key}:\n  before: {_around(base.get(key), ours.get(key))}\n"
                          f"  after:  {_around(ours.get(key), base.get(key))}")
        print(f"{same} of {len(lines)} command lines byte-identical; differ: {', '.join(differ) or 'none'}")
        if args.time:
            for name in ("l2_gfx942_json", "l2_rocpd", "discover_csv_4", "discover_rocpd"):
                before = timed(args.baseline_root.resolve(), lines[name], tmp_path / "t" / "base" / name, args.repeat)
                after = timed(ROOT, lines[name], tmp_path / "t" / "ours" / name, args.repeat)
                print(f"{name}: before {before:.3f} s, after {after:.3f} s, ratio {after / before:.2f}")
            for dispatches in (100, 5000):
                paths, stats = large_inputs(tmp_path / f"n{dispatches}", dispatches)
                for label, root in (("before", args.baseline_root.resolve()), ("after", ROOT)):
                    code = IN_PROCESS.format(root=str(root), paths=paths, stats=stats, repeat=args.repeat)
                    done = _run([sys.executable, "-c", code], tmp_path)
                    print(f"in-process, {dispatches} dispatches x 9 counters ({label}): "
                          f"{done.stdout.decode().strip() or done.stderr.decode()[-300:]}")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
