"""Peers' metrics: cost = latency + idle with the s_endpgm drain, and the wave-level `peers` object."""

from __future__ import annotations

import numpy as np
import pytest

from kerneltrace.analysis.costs import cost_summary
from kerneltrace.analysis.waves.peers import _covered, merge_intervals
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.synth import demo_gemm, demo_vec_add, write_dispatch_dir


def test_cost_counts_idle_and_the_endpgm_drain():
    ins = [
        {"index": 0, "asm": "s_waitcnt vmcnt(0)", "type": "VMEM-wait", "latency_cycles": 600,
         "stall_cycles": 600, "idle_cycles": 0},
        {"index": 1, "asm": "s_endpgm", "type": "other", "latency_cycles": 300,
         "stall_cycles": 0, "idle_cycles": 100},
    ]
    costs = cost_summary(ins)
    assert costs["total_cycles"] == 1000
    assert costs["endpgm_drain"] == {"cycles": 400, "share": 0.4, "instructions": [1]}
    assert costs["basis"] == "latency + idle"


def test_merge_and_cover_are_per_scope():
    keys = np.array([0, 0, 1])
    starts = np.array([0, 5, 0])
    ends = np.array([10, 20, 4])
    k, s, e = merge_intervals(keys, starts, ends)
    assert k.tolist() == [0, 1] and s.tolist() == [0, 0] and e.tolist() == [20, 4]
    covered = _covered(k, s, e, np.array([0, 1, 1]), np.array([15, 2, 10]), np.array([30, 8, 12]))
    assert covered.tolist() == [5, 2, 0]


@pytest.mark.parametrize("spec", [demo_gemm(), demo_vec_add()], ids=["gemm", "vec_add"])
def test_peers_object_from_wave_files(tmp_path, spec):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, spec), waves=True)
    peers = doc["waves"]["peers"]
    assert peers["cost_cycles"] == doc["costs"]["total_cycles"]  # code.json = Σ waves
    assert 0 < peers["non_hidden_cycles"] <= peers["cost_cycles"]
    assert all(0 <= share <= 1 for share in peers["pipe_busy"].values())
    top = peers["instructions"][0]
    assert top["per_hit_p50"] <= top["per_hit_p90"]
    if spec.name == demo_gemm().name:
        assert peers["pipe_busy"]["MFMA"] > 0
        assert peers["barriers"] and 0 <= peers["barrier_imbalance"] <= 1


def test_non_hidden_cost_per_line(tmp_path):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, demo_gemm()), waves=True)
    peers = doc["waves"]["peers"]
    lines = peers["lines"]
    assert lines and all(0 <= line["non_hidden_cycles"] <= line["cost_cycles"] for line in lines)
    assert sum(line["cost_cycles"] for line in lines) <= peers["cost_cycles"]
    locations = {line["location"] for line in doc["source_lines"]}
    assert {line["location"] for line in lines} <= locations


def test_percentiles_of_many_rows_are_each_rows_percentile():
    """peer_summary's per-hit p50/p90 of every executed row (one pass over blocks of rows)
    equal the one-row _percentile, ties and empty rows included."""
    from kerneltrace.analysis.waves import peers

    rng = np.random.default_rng(1)
    histogram = np.zeros((5000, peers.BUCKETS), np.int64)
    for row in range(5000):
        if row % 6:
            columns = rng.integers(0, peers.BUCKETS, size=int(rng.integers(1, 20)))
            histogram[row, columns] = rng.integers(1, 1000, size=len(columns)) * 10 ** (row % 9)
    histogram[7, -1] = 3
    rows = list(range(5000))  # more than one block of 4096
    for q in (0.0, 0.5, 0.9, 1.0):
        assert peers._percentiles(histogram, rows, q) == [peers._percentile(histogram[r], q)
                                                          for r in rows]
