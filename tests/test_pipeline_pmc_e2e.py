"""End-to-end PMC stage through the Snakemake CLI: use 1 with the rocprofv3 double (pmc_plan ->
pmc_capture per planned job -> l2_analysis -> plan), and dir= with a counter_collection.csv beside
the dispatch dirs; plus `--waves` only for dispatch dirs that hold wave files, and the
self-contained reports/{run}/ folder (hotspot and L2 documents kept beside summary.json)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake

from kerneltrace.pipeline.manifest import read_manifest
from kerneltrace.synth import counter_rows, demo_vec_add, write_att_run, write_counter_collection

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def env(tmp_path):
    return double_env(tmp_path)


def job_blocks(stdout: str, rule: str) -> list[str]:
    """The scheduler's printout of every job of ``rule`` (one block per job)."""
    blocks = []
    for chunk in stdout.split("\n\n"):
        lines = [line.strip() for line in chunk.splitlines()]
        if any(line in (f"rule {rule}:", f"localrule {rule}:") for line in lines):
            blocks.append(chunk)
    return blocks


def memory_section(plan_md: str) -> str:
    start = plan_md.index("### Memory (L2)")
    return plan_md[start:plan_md.index("\n### ", start + 1)]


def test_cmd_with_pmc_plans_captures_each_job_and_feeds_the_plan(tmp_path, env):
    work = tmp_path / "w"
    config = tmp_path / "pmc.yaml"
    config.write_text('cmd: "true bench_pa.py"\npmc:\n  enabled: true\n')
    result = snakemake(work, env, "--configfile", str(config))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    pmc = work / "results" / "bench_pa" / "pmc" / "k000"
    plan = json.loads((pmc / "jobs" / "plan.json").read_text())
    assert plan["arch"] == "gfx942"  # from the discovery run's agent_info.csv
    job_files = sorted(p.name for p in (pmc / "jobs").glob("pmc_job*.yaml"))
    assert job_files == sorted(entry["file"] for entry in plan["jobs"]) and len(job_files) >= 2
    # One pmc_capture job per planned input file, each holding one GPU.
    blocks = job_blocks(result.stderr, "pmc_capture")  # Snakemake prints the job list on stderr
    assert len(blocks) == len(job_files)
    assert all("gpu=1" in block for block in blocks)
    for entry in plan["jobs"]:
        record = json.loads((pmc / "captures" / entry["file"].replace(".yaml", ".json")).read_text())
        (counter_file,) = record["files"]
        assert Path(counter_file).parent.name == "pass_1" and counter_file.endswith("_counter_collection.csv")
        with open(work / counter_file, newline="") as handle:  # relative to the working dir
            rows = list(csv.DictReader(handle))
        assert {"Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value"} <= set(rows[0])
        assert {row["Counter_Name"] for row in rows} == set(entry["counters"])
        assert {row["Kernel_Name"] for row in rows} == {"demo_gemm_kernel_0"}
    # The double's traffic model: 60 % L2 hits, read mix 1/8 32 B, 1/8 64 B, 3/4 128 B, 90 % DRAM.
    l2 = json.loads((work / "results" / "bench_pa" / "l2" / "k000.json").read_text())
    assert l2["schema"] == "kerneltrace.l2/1" and len(l2["dispatches"]) == 4
    aggregate = l2["aggregate"]
    assert aggregate["l2_hit_rate"] == pytest.approx(0.6, abs=1e-3)
    assert aggregate["read_32b_fraction"] == pytest.approx(0.125, abs=1e-3)
    assert aggregate["read_128b_fraction"] == pytest.approx(0.75, abs=1e-3)
    assert aggregate["dram_read_fraction"] == pytest.approx(0.9, abs=1e-3)
    assert 0 < aggregate["fraction_of_peak"] < 1
    reports = work / "reports" / "bench_pa"
    memory = memory_section((reports / "plan.md").read_text())
    assert "l2\\_hit\\_rate | 0.6 |" in memory and "read\\_32b\\_fraction | 0.125 |" in memory
    # reports/{run}/ keeps the stage documents: hotspots (with waves: the double writes wave files) and L2.
    kept = sorted((reports / "hotspots").glob("*.json"))
    assert [p.name for p in kept] == ["k000_000.json", "k000_001.json", "k000_002.json"]
    assert all(json.loads(p.read_text())["schema"] == "kerneltrace.hotspots/2" for p in kept)
    assert json.loads((reports / "l2" / "k000.json").read_text()) == l2


def test_dir_with_counter_csv_and_waves_only_where_wave_files_exist(tmp_path, env):
    spec = demo_vec_add()
    captures = tmp_path / "captures"
    (with_waves,) = write_att_run(captures / "a", [spec], calls=1)
    (without_waves,) = write_att_run(captures / "b", [spec], calls=1, with_waves=False)
    # Hand-made counters, gfx942 spelling: hits 300 / misses 100; reads 100 = 20 x 32 B + 50 x 128 B
    # (TCC_BUBBLE) + the rest (30) x 64 B.
    values = {"TCC_HIT_sum": 300, "TCC_MISS_sum": 100, "TCC_EA0_RDREQ_sum": 100,
              "TCC_EA0_RDREQ_32B_sum": 20, "TCC_BUBBLE_sum": 50}
    write_counter_collection(captures / "pmc_counter_collection.csv", counter_rows(spec, 1, values))
    config = tmp_path / "dir.yaml"
    config.write_text(f"dir: {captures}\nrun: cached\npmc:\n  enabled: true\n")
    work = tmp_path / "w"
    result = snakemake(work, env, "--configfile", str(config))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert not job_blocks(result.stderr, "pmc_capture")  # cached captures: no GPU job
    rows = {row["dispatch_dir"]: row for row in read_manifest(work / "results" / "cached" / "dispatches.tsv")}
    assert int(rows[str(with_waves)]["wave_files"]) > 0 and rows[str(without_waves)]["wave_files"] == "0"
    schemas = {}
    for path in (work / "reports" / "cached" / "hotspots").glob("*.json"):
        doc = json.loads(path.read_text())
        schemas[doc["dispatch_dir"]] = (doc["schema"], "waves" in doc)
    assert schemas == {str(with_waves): ("kerneltrace.hotspots/2", True),
                       str(without_waves): ("kerneltrace.hotspots/1", False)}
    l2 = json.loads((work / "results" / "cached" / "l2" / "k000.json").read_text())
    assert l2["aggregate"]["l2_hit_rate"] == pytest.approx(0.75)
    assert l2["aggregate"]["read_32b_fraction"] == pytest.approx(0.2)
    assert l2["aggregate"]["fabric_read_bytes"] == pytest.approx(32 * 20 + 64 * 30 + 128 * 50)
    memory = memory_section((work / "reports" / "cached" / "plan.md").read_text())
    assert "l2\\_hit\\_rate | 0.75 |" in memory and "read\\_32b\\_fraction | 0.2 |" in memory
    assert (work / "reports" / "cached" / "l2" / "k000.json").is_file()
