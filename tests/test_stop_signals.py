"""Stop signals never hang a run (issue 22 point 7): storms of SIGTERM (and SIGINT mixed in) sent to
the Snakemake process at several points of a real run end it, with the capture's process group
gone and Snakemake's locks released (the next invocation needs no --unlock and completes).

Before the fix the onstart wrapper ran Snakemake's graceful stop inside the signal handler, which
takes the scheduler's non-reentrant lock; a SIGTERM landing while the main thread held it hung
every thread in futex_wait. Waiting is bounded by a generous guard (60 s) against hanging the
suite, not a speed requirement; the times measured are in RELIABILITY.md."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_helpers import double_env
from test_capture_signals import GUARD_SECONDS, _alive, _app_pid, _hanging_cmd, _wait_for

from kerneltrace.synth import demo_gemm, demo_vec_add, write_att_run

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
STORM = 6  # signals per storm
STORM_GAP = 0.05  # seconds between them


def _snakemake(work: Path, env: dict, *config: str) -> subprocess.Popen:
    log = open(work.parent / "snakemake.log", "w")
    return subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work),
                             "-c", "2", "--config", *config], env=env, stdout=subprocess.DEVNULL,
                            stderr=log, text=True, start_new_session=True)


def _storm(proc: subprocess.Popen, signals: list[int]) -> None:
    for number in range(STORM):
        if proc.poll() is not None:
            return
        try:
            os.kill(proc.pid, signals[number % len(signals)])
        except ProcessLookupError:
            return
        time.sleep(STORM_GAP)


def _ended(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=GUARD_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("Snakemake still runs after a storm of stop signals (hung)") from None


# Points of a dir= run where the storm lands, each seen from outside: the Snakefile parsed (the
# handlers installed), discovery done (the dispatch jobs scheduled), hotspot analyses written.
POINTS = {
    "parsed": lambda work: "kernel-trace-analysis: run" in (work.parent / "snakemake.log").read_text(),
    "discovered": lambda work: any(work.glob("results/*/dispatches.tsv")),
    "analysing": lambda work: any(work.glob("results/*/hotspots/*.json")),
}


def _no_locks(work: Path) -> None:
    locks = work / ".snakemake" / "locks"
    assert not locks.exists() or not any(locks.iterdir()), f"locks left: {list(locks.iterdir())}"


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("storm") / "caps"
    write_att_run(folder, [demo_vec_add(), demo_gemm()], calls=6)
    return folder


@pytest.mark.parametrize("point, signals", [("parsed", [signal.SIGTERM]),
                                            ("discovered", [signal.SIGTERM, signal.SIGINT]),
                                            ("analysing", [signal.SIGTERM])],
                         ids=["parsed-TERM", "discovered-TERM+INT", "analysing-TERM"])
def test_a_storm_of_stop_signals_ends_a_dir_run_and_releases_its_locks(captures, tmp_path, point, signals):
    env = double_env(tmp_path)
    work = tmp_path / "w"
    work.mkdir()
    config = (f"dir={captures}", "run=storm")
    proc = _snakemake(work, env, *config)
    try:
        _wait_for(lambda: POINTS[point](work) or proc.poll() is not None, f"the run to reach '{point}'")
        assert proc.poll() is None, "the run ended before the storm: nothing was tested"
        _storm(proc, signals)
        _ended(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # (the exit code says little: a late signal of the storm can land while Python finalizes and
    # has restored the default action; the locks are gone by then)
    _no_locks(work)
    again = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work),
                            "-c", "2", "--config", *config], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (work / "reports" / "storm" / "plan.md").is_file()


@pytest.mark.parametrize("signals", [[signal.SIGTERM], [signal.SIGINT, signal.SIGTERM]], ids=["TERM", "INT+TERM"])
def test_a_storm_during_a_capture_ends_the_run_and_the_capture(tmp_path, signals):
    env = double_env(tmp_path)
    pidfile = tmp_path / "app.pid"
    cmd = (f"if [ -n \"$FLYDSL_DEBUG_ENABLE_DEBUG_INFO\" ] && [ -f {tmp_path}/discovered ]; "
           f"then {_hanging_cmd(pidfile)}; fi; touch {tmp_path}/discovered")
    config = tmp_path / "c.yaml"
    config.write_text(f"cmd: '{cmd}'\nrun: sig\ntimeout: 0\n")
    work = tmp_path / "w"
    work.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work),
                             "-c", "2", "--configfile", str(config)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    app = None
    try:
        app = _app_pid(pidfile)
        _storm(proc, signals)
        _ended(proc)
        _wait_for(lambda: not _alive(app), f"the profiled command (pid {app}) to die")
        _no_locks(work)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if app and _alive(app):
            os.kill(app, signal.SIGKILL)


def test_the_handler_never_blocks_and_hands_the_stop_to_a_thread(monkeypatch):
    """Unit level: with the main thread holding the lock Snakemake's graceful stop needs, a storm
    of SIGTERMs returns at once; the stop runs in another thread once the lock is free, and the
    repeated signals end the run (the exit is intercepted here). Before the fix the handler ran
    the graceful stop itself and waited for a lock its own thread held (here: 5 s, then gave up)."""
    import threading

    from kerneltrace.pipeline import stopping

    lock = threading.Lock()
    stopped, blocked, ended = threading.Event(), threading.Event(), threading.Event()

    def graceful(signum, frame):  # Snakemake's exit_gracefully: `with self._lock`
        if threading.current_thread() is threading.main_thread() and not lock.acquire(timeout=5):
            blocked.set()  # the real one would wait forever: the main thread holds the lock
            return
        if threading.current_thread() is not threading.main_thread():
            lock.acquire()
        lock.release()
        stopped.set()

    monkeypatch.setattr(stopping, "_STOPPER", None, raising=False)
    monkeypatch.setattr(stopping, "capture_jobs", lambda root, proc=None: [])
    monkeypatch.setattr(stopping.os, "_exit", lambda code: ended.set())
    previous = signal.signal(signal.SIGTERM, graceful)
    previous_int = signal.getsignal(signal.SIGINT)
    try:
        stopping.stop_captures_on_sigterm()  # the onstart hook
        with lock:  # the main thread is inside the scheduler's critical section
            for _ in range(STORM):
                os.kill(os.getpid(), signal.SIGTERM)  # each handled here, in the main thread
                time.sleep(STORM_GAP)
        assert not blocked.is_set(), "the signal handler waited for the scheduler's lock"
        assert stopped.wait(GUARD_SECONDS), "the graceful stop never ran"
        # the storm (repeated signals) shortens the grace: the run is ended, not awaited
        assert ended.wait(GUARD_SECONDS), "a repeated stop never ended the run"
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
