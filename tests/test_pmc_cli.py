"""pmc_l2_analyzer.py: bad input exits 2 with one stderr line; JSON output; --ea-channels warning."""

from __future__ import annotations

import json
import subprocess
import sys

from test_pmc_readers import counter_csv


def analyzer(repo_root, *args):
    return subprocess.run([sys.executable, str(repo_root / "scripts" / "pmc_l2_analyzer.py"), *map(str, args)],
                          capture_output=True, text=True)


def assert_one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0]


def test_non_numeric_value(tmp_path, repo_root):
    path = counter_csv(tmp_path / "p_counter_collection.csv", [(1, "k", "TCC_HIT_sum", "abc", 0, 1)])
    assert_one_line_error(analyzer(repo_root, path), f"{path}:2", "abc")


def test_empty_file(tmp_path, repo_root):
    path = tmp_path / "p_counter_collection.csv"
    path.write_text("")
    assert_one_line_error(analyzer(repo_root, path), "empty")


def test_missing_file(tmp_path, repo_root):
    assert_one_line_error(analyzer(repo_root, tmp_path / "nope.csv"), "not found")


def test_several_kernels_without_kernel(tmp_path, repo_root):
    path = counter_csv(tmp_path / "p_counter_collection.csv", [
        (1, "gemm_a", "TCC_HIT_sum", "1", 0, 1), (2, "gemm_b", "TCC_HIT_sum", "1", 0, 1)])
    assert_one_line_error(analyzer(repo_root, path), "gemm_a", "gemm_b", "--kernel")


def test_unmatched_runs_refused(tmp_path, repo_root):
    a = counter_csv(tmp_path / "a_counter_collection.csv", [(1, "k", "TCC_HIT_sum", "1", 0, 1)])
    b = counter_csv(tmp_path / "b_counter_collection.csv", [
        (1, "k", "TCC_EA0_RDREQ_sum", "1", 0, 1), (2, "k", "TCC_EA0_RDREQ_sum", "1", 0, 1)])
    assert_one_line_error(analyzer(repo_root, a, b), "cannot be matched")


def test_json_stdout_and_ea_channels_warning(tmp_path, repo_root):
    rows = [(4, "k", "TCC_HIT_sum", "10", 0, 100), (4, "k", "TCC_MISS_sum", "90", 0, 100),
            (4, "k", "TCC_EA0_RDREQ_sum", "10", 0, 100), (4, "k", "TCC_EA0_RDREQ_32B_sum", "0", 0, 100),
            (4, "k", "TCC_BUBBLE_sum", "10", 0, 100)]
    path = counter_csv(tmp_path / "p_counter_collection.csv", rows)
    proc = analyzer(repo_root, path, "--json", "-", "--ea-channels", "2", "--ideal-gb", str(1280 / 1e9))
    assert proc.returncode == 0, proc.stderr
    assert "TCC_BUBBLE" in proc.stderr and "ignored" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "kerneltrace.l2/1" and doc["kernel"] == "k"
    entry = doc["dispatches"][0]
    assert "dispatch_id" in entry
    for key in ("l2_hit_rate", "read_32b_fraction", "fabric_read_bytes", "overfetch", "duration_ns",
                "achieved_gbps"):
        assert key in entry and key in doc["aggregate"]
    assert entry["dispatch_id"] == 4 and entry["overfetch"] == 1.0  # bytes not multiplied by channels
    assert 0 <= entry["l2_hit_rate"] <= 1
    text = analyzer(repo_root, path, "--json", tmp_path / "out.json")
    assert text.returncode == 0 and "Verdict" in text.stdout
    assert json.loads((tmp_path / "out.json").read_text())["kernel"] == "k"
