"""The timeline export's forked worker (kerneltrace/render/timeline/worker.py): same bytes as one
process, the worker's errors surface in the caller, the child never outlives the export."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kerneltrace.errors import InputError
from kerneltrace.render.timeline import worker
from kerneltrace.render.timeline.export import export_timeline
from kerneltrace.synth import write_dispatch_dir
from kerneltrace.synth.spec import demo_gemm
from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "export_timeline.py"
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")


@pytest.fixture(scope="module")
def gemm(tmp_path_factory) -> Path:
    return write_dispatch_dir(tmp_path_factory.mktemp("gemm"), demo_gemm("gfx942", iterations=6))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_fork
@pytest.mark.parametrize("fmt", ["perfetto", "json"])
def test_forked_export_writes_the_bytes_of_one_process(gemm, tmp_path, fmt):
    forked = export_timeline(gemm, tmp_path / "forked", fmt=fmt, fork=True)
    alone = export_timeline(gemm, tmp_path / "alone", fmt=fmt, fork=False)
    assert (tmp_path / "forked").read_bytes() == (tmp_path / "alone").read_bytes()
    assert forked.counts == alone.counts and forked.counts["waves"] > 0
    assert forked.bytes == alone.bytes == (tmp_path / "alone").stat().st_size
    assert forked.rows == alone.rows and forked.clock_mhz == alone.clock_mhz


@needs_fork
@pytest.mark.parametrize("setting", ["0", "1"])
def test_cli_worker_error_is_one_line_exit_2_nothing_written(tmp_path, setting):
    """No wave files: the worker (setting 1) raises the InputError; the CLI prints the same one
    line as in one process (setting 0) and writes nothing."""
    directory = tmp_path / "ui_output_agent_1_dispatch_1"
    directory.mkdir()
    (directory / "code.json").write_text('{"code": []}')
    out = tmp_path / "t.pftrace"
    done = subprocess.run([sys.executable, str(SCRIPT), str(directory), "-o", str(out)],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, worker.WORKER_ENV: setting})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "no wave files" in lines[0]
    assert "Traceback" not in done.stderr and not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".t.pftrace")]


@needs_fork
def test_cli_size_cap_in_the_worker_leaves_nothing(gemm, tmp_path):
    out = tmp_path / "t.pftrace"
    done = subprocess.run([sys.executable, str(SCRIPT), str(gemm), "-o", str(out), "--max-mb", "0.001"],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, worker.WORKER_ENV: "1"})
    assert done.returncode == 2 and "size cap" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


def _numbers():
    yield os.getpid(), np.arange(10**6, dtype=np.int64)
    yield "second", np.ones((3, 4))
    return {"done": True}


@needs_fork
def test_items_and_result_cross_the_pipe_intact():
    with worker.produced(_numbers, fork=True) as items:
        (pid, first), (word, second) = list(items)
    assert pid != os.getpid()  # made in the child
    assert np.array_equal(first, np.arange(10**6)) and word == "second"
    assert np.array_equal(second, np.ones((3, 4))) and items.result == {"done": True}
    assert _gone(pid)


def _fails_with(error: BaseException):
    def produce():
        yield os.getpid()
        raise error
    return produce


@needs_fork
def test_input_error_in_the_worker_is_the_same_input_error():
    raised = InputError("bad thing", "somewhere", "do this")
    with pytest.raises(InputError) as caught, worker.produced(_fails_with(raised), fork=True) as items:
        pid = next(items)
        next(items)
    assert (caught.value.what, caught.value.where, caught.value.fix) == ("bad thing", "somewhere", "do this")
    assert _gone(pid)


@needs_fork
def test_other_errors_are_re_raised_with_the_workers_traceback():
    with pytest.raises(ZeroDivisionError) as caught, worker.produced(
            _fails_with(ZeroDivisionError("boom")), fork=True) as items:
        list(items)
    assert any("raised in the timeline worker process" in note and "boom" in note
               for note in caught.value.__notes__)

    class Unpicklable(Exception):
        def __reduce__(self):
            raise TypeError("not picklable")

    with pytest.raises(RuntimeError, match="timeline worker process failed"), worker.produced(
            _fails_with(Unpicklable("odd")), fork=True) as items:
        list(items)


def _killed():
    yield os.getpid()
    os.kill(os.getpid(), signal.SIGKILL)
    yield "never"


@needs_fork
def test_a_worker_that_dies_is_one_input_error_naming_it():
    with pytest.raises(InputError, match="killed by signal 9") as caught, worker.produced(
            _killed, fork=True, where="the dispatch dir") as items:
        list(items)
    assert caught.value.where == "the dispatch dir" and worker.WORKER_ENV in caught.value.fix


def _endless():
    yield os.getpid()
    while True:
        yield np.zeros(1 << 16)


@needs_fork
def test_a_consumer_that_stops_early_leaves_no_child():
    with worker.produced(_endless, fork=True) as items:
        pid = next(items)
        next(items)
    assert _gone(pid)  # killed and reaped: not even a zombie


def test_one_process_runs_the_same_generator():
    with worker.produced(_numbers, fork=False) as items:
        (pid, first), _ = list(items)
    assert pid == os.getpid() and len(first) == 10**6 and items.result == {"done": True}


def test_when_it_forks(monkeypatch):
    monkeypatch.delenv(worker.WORKER_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    import threading

    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.0, 0.0))
    has_fork = hasattr(os, "fork")
    assert worker.use_fork(None) is has_fork and worker.use_fork(False) is False
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 0.0, 0.0))  # no core to spare
    assert worker.use_fork(None) is False and worker.use_fork(True) is has_fork
    monkeypatch.setenv(worker.WORKER_ENV, "1")
    assert worker.use_fork(None) is has_fork
    monkeypatch.setenv(worker.WORKER_ENV, "0")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert worker.use_fork(None) is False
    monkeypatch.delenv(worker.WORKER_ENV)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0}, raising=False)  # one CPU
    assert worker.use_fork(None) is False
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    monkeypatch.setattr(threading, "active_count", lambda: 3)  # threads: a fork could deadlock
    assert worker.use_fork(None) is False
