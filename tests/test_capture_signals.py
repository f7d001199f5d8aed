"""Capture processes die with the pipeline (issue 14 point 1): SIGKILL/SIGTERM of the capture job and
SIGINT (Ctrl-C) or SIGTERM to Snakemake (its process group, or the Snakemake process alone) take the
rocprofv3 process group along; temp dirs are removed.

The profiled command writes its PID and then sleeps for 10 minutes; a test passes when that process
is gone after the stop. Waiting for processes to appear or disappear is bounded (a generous 60 s
guard against hanging the suite, not a speed requirement)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_helpers import double_env
from test_faults_capture import att_job

REPO = Path(__file__).resolve().parents[1]
GUARD_SECONDS = 60.0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + GUARD_SECONDS
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        time.sleep(0.1)


def _app_pid(pidfile: Path) -> int:
    _wait_for(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit(), "the profiled command to start")
    return int(pidfile.read_text())


def _hanging_cmd(pidfile: Path) -> str:
    return f"echo $$ > {pidfile}; exec sleep 600"


@pytest.fixture
def env(tmp_path):
    return double_env(tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_stopping_the_capture_job_kills_the_capture_group(tmp_path, env, sig):
    pidfile = tmp_path / "app.pid"
    out = tmp_path / "captures" / "k000"
    job = subprocess.Popen([sys.executable, str(REPO / "scripts" / "att_capture.py"), "--job", str(att_job(tmp_path)),
                            "--cmd", _hanging_cmd(pidfile), "--out-dir", str(out), "--log", str(tmp_path / "att.log"),
                            "--timeout", "0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    app = _app_pid(pidfile)
    job.send_signal(sig)
    job.wait()
    try:
        _wait_for(lambda: not _alive(app), f"the profiled command (pid {app}) to die after {sig.name}")
    finally:
        if _alive(app):  # never leave the test's sleeper behind
            os.kill(app, signal.SIGKILL)
    if sig != signal.SIGKILL:  # a killed job cannot clean up; the next run reuses the temp dir
        assert not list(out.parent.glob(".k000.*.tmp")), "temp capture dir left behind"
        assert job.returncode != 0


@pytest.mark.e2e
@pytest.mark.parametrize("sig,whole_group", [(signal.SIGINT, True), (signal.SIGTERM, True),
                                             (signal.SIGTERM, False)])
def test_stopping_snakemake_kills_the_capture(tmp_path, sig, whole_group):
    env = double_env(tmp_path)
    pidfile = tmp_path / "app.pid"
    config = tmp_path / "c.yaml"
    # discovery runs the command too: only the ATT capture (debug info on) hangs
    config.write_text(f"cmd: 'if [ -n \"$FLYDSL_DEBUG_ENABLE_DEBUG_INFO\" ] && [ -f {tmp_path}/discovered ]; "
                      f"then {_hanging_cmd(pidfile)}; fi; touch {tmp_path}/discovered'\nrun: sig\ntimeout: 0\n")
    work = tmp_path / "w"
    work.mkdir()
    # a terminal's Ctrl-C signals the whole foreground group: Snakemake and its jobs, not the capture session
    smk = subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work),
                            "-c", "2", "--configfile", str(config)], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        app = _app_pid(pidfile)
        # Ctrl-C, and SIGTERM as sent by timeout(1), scancel and service managers: to the group;
        # `kill PID` of Snakemake alone: its graceful stop, which the Snakefile's onstart wraps so
        # that capture jobs are stopped instead of awaited (pipeline/stopping.py).
        if whole_group:
            os.killpg(smk.pid, sig)
        else:
            os.kill(smk.pid, sig)
        try:
            smk.wait(timeout=GUARD_SECONDS)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"Snakemake still waits for its capture after {sig.name}") from None
        _wait_for(lambda: not _alive(app), f"the profiled command (pid {app}) to die after {sig.name} to Snakemake")
    finally:
        if smk.poll() is None:
            os.killpg(smk.pid, signal.SIGKILL)
        if pidfile.exists() and _alive(int(pidfile.read_text())):  # never leave the test's sleeper behind
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_capture_jobs_are_found_among_descendants_only(tmp_path):
    """The SIGTERM wrapper's process walk: capture scripts below the root, nothing else."""
    from kerneltrace.pipeline.stopping import capture_jobs

    proc = tmp_path / "proc"
    for pid, parent, name, cmd in [(10, 1, "snakemake", b"python\0-m\0snakemake"),
                                   (11, 10, "sh", b"/bin/sh\0-c\0python tmp1.att_capture.py"),
                                   (12, 11, "python (x) y", b"python\0.snakemake/scripts/tmp1.att_capture.py"),
                                   (13, 10, "python", b"python\0tmp2.hotspot_analyzer.py"),
                                   (20, 1, "python", b"python\0other/att_capture.py")]:
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(f"{pid} ({name}) S {parent} 0 0")
        (proc / str(pid) / "cmdline").write_bytes(cmd)
    (proc / "self").mkdir()
    assert capture_jobs(10, proc) == [11, 12]
    assert capture_jobs(13, proc) == []
