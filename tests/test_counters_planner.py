"""Planner: every job fits one hardware pass, names are arch-correct, read and write stay apart."""

from __future__ import annotations

import pytest

from kerneltrace.counters import table
from kerneltrace.counters.planner import block_usage, fits_one_pass, plan_jobs
from kerneltrace.errors import InputError

ARCHES = table.SUPPORTED_ARCHES


def metric_sets(arch: str) -> list[list[str] | None]:
    singles = [[m] for m in table.METRICS if table.metric_keys(m, arch) is not None]
    everything = [m for m in table.METRICS if table.metric_keys(m, arch) is not None]
    return [None, everything, *singles]


@pytest.mark.parametrize("arch", ARCHES)
def test_no_job_exceeds_any_block_limit(arch):
    for metrics in metric_sets(arch):
        for job in plan_jobs(arch, metrics):
            for block, used in block_usage(job.counters).items():
                assert used <= table.BLOCK_LIMITS[block], (arch, metrics, job)
            assert fits_one_pass(job.counters)


@pytest.mark.parametrize("arch", ARCHES)
def test_every_requested_metric_is_planned_whole_in_one_job(arch):
    for metrics in metric_sets(arch):
        jobs = plan_jobs(arch, metrics)
        expected = metrics or [m for m in table.DEFAULT_METRICS if table.metric_keys(m, arch)]
        planned = [m for job in jobs for m in job.metrics]
        assert sorted(planned) == sorted(expected)
        for job in jobs:
            for metric in job.metrics:
                needed = {table.request_name(k, arch) for k in table.metric_keys(metric, arch)}
                assert needed <= set(job.counters)


@pytest.mark.parametrize("arch", ARCHES)
def test_read_and_write_counters_never_share_a_pass(arch):
    for metrics in metric_sets(arch):
        for job in plan_jobs(arch, metrics):
            keys = {table.key_of(c, arch) for c in job.counters}
            assert not (keys & table.FETCH_KEYS and keys & table.WRITE_KEYS), job


def test_arch_correct_names():
    names_90a = {c for job in plan_jobs("gfx90a") for c in job.counters}
    names_942 = {c for job in plan_jobs("gfx942") for c in job.counters}
    names_950 = {c for job in plan_jobs("gfx950") for c in job.counters}
    assert "TCC_EA_RDREQ_sum" in names_90a and not any("EA0" in n for n in names_90a)
    assert {"TCC_EA0_RDREQ_sum", "TCC_BUBBLE_sum"} <= names_942
    assert not any(n.startswith("TCC_EA_") for n in names_942 | names_950)
    assert {"TCC_EA0_RDREQ_64B_sum", "TCC_EA0_RDREQ_128B_sum"} <= names_950
    assert not any("RDREQ_64B" in n or "RDREQ_128B" in n for n in names_942 | names_90a)


def test_default_plan_is_compact():
    # docs/pmc-counters.md §2.1: two groups suffice on gfx90a/gfx942; gfx950 adds the cross-check pass
    assert len(plan_jobs("gfx90a")) == 2
    assert len(plan_jobs("gfx942")) == 2
    assert len(plan_jobs("gfx950")) == 3


def test_block_usage_counts_sum_and_raw_as_one_event():
    assert block_usage(["TCC_HIT", "TCC_HIT_sum", "SQ_WAVES", "SQC_ICACHE_HITS"]) == {"TCC": 1, "SQ": 2}
    assert not fits_one_pass([f"TCC_X{i}_sum" for i in range(5)])
    assert fits_one_pass([f"TCC_X{i}_sum" for i in range(4)])


def test_bad_requests_are_input_errors():
    with pytest.raises(InputError):
        plan_jobs("gfx1100")
    with pytest.raises(InputError):
        plan_jobs("gfx942", ["no_such_metric"])
    with pytest.raises(InputError):
        plan_jobs("gfx942", ["read_bytes_crosscheck"])  # gfx950 only


def test_plan_cli_writes_one_file_per_job(tmp_path, repo_root):
    import json
    import subprocess
    import sys

    out = tmp_path / "plan"
    proc = subprocess.run(
        [sys.executable, str(repo_root / "scripts" / "pmc_plan.py"), "--arch", "gfx942",
         "--kernel-name", "void k<int>(float*)", "--out-dir", str(out)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.glob("pmc_job*.json"))
    assert len(files) == len(plan_jobs("gfx942"))
    for path in files:
        jobs = json.loads(path.read_text())["jobs"]
        assert len(jobs) == 1
        job = jobs[0]
        assert job["kernel_include_regex"] == r"^void k<int>\(float\*\)$"
        assert job["kernel_trace"] is True and job["output_format"] == ["csv"]
        assert fits_one_pass(job["pmc"])
    regex = subprocess.run(
        [sys.executable, str(repo_root / "scripts" / "pmc_plan.py"), "--arch", "gfx90a",
         "--kernel", "pa_.*decode", "--out-dir", str(tmp_path / "r"), "--format", "yaml"],
        capture_output=True, text=True,
    )
    assert regex.returncode == 0, regex.stderr
    import yaml

    first = yaml.safe_load((tmp_path / "r" / "pmc_job1.yaml").read_text())
    assert first["jobs"][0]["kernel_include_regex"] == "pa_.*decode"
