"""Real files from ../shared/captures: hipkittens gfx950 counter CSVs, rocprof-compute workloads, SDK samples."""

from __future__ import annotations

import pytest

from kerneltrace.analysis.l2.document import analyze
from kerneltrace.readers.counter_csv import read_counter_csv
from kerneltrace.readers.pmc_inputs import load_pmc_inputs

pytestmark = pytest.mark.shared

WORKLOADS = "rocprofiler-compute-workloads/projects/rocprofiler-compute/tests/workloads/ipblocks_TCC"
SDK_DATA = "rocprofiler-sdk-reference/projects/rocprofiler-sdk/source/docs/data"

# vcopy -n 1048576 (tests/vcopy in rocprof-compute): each dispatch reads 1048576 doubles once.
VCOPY_BYTES = 1048576 * 8


@pytest.mark.parametrize("system,arch", [("MI100", "gfx908"), ("MI200", "gfx90a"), ("MI300A_A1", "gfx942")])
def test_rocprof_compute_workloads(captures, system, arch):
    doc = analyze(load_pmc_inputs([captures / WORKLOADS / system]), ideal_gb=VCOPY_BYTES / 1e9)
    assert doc["arch"]["name"] == arch
    assert doc["aggregate"]["dispatches"] == 3
    agg = doc["aggregate"]
    assert 0 <= agg["l2_hit_rate"] <= 1
    assert agg["read_32b_fraction"] == 0  # vcopy loads whole lines
    # Independent check of the byte formulas: the copy reads its input about once (within 1 %).
    assert agg["overfetch"] == pytest.approx(1.0, rel=0.01)
    assert agg["duration_ns"] > 0 and agg["achieved_gbps"] > 0
    assert doc["peak"]["gbps"] and 0 < agg["fraction_of_peak"] < 1
    assert agg["write_bytes"] > 0
    if arch == "gfx942":
        assert agg["read_128b_fraction"] > 0.9  # MI300A: TCC_BUBBLE carries the 128-byte requests
    unavailable = {u["metric"] for u in doc["unavailable"]}
    assert "l1_l2_requests" in unavailable and "read_mix" not in unavailable


def hipkittens_csvs(captures):
    return sorted((captures / "hipkittens-pmc-gfx950").rglob("*counter_collection.csv"))


def test_hipkittens_gfx950_csvs(captures):
    files = hipkittens_csvs(captures)
    assert files
    for path in files:
        run = read_counter_csv(path)
        assert run.arch == "gfx950"
        assert all(d.duration_ns for d in run.dispatches)
        kernel = max(run.kernels(), key=lambda name: sum(d.kernel == name for d in run.dispatches))
        doc = analyze([run], kernel=kernel)
        # SQ/TCP counters only: every L2 metric is unavailable (never 0), durations are real
        assert doc["aggregate"]["l2_hit_rate"] is None and doc["aggregate"]["fabric_read_bytes"] is None
        assert {u["metric"] for u in doc["unavailable"]} >= {"l2_hit_rate", "read_mix", "write_bytes"}
        assert doc["aggregate"]["duration_ns"] > 0
        assert doc["counter_medians"]
        assert doc["peak"]["gbps"] is None  # "AMD Radeon Graphics": the peak is not guessed from gfx950


def test_sdk_sample_counter_csv(captures):
    run = read_counter_csv(captures / SDK_DATA / "counter_collection.csv")
    assert len(run.dispatches) == 4
    assert all(d.counters == {"SQ_WAVES": 16384.0} for d in run.dispatches)
    doc = analyze([run], kernel="subtract_kernel")
    assert doc["counter_medians"] == {"SQ_WAVES": 16384.0}
    assert doc["aggregate"]["duration_ns"] == 638794 - 589014
