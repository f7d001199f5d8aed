#!/usr/bin/env python3
"""Benchmark the wave-timeline export (issue 25): both formats on the same capture, against
json.loads of the same wave files, with file sizes and peak RSS.

Measured in one run, interleaved, best of --repeat, after a warm-up (page cache, imports):
  * baseline: read_bytes + json.loads of every wave file of the dispatch dir (this process);
  * export_timeline(..., fmt="perfetto") and fmt="json" in this process (wall and CPU seconds);
  * the CLI `scripts/export_timeline.py DIR -o OUT` in a fresh interpreter (wall: what a user
    waits, imports included), and its peak RSS (VmHWM);
  * one message object per packet with the perfetto package (TracePacket + SerializeToString) on
    the first 20 000 events, per event, to show what the column-wise encoder saves.
  * with --baseline-root CHECKOUT: the CLI of that checkout (e.g. `git archive` of main),
    interleaved with ours (ours three ways: as run, worker forced, one process; then base; the
    next round reversed), best wall and CPU (user + system of the CLI and its worker) of each,
    their ratios, peak RSS (CLI + worker) and whether the traces are byte-identical: on a shared
    machine the ratio is the figure; times a quiet machine's base CLI by it to estimate ours.
Usage: python bench/bench_timeline.py [--repeat 5] [--baseline-root DIR] [--cli-only] [DISPATCH_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FLYDSL = ROOT.parent / "shared" / "captures" / "flydsl-kernel-profiling-lib" / "examples"
DEFAULT = [FLYDSL / "moe_reduce/att_viewer/big/ui_output_agent_42768_dispatch_39",
           FLYDSL / "flash_attn_func/att_viewer/big/ui_output_agent_38430_dispatch_44"]


def timed(run) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def cli(directory: Path, out: Path, *args: str) -> tuple[float, int]:
    """(wall seconds, peak RSS KB) of the CLI in a fresh interpreter."""
    code = ("import resource, runpy, sys; sys.argv = sys.argv[1:]; "
            "import builtins\n"
            "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "scripts" / "export_timeline.py"),
                           str(directory), "-o", str(out), *args], capture_output=True, text=True,
                          check=True)
    wall = time.perf_counter() - start
    rss = int(done.stderr.split("RSS")[-1].split()[0])
    return wall, rss


_RSS_WRAPPER = ("import resource, runpy, sys; sys.argv = sys.argv[1:]\n"
                "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
                "except SystemExit:\n    pass\n"
                "own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
                "worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
                "print('RSS', own, worker, file=sys.stderr)")
WORKER_ENV = "KERNELTRACE_TIMELINE_WORKER"


def cli_vs_baseline(directory: Path, baseline: Path, repeat: int) -> dict:
    """Our CLI and `baseline`'s, interleaved: best wall / CPU seconds, ratios, identical bytes.

    Ours runs three ways each round: as a user runs it (the worker forks only with a core to
    spare), with the worker forced (KERNELTRACE_TIMELINE_WORKER=1) and in one process (=0). Peak
    RSS is the CLI's own plus its worker's (each process's peak, summed: an upper bound)."""
    import resource

    ours = ROOT / "scripts" / "export_timeline.py"
    runs = {"ours": (ours, None), "ours_worker": (ours, "1"), "ours_one": (ours, "0"),
            "base": (baseline / "scripts" / "export_timeline.py", None)}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", WORKER_ENV)}
    best = {name: [float("inf"), float("inf"), 0] for name in runs}
    with tempfile.TemporaryDirectory() as tmp:
        outs = {name: Path(tmp) / f"{name}.pftrace" for name in runs}
        for attempt in range(repeat + 1):  # round 0 warms the page cache and the .pyc files
            order = list(runs) if attempt % 2 == 0 else list(runs)[::-1]
            for name in order:
                script, worker = runs[name]
                run_env = env if worker is None else {**env, WORKER_ENV: worker}
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-c", _RSS_WRAPPER, str(script), str(directory),
                                       "-o", str(outs[name])], check=True, capture_output=True,
                                      env=run_env, text=True)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                rss = sum(map(int, done.stderr.split("RSS")[-1].split()[:2]))
                if attempt:
                    best[name] = [min(best[name][0], wall), min(best[name][1], cpu),
                                  max(best[name][2], rss)]
        identical = all(outs[name].read_bytes() == outs["base"].read_bytes() for name in runs)
        size = outs["ours"].stat().st_size
    result = {"dir": directory.name}
    for name in runs:
        result[f"{name}_wall"] = round(best[name][0], 3)
    for name in runs:
        result[f"{name}_cpu"] = round(best[name][1], 3)
    for name in runs:
        if name != "base":
            result[f"{name}_wall_ratio"] = round(best[name][0] / best["base"][0], 3)
            result[f"{name}_cpu_ratio"] = round(best[name][1] / best["base"][1], 3)
    for name in runs:
        result[f"{name}_rss_mb"] = round(best[name][2] / 1024, 1)
    result.update({"identical": identical, "mb": round(size / 1e6, 2)})
    return result


def per_message_us(directory: Path, events: int = 20_000) -> float:
    """µs per event when every packet is a perfetto TracePacket object (the obvious way)."""
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket

    from kerneltrace.render.timeline.proto import read_packets

    with tempfile.TemporaryDirectory() as tmp:
        from kerneltrace.render.timeline.export import export_timeline

        out = Path(tmp) / "t.pftrace"
        export_timeline(directory, out)
        sample = [p for p in read_packets(out.read_bytes()) if p.HasField("track_event")][:events]
    plain = [(p.timestamp, p.track_event.type, p.track_event.track_uuid, p.track_event.name_iid,
              [(a.name_iid, a.int_value) for a in p.track_event.debug_annotations]) for p in sample]
    start = time.process_time()
    sink = []
    for ts, kind, track, name, args in plain:
        packet = TracePacket()
        packet.timestamp = ts
        packet.trusted_packet_sequence_id = 1
        packet.sequence_flags = 2
        event = packet.track_event
        event.type = kind
        event.track_uuid = track
        if name:
            event.name_iid = name
        for arg_name, value in args:
            annotation = event.debug_annotations.add()
            annotation.name_iid = arg_name
            annotation.int_value = value
        sink.append(packet.SerializeToString())
    return (time.process_time() - start) / len(plain) * 1e6


def measure(directory: Path, repeat: int) -> dict:
    from kerneltrace.readers.wavefile.reader import wave_files
    from kerneltrace.render.timeline.export import export_timeline

    paths = wave_files(directory)
    mb = sum(p.stat().st_size for p in paths) / 1e6
    results: dict = {"dir": directory.name, "files": len(paths), "mb": round(mb, 1)}
    with tempfile.TemporaryDirectory() as tmp:
        outs = {"perfetto": Path(tmp) / "t.pftrace", "json": Path(tmp) / "t.json.gz"}

        def baseline() -> None:
            for path in paths:
                json.loads(path.read_bytes())

        runs = {"json.loads": baseline,
                "perfetto": lambda: export_timeline(directory, outs["perfetto"]),
                "json": lambda: export_timeline(directory, outs["json"], fmt="json")}
        for run in runs.values():  # warm-up
            run()
        best = {name: (float("inf"), float("inf")) for name in runs}
        for _ in range(repeat):
            for name, run in runs.items():
                wall, cpu = timed(run)
                best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
        for name in ("perfetto", "json"):
            results[f"{name}_mb"] = round(outs[name].stat().st_size / 1e6, 2)
        cli_best, rss = float("inf"), 0
        for _ in range(repeat):
            wall, rss_kb = cli(directory, outs["perfetto"])
            cli_best, rss = min(cli_best, wall), max(rss, rss_kb)
    results.update({f"{name}_wall": round(w, 3) for name, (w, _) in best.items()})
    results.update({f"{name}_cpu": round(c, 3) for name, (_, c) in best.items()})
    results["cli_wall"] = round(cli_best, 3)
    results["cli_rss_mb"] = round(rss / 1024, 1)
    base = best["json.loads"][1]
    results["perfetto_vs_json_loads_cpu"] = round(best["perfetto"][1] / base, 2)
    results["json_vs_json_loads_cpu"] = round(best["json"][1] / base, 2)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-messages", action="store_true", help="skip the per-message baseline")
    parser.add_argument("--baseline-root", type=Path, help="another checkout: its CLI against ours")
    parser.add_argument("--cli-only", action="store_true",
                        help="with --baseline-root: only the CLI comparison")
    args = parser.parse_args()
    dirs = [d for d in args.dirs if d.is_dir()]
    if not dirs:
        print("no dispatch dir found (../shared/captures missing?)", file=sys.stderr)
        return 2
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    if args.baseline_root:
        for directory in dirs:
            print(json.dumps(cli_vs_baseline(directory, args.baseline_root.resolve(), args.repeat)))
        if args.cli_only:
            print(f"load average after: {os.getloadavg()[0]:.1f}")
            return 0
    for directory in dirs:
        print(json.dumps(measure(directory, args.repeat)))
    if not args.no_messages:
        print(f"one TracePacket object per event: {per_message_us(dirs[0]):.1f} µs CPU per event")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
