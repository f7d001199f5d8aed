#!/usr/bin/env python3
"""Cost of the peers' metrics (kerneltrace/analysis/waves/peers.py) inside analyze_waves.

Measures analyze_waves(workers=1) CPU time (one process: the peers' work is all in it; best of
--repeat, after a warm-up) with the
peers' accumulation on (the default) and off (PeerTotals.empty / peer_summary patched to no-ops)
in the same run, interleaved, on the two largest shared captures by file count and bytes and on a
synthetic demo_large capture. Usage: python bench/bench_peers.py [--repeat 3] [--scale 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.timing import cpu_seconds  # noqa: E402

FLYDSL = ROOT.parent / "shared" / "captures" / "flydsl-kernel-profiling-lib" / "examples"
NAMED = {
    "moe_reduce (4112 files)": FLYDSL / "moe_reduce/att_viewer/big/ui_output_agent_42768_dispatch_39",
    "flash_attn big (32 files)": FLYDSL / "flash_attn_func/att_viewer/big/ui_output_agent_38430_dispatch_44",
}


def main(argv: list[str] | None = None) -> int:
    from kerneltrace.analysis.waves import analyze as module
    from kerneltrace.readers.codejson import read_code_json
    from kerneltrace.synth import demo_large, write_dispatch_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=int, default=2)
    args = parser.parse_args(argv)
    dirs = {name: path for name, path in NAMED.items() if path.is_dir()}
    tmp = tempfile.TemporaryDirectory()
    dirs[f"synthetic demo_large({args.scale})"] = write_dispatch_dir(Path(tmp.name), demo_large(args.scale))
    on = (module.PeerTotals.empty, module.peer_summary)
    off = (lambda table, rows: None, lambda peers, rows: None)
    print("| capture | analyze_waves (1 process), peers off | peers on | on / off |\n|---|---:|---:|---:|")
    for name, path in dirs.items():
        table = read_code_json(path / "code.json")
        module.analyze_waves(path, table, workers=1)  # warm-up: page cache, imports
        best = {"off": float("inf"), "on": float("inf")}
        for _ in range(args.repeat):
            for label, (empty, summary) in (("off", off), ("on", on)):
                module.PeerTotals.empty, module.peer_summary = empty, summary
                best[label] = min(best[label], cpu_seconds(lambda path=path, table=table: module.analyze_waves(path, table, workers=1)))
        module.PeerTotals.empty, module.peer_summary = on
        print(f"| {name} | {best['off']:.3f} s | {best['on']:.3f} s | {best['on'] / best['off']:.2f}× |")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
