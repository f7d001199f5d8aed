"""compare refuses what it cannot compare and its numbers agree with its verdict (issue 22 points
5, 6, 12): different kernels or GPUs are `not-comparable` (exit 0, the reason printed), never
REGRESSED; no time change under `not-comparable` (per-unit-of-work figures instead); bands never
below −100 %; unknown fields left out; huge numbers never crash it nor print nan; `--arch`;
identical captures are "no change"."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.compare.document import compare
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.render.compare import render_markdown, render_text
from kerneltrace.synth import demo_gemm, write_dispatch_dir

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "compare.py"


@pytest.fixture(scope="module")
def gemm_dir(tmp_path_factory) -> Path:
    return write_dispatch_dir(tmp_path_factory.mktemp("gemm"), demo_gemm())


@pytest.fixture(scope="module")
def gemm(gemm_dir) -> dict:
    return analyze_dispatch(gemm_dir, waves=True, arch="gfx942")


def run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, check=False)


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def slower(doc: dict, factor: float = 3.0) -> dict:
    """The same kernel with every cycle count and wave lifetime ×factor (a clear regression)."""
    out = copy.deepcopy(doc)
    for key in ("stall_cycles", "latency_cycles"):
        out["totals"][key] = int(out["totals"][key] * factor)
    for item in out["instructions"]:
        for key in ("stall_cycles", "latency_cycles"):
            item[key] = int(item[key] * factor)
    out["waves"]["per_wave"]["duration"]["mean"] *= factor
    for loop in out["waves"]["loops"]:  # an identical stream is timed by its hot loop
        loop["cycles_per_iteration"] *= factor
    return out


def test_different_kernels_are_not_comparable_never_regressed(gemm, tmp_path):
    other = slower(gemm)
    other["kernel"] = "another_kernel"
    proc = run(write(tmp_path / "a.json", gemm), write(tmp_path / "b.json", other))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("verdict: NOT-COMPARABLE")
    assert "different kernels" in proc.stdout and "another_kernel" in proc.stdout
    assert "estimated time change" not in proc.stdout


@pytest.mark.parametrize("arch_before, arch_after", [("gfx90a", "gfx950"), ("gfx942", "gfx950")])
def test_different_gpus_are_not_comparable(gemm, arch_before, arch_after):
    before, after = copy.deepcopy(gemm), slower(gemm)
    before["arch"]["name"], after["arch"]["name"] = arch_before, arch_after
    result = compare(before, after)
    assert result["verdict"] == "not-comparable"
    assert any(f"{arch_before} vs {arch_after}" in r for r in result["reasons"])
    assert result["estimated_time_change"]["value"] is None
    text = render_text(result)
    assert "estimated time change" not in text and "REGRESSED" not in text


def test_the_same_kernel_slower_is_still_regressed(gemm):
    """The control: the refusal is not a blanket pass."""
    assert compare(gemm, slower(gemm))["verdict"] == "regressed"


def test_band_never_below_minus_100_percent(gemm):
    faster = slower(gemm, 0.02)
    estimate = compare(gemm, faster)["estimated_time_change"]
    assert estimate["value"] >= -1.0 and estimate["low"] >= -1.0
    assert estimate["low"] == -1.0  # −98 % − 7 % noise is clipped, not −105 %


def test_unknown_occupancy_and_arch_are_left_out(gemm):
    before, after = copy.deepcopy(gemm), slower(gemm)
    for doc in (before, after):
        doc["arch"] = {"name": None}
        doc["occupancy"] = None
    result = compare(before, after)
    for text in (render_text(result), render_markdown(result)):
        assert "None" not in text, [line for line in text.splitlines() if "None" in line]
        assert "occupancy" not in text.lower().replace("occupancy changed", "")


@pytest.mark.parametrize("where", ["totals", "instruction", "wave_lifetime", "hits"])
@pytest.mark.parametrize("value", ["1" + "0" * 400, "1e308", "Infinity", "-1e300"])
def test_huge_numbers_never_crash_nor_print_nan(gemm, tmp_path, where, value):
    doc = copy.deepcopy(gemm)
    if where == "totals":
        doc["totals"]["stall_cycles"] = "HUGE"
    elif where == "instruction":
        doc["instructions"][0]["latency_cycles"] = "HUGE"
    elif where == "wave_lifetime":
        doc["waves"]["per_wave"]["duration"]["mean"] = "HUGE"
    else:
        doc["totals"]["hits"] = "HUGE"
        doc["instructions"][0]["hits"] = "HUGE"
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(doc).replace('"HUGE"', value))
    good = write(tmp_path / "good.json", gemm)
    for pair in ((good, hostile), (hostile, good)):
        proc = run(*pair, "--markdown", tmp_path / "out.md")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.startswith("verdict: NOT-COMPARABLE"), proc.stdout
        assert "out of any real range" in proc.stdout
        for text in (proc.stdout, (tmp_path / "out.md").read_text()):
            assert "nan" not in text.lower().replace("nano", ""), text
            assert "inf%" not in text.lower()


def test_identical_copies_of_one_capture_are_no_change(gemm_dir, tmp_path):
    copy_dir = tmp_path / gemm_dir.name
    shutil.copytree(gemm_dir, copy_dir)
    result = compare(analyze_dispatch(gemm_dir, waves=True), analyze_dispatch(copy_dir, waves=True))
    assert result["verdict"] == "neutral"
    assert result["estimated_time_change"]["basis"] == "identical_capture"
    assert result["estimated_time_change"]["visible"] is True
    text = render_text(result)
    assert "no change" in text
    assert "cannot see" not in text and "re-time" not in text


def test_arch_option_reaches_the_analysis_of_dispatch_dirs(gemm_dir, tmp_path):
    bare = tmp_path / gemm_dir.name
    shutil.copytree(gemm_dir, bare)
    out = tmp_path / "cmp.json"
    proc = run(bare, bare, "--arch", "gfx950", "--json", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["before"]["arch"] == "gfx950" and result["after"]["arch"] == "gfx950"
    assert "--arch" in run("--help").stdout
