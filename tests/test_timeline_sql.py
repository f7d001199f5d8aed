"""The SQL recipes of docs/timeline.md answer their questions: run on a model of trace_processor's
tables (tests/trace_processor_sqlite.py) built from a written trace, checked against the trace."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from kerneltrace.synth import write_dispatch_dir
from kerneltrace.synth.spec import demo_gemm
from tests.conftest import REPO_ROOT
from tests.test_timeline import recipes
from tests.timeline_decode import decode_json, decode_proto
from tests.trace_processor_sqlite import connect

SCRIPT = REPO_ROOT / "scripts" / "export_timeline.py"


@pytest.fixture(scope="module", params=["perfetto", "json"])
def trace(request, tmp_path_factory):
    """(decoded trace, database, recipe text) of a synthetic GEMM with barriers, both formats."""
    directory = write_dispatch_dir(tmp_path_factory.mktemp("gemm"),
                                   demo_gemm("gfx942", iterations=6))
    out = tmp_path_factory.mktemp("out") / f"gemm.{request.param}"
    done = subprocess.run([sys.executable, str(SCRIPT), str(directory), "-o", str(out),
                           "--format", request.param], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    if request.param == "perfetto":
        decoded, prefix = decode_proto(out), "debug."
    else:
        decoded, prefix = decode_json(out), "args."
    queries = {title: text.replace("'debug.", f"'{prefix}") for title, text in recipes().items()}
    return decoded, connect(decoded, prefix), queries


def run(trace, word: str) -> tuple[list[str], list[tuple]]:
    _, db, queries = trace
    title = next(t for t in queries if word in t)
    cursor = db.execute(queries[title])
    return [c[0] for c in cursor.description], cursor.fetchall()


def test_slowest_wave_recipe_names_the_slowest_wave_and_its_waits(trace):
    decoded = trace[0]
    columns, rows = run(trace, "slowest wave")
    assert rows, "the recipe found nothing"
    waves = [s for s in decoded.slices if s.name == "wave"]
    longest = max(s.end - s.ts for s in waves)
    answer = [dict(zip(columns, row, strict=True)) for row in rows]
    (file,) = {a["file"] for a in answer}
    slowest = next(s for s in waves if s.args["file"] == file)
    assert slowest.end - slowest.ts == longest
    assert {a["state"] for a in answer} <= {"wait", "stall", "idle"}
    expected = Counter()
    for s in decoded.slices:
        if s.parent is slowest and s.name in ("wait", "stall", "idle"):
            expected[(s.name, s.args.get("asm"), s.args.get("source"))] += s.end - s.ts
    got = {(a["state"], a["instruction"], a["source"]): a["ns"] for a in answer}
    assert got == dict(expected.most_common(len(got)))
    assert len(got) == min(10, len(expected))
    assert [a["ns"] for a in answer] == sorted((a["ns"] for a in answer), reverse=True)
    for a in answer:
        assert a["pct_of_wave"] == round(100.0 * a["ns"] / longest, 1)

def test_barrier_recipe_counts_every_arrival(trace):
    decoded = trace[0]
    columns, rows = run(trace, "barrier")
    arrivals = [s for s in decoded.instants if s.name == "barrier arrival"]
    assert arrivals, "the synthetic GEMM has barriers"
    answer = [dict(zip(columns, row, strict=True)) for row in rows]
    assert sum(a["arrivals"] for a in answer) == len(arrivals)
    assert all(a["max_first_to_last_ns"] >= a["mean_first_to_last_ns"] >= 0 for a in answer)


def test_waits_per_load_recipe_covers_every_flow(trace):
    decoded = trace[0]
    columns, rows = run(trace, "load instruction")
    answer = [dict(zip(columns, row, strict=True)) for row in rows]
    flows = decoded.metadata["flows"]
    assert flows > 0
    by_load = Counter()
    stall = Counter()
    ends = {f: s for s in decoded.slices for f in s.flow_in}
    for s in decoded.slices:
        for f in s.flow_out:
            by_load[s.args["index"]] += 1
            stall[s.args["index"]] += ends[f].args["stall"]
    expected = sorted(stall.values(), reverse=True)[:20]
    assert [a["wait_stall_cycles"] for a in answer] == expected
    assert sum(a["waits"] for a in answer) == sum(by_load[i] for i in
                                                  [a["load_index"] for a in answer])
    assert len(answer) == min(20, len(by_load))
