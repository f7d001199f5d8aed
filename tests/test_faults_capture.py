"""Capture faults on the rocprofv3 test double, seen from the job: scripts/att_capture.py and
scripts/pmc_capture.py as CLIs (exit code, one stderr line, log), and the PMC stage through Snakemake.

Every test counts the double's invocations (ROCPROF_DOUBLE_CALL_LOG) so that "retried", "failed
fast" and "not re-run" are facts, not guesses.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_helpers import DOUBLE_DIR, calls, double_env, snakemake

from kerneltrace import synth
from kerneltrace.rocprof import jobfile

REPO = Path(__file__).resolve().parents[1]
GEMM_REGEX = jobfile.exact_name_regex(synth.demo_gemm().display_name)


@pytest.fixture()
def env(tmp_path) -> dict[str, str]:
    return double_env(tmp_path, call_log=True)


def att_job(tmp_path: Path, **settings: object) -> Path:
    values = {**jobfile.AttSettings().__dict__, **settings}
    path = tmp_path / "k000.yaml"
    path.write_text(jobfile.dump_jobs([jobfile.att_job(GEMM_REGEX, jobfile.AttSettings(**values))], "yaml"))
    return path


def att_capture(tmp_path: Path, env: dict[str, str], *extra: str, cmd: str = "true", **settings: object):
    """Run scripts/att_capture.py; returns (process, capture record or None, log path)."""
    out = tmp_path / "captures" / "k000"
    log = tmp_path / "att.log"
    argv = [sys.executable, str(REPO / "scripts" / "att_capture.py"), "--job", str(att_job(tmp_path, **settings)),
            "--cmd", cmd, "--out-dir", str(out), "--log", str(log), *extra]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    record_path = out.with_name(out.name + ".capture.json")
    record = json.loads(record_path.read_text()) if record_path.exists() else None
    return proc, record, log


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr  # never a traceback
    return lines[0]


# ---- empty trace: retry on another att_target_cu, then fail naming the remedies ---------------

def test_empty_trace_retries_other_cus_then_succeeds(tmp_path, env):
    env["ROCPROF_DOUBLE_TRACE_CU"] = "3"  # only CU 3 sees waves
    proc, record, _ = att_capture(tmp_path, env, "--retries", "2")
    assert proc.returncode == 0, proc.stderr
    assert [a["att_target_cu"] for a in record["attempts"]] == [1, 2, 3]
    assert len(calls(env)) == 3
    assert list((tmp_path / "captures" / "k000").glob("ui_output_agent_*"))


def test_empty_trace_gives_up_after_configured_retries_naming_remedies(tmp_path, env):
    env["ROCPROF_DOUBLE_FAIL"] = "empty-trace"
    proc, record, log = att_capture(tmp_path, env, "--retries", "1")
    assert proc.returncode == 1 and record is None
    line = one_error_line(proc)
    assert "empty trace after 2 attempt(s)" in line and "att_target_cu tried: 1, 2" in line
    for remedy in ("att_target_cu", "att_shader_engine_mask", "kernel_include_regex", "bigger problem"):
        assert remedy in line
    assert str(log) in line
    assert len(calls(env)) == 2  # the configured count, no more
    assert not (tmp_path / "captures" / "k000").exists()  # no empty shell promoted as a result


def test_att_retries_config_key_reaches_the_capture_job():
    capture_rules = (REPO / "workflow" / "rules" / "capture.smk").read_text()
    assert 'retries=config["att_retries"]' in capture_rules
    schema = (REPO / "workflow" / "schemas" / "config.schema.yaml").read_text()
    assert "att_retries:" in schema


# ---- buffer full / Data Lost: one retry with 0xC000000, truncated when it persists ------------

def test_buffer_full_retries_once_with_bigger_buffer(tmp_path, env):
    env["ROCPROF_DOUBLE_FAIL"] = "buffer-full"
    proc, record, _ = att_capture(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert [a["att_buffer_size"] for a in record["attempts"]] == ["0x6000000", "0xC000000"]
    assert record["truncated"] is False
    assert len(calls(env)) == 2


def test_buffer_full_that_persists_keeps_the_trace_marked_truncated(tmp_path, env):
    env["ROCPROF_DOUBLE_FAIL"] = "buffer-full-persistent"
    proc, record, log = att_capture(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert len(record["attempts"]) == 2 and record["truncated"] is True
    assert len(calls(env)) == 2  # exactly one retry
    decoded = subprocess.run([sys.executable, str(REPO / "scripts" / "decode.py"), record["capture_dir"],
                              "--log", str(log), "--manifest", str(tmp_path / "manifest.tsv")],
                             env=env, capture_output=True, text=True, check=False)
    assert decoded.returncode == 0, decoded.stderr
    assert json.loads((tmp_path / "manifest.json").read_text())["truncated"] is True


@pytest.mark.parametrize("content", ["{not json", "[]", '{"truncated": true}', '{"capture_dir": 3}'])
def test_a_bad_capture_record_is_one_error_line(tmp_path, content):
    record = tmp_path / "capture.json"
    record.write_text(content)
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "decode.py"), "--record", str(record),
                           "--manifest", str(tmp_path / "manifest.tsv")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr
    assert str(record) in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "manifest.tsv").exists()


def test_data_lost_in_the_log_counts_as_buffer_full(tmp_path, env):
    # The double cannot print "Data Lost"; a wrapper around it can (same argv, same outputs).
    wrapper = tmp_path / "bin" / "rocprofv3"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\necho 'Data Lost: 12 packets' >&2\nexec {DOUBLE_DIR / 'rocprofv3'} \"$@\"\n")
    wrapper.chmod(0o755)
    proc, record, _ = att_capture(tmp_path, env, "--rocprofv3", str(wrapper))
    assert proc.returncode == 0, proc.stderr
    assert [a["att_buffer_size"] for a in record["attempts"]] == ["0x6000000", "0xC000000"]
    assert record["truncated"] is True


# ---- decoder missing / INVALID_SHADER_DATA: fail fast with the fix -----------------------------

def test_decoder_missing_fails_before_running_anything(tmp_path, env):
    env["ROCPROF_ATT_LIBRARY_PATH"] = str(tmp_path / "nowhere")
    env["ROCM_PATH"] = str(tmp_path / "no_rocm")
    proc, record, _ = att_capture(tmp_path, env)
    assert proc.returncode == 2 and record is None
    line = one_error_line(proc)
    assert "rocprof-trace-decoder" in line and "7.1.1" in line and "fix:" in line
    assert calls(env) == []  # the expensive run never started


@pytest.mark.parametrize(("mode", "words"), [
    ("decoder-missing", "att_library_path"),
    ("invalid-shader-data", "aqlprofile"),
])
def test_fatal_decoder_signatures_fail_fast_with_fix(tmp_path, env, mode, words):
    env["ROCPROF_DOUBLE_FAIL"] = mode
    proc, record, log = att_capture(tmp_path, env, "--retries", "3")
    assert proc.returncode != 0 and record is None
    line = one_error_line(proc)
    assert words in line and "fix" in line and str(log) in line
    assert len(calls(env)) == 1  # no retry can help: none is made


# ---- the profiled command crashes or hangs -----------------------------------------------------

def test_crash_fails_with_exit_code_and_log_path(tmp_path, env):
    env["ROCPROF_DOUBLE_FAIL"] = "crash"
    proc, record, log = att_capture(tmp_path, env)
    assert proc.returncode == 139 and record is None
    line = one_error_line(proc)
    assert "exit code 139" in line and str(log) in line
    assert "Segmentation fault" in log.read_text()


def test_failing_command_exit_code_propagates(tmp_path, env):
    proc, _, log = att_capture(tmp_path, env, cmd="echo boom >&2; exit 5")
    assert proc.returncode == 5
    assert "exit code 5" in one_error_line(proc) and "boom" in log.read_text()


def test_hang_is_killed_after_the_configured_timeout(tmp_path, env):
    env["ROCPROF_DOUBLE_FAIL"] = "hang"
    proc, record, log = att_capture(tmp_path, env, "--timeout", "1")
    assert proc.returncode == 124 and record is None
    line = one_error_line(proc)
    assert "timed out after 1.0 s" in line and str(log) in line and "timeout:" in line


def test_hung_application_grandchildren_are_killed_too(tmp_path, env):
    marker = tmp_path / "still_running"
    cmd = f"(sleep 2; touch {marker}) & sleep 30"
    started = time.monotonic()
    proc, _, _ = att_capture(tmp_path, env, "--timeout", "1", cmd=cmd)
    assert proc.returncode == 124
    time.sleep(max(0.0, 2.5 - (time.monotonic() - started)))  # past the grandchild's own deadline
    assert not marker.exists()


# ---- a PMC job hangs: timeout, the other PMC jobs' results are kept ---------------------------

# The capture timeout of the hung-PMC run. Every PMC job of the run gets it, and a job that is not
# hung still starts the group guard, the double (a Python process importing kerneltrace.synth)
# and the command, then writes its CSVs: on a loaded 2-core machine that took more than the
# former 3 s, so a healthy job timed out too and the run lost two jobs instead of one. 15 s is
# several times a healthy job's worst seen time; the hung job sleeps far beyond it, and a killed
# double dies on SIGTERM at once (the 0.5 s kill grace of pipeline_helpers.double_env).
PMC_HANG_TIMEOUT = 15


@pytest.fixture(scope="module")
def hung_pmc_run(tmp_path_factory):
    """A cmd run with PMC on, whose second PMC job hangs (PMC_HANG_TIMEOUT), run with --keep-going."""
    root = tmp_path_factory.mktemp("pmc_hang")
    env = double_env(root, call_log=True)
    counter = root / "pmc_runs"
    # PMC runs are the ones without the debug-info variable; the second one hangs (until killed).
    cmd = (f'if [ -z "$FLYDSL_DEBUG_ENABLE_DEBUG_INFO" ]; then n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); '
           f'echo $n > {counter}; if [ $n -eq 2 ]; then sleep 600; fi; fi')
    config = root / "config.yaml"
    config.write_text(json.dumps({"cmd": cmd, "run": "pmc", "timeout": PMC_HANG_TIMEOUT,
                                  "pmc": {"enabled": True}}))
    work = root / "w"
    first = snakemake(work, env, "--configfile", str(config), "--keep-going")
    return {"env": env, "config": config, "work": work, "first": first,
            "pmc": work / "results" / "pmc" / "pmc" / "k000"}


def _jobs(pmc: Path) -> tuple[list[str], list[str]]:
    planned = sorted(p.stem for p in (pmc / "jobs").glob("pmc_job*.yaml"))
    kept = sorted(p.stem for p in (pmc / "captures").glob("*.json"))
    return planned, kept


@pytest.mark.e2e
def test_hung_pmc_job_times_out_and_other_results_are_kept(hung_pmc_run):
    assert hung_pmc_run["first"].returncode != 0
    pmc, work = hung_pmc_run["pmc"], hung_pmc_run["work"]
    planned, kept = _jobs(pmc)
    assert len(planned) >= 2, planned
    assert len(kept) == len(planned) - 1  # every other job's record survived
    for job in kept:
        assert list((pmc / "raw" / job).rglob("*counter_collection.csv"))
    (hung,) = set(planned) - set(kept)
    assert not (pmc / "raw" / hung).exists()  # nothing half-written promoted
    hung_log = (work / "logs" / "pmc" / "pmc_capture" / "k000" / f"{hung}.log").read_text()
    assert f"timed out after {PMC_HANG_TIMEOUT}" in hung_log and "killed after timeout" in hung_log
    assert not (work / "reports" / "pmc" / "plan.md").exists()  # no plan silently missing its L2 part
    assert list((work / "results" / "pmc" / "hotspots").glob("*.json"))  # the ATT branch finished


@pytest.mark.e2e
def test_rerun_after_pmc_hang_captures_only_the_hung_job(hung_pmc_run):
    env, pmc = hung_pmc_run["env"], hung_pmc_run["pmc"]
    planned, kept = _jobs(pmc)
    (hung,) = set(planned) - set(kept)
    before = len(calls(env))
    second = snakemake(hung_pmc_run["work"], env, "--configfile", str(hung_pmc_run["config"]))
    again = calls(env)[before:]
    assert len(again) == 1 and any(hung in part for part in again[0])  # nothing else re-captured
    assert second.returncode == 0, second.stderr[-3000:]
    assert (hung_pmc_run["work"] / "reports" / "pmc" / "plan.md").is_file()
