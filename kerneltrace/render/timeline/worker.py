"""Runs the timeline's producer in a forked worker, so building events overlaps encoding them.

The export is a producer (wave files read and parsed, group passes, events: export._produce, a
generator) and a consumer (the writer: encoding, compression, the file). On the two cores of the
project machines they take about the same time, so `produced` forks: the child iterates the
producer and sends each item down a pipe, the parent (the caller) receives item n + 1 while it
writes item n. Items are pickled (protocol 5) with their numpy arrays passed out of band: one
copy into the pipe, one out, no per-element work. The pipe's capacity bounds what is in flight
(memory stays flat: the child blocks until the parent has read).

The child never decides anything the in-process run would not: the same generator runs; an
InputError it raises is re-raised in the parent with the same what/where/fix (one `error:`
line, exit 2, nothing written, as in one process); any other exception is re-raised when it
pickles, else as a RuntimeError with the child's traceback; a child that dies without a word
(killed, out of memory) is an InputError naming the worker. When the consumer stops early (the
size cap, an error writing) the child is killed and reaped, so nothing outlives the export.

No fork (one process, same items, same bytes) when `fork` is False, `KERNELTRACE_TIMELINE_WORKER`
is "0", the platform has no `os.fork`, other Python threads are running (a forked child would
inherit locks they hold), the fork itself fails, or, unless told (`fork` True, the variable
"1"), when no second core is free: fewer than two usable CPUs, or a 1-minute load average of
CPUs - 0.5 or more (two processes then share one core, and the worker only adds its overhead:
≈ 15 % more CPU, the pipe, a second heap, copy-on-write faults).
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

from kerneltrace.errors import InputError

WORKER_ENV = "KERNELTRACE_TIMELINE_WORKER"  # "0": export in one process, "1": always fork
BUSY_MARGIN = 0.5  # fork while the load average is under (usable CPUs - this)
PIPE_BYTES = 1 << 20  # requested pipe capacity: fewer wake-ups per message than the 64 KB default
_ITEM, _DONE, _INPUT_ERROR, _ERROR = range(4)
_HEADER = struct.Struct("<BQI")  # kind, pickle bytes, out-of-band buffers
_LENGTH = struct.Struct("<Q")


class Items:
    """The producer's items in order; `result` is its return value once they are exhausted."""

    def __init__(self, items: Generator[Any, None, Any]) -> None:
        self._items = items
        self.result: Any = None
        self.finished = False

    def __iter__(self) -> Items:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._items)
        except StopIteration as stop:
            self.result, self.finished = stop.value, True
            raise StopIteration from None


def use_fork(fork: bool | None) -> bool:
    """Whether `produced` forks (module docstring): `fork` True/False, else never with
    WORKER_ENV "0" or other threads running, always with "1", else only when a second core is
    free (at least two usable CPUs, the 1-minute load average under their count - BUSY_MARGIN:
    with no core to spare, two processes take turns on one and the worker's overhead is all
    that is left of it)."""
    if not hasattr(os, "fork"):
        return False
    if fork is not None:
        return fork
    setting = os.environ.get(WORKER_ENV, "").strip()
    threading = sys.modules.get("threading")
    if setting == "0" or (threading is not None and threading.active_count() > 1):
        return False
    if setting == "1":
        return True
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # unknown: assume the machine is ours
        load = 0.0
    return cpus >= 2 and load < cpus - BUSY_MARGIN


@contextmanager
def produced(produce: Callable[[], Generator[Any, None, Any]], fork: bool | None = None,
             where: str = "") -> Iterator[Items]:
    """The items of `produce()` (called in a forked child when `use_fork(fork)`), as an Items
    iterator; `where` names the work in the error of a child that dies."""
    if not use_fork(fork):
        yield Items(produce())
        return
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no memory or process slot for a child: one process does it all
        os.close(read_end)
        os.close(write_end)
        yield Items(produce())
        return
    if pid == 0:  # the child: never returns into the caller's code
        os.close(read_end)
        _child(produce, write_end)
    os.close(write_end)
    child = _Child(pid)
    items = Items(_receive(read_end, child, where))
    try:
        yield items
    finally:
        os.close(read_end)
        child.reap(wait=items.finished)


def _child(produce: Callable[[], Generator[Any, None, Any]], fd: int) -> None:
    code = 0
    try:
        try:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except (ImportError, AttributeError, OSError):  # the default capacity works too
            pass
        try:
            items = produce()
            while True:
                try:
                    item = next(items)
                except StopIteration as stop:
                    _send(fd, _DONE, stop.value)
                    break
                _send(fd, _ITEM, item)
        except InputError as err:
            _send(fd, _INPUT_ERROR, (err.what, err.where, err.fix))
        except BaseException as err:  # re-raised in the parent (the in-process behaviour)
            _send(fd, _ERROR, _error_payload(err))
    except BaseException:  # the parent is gone or stopped reading: nothing left to tell
        code = 1
    finally:
        os._exit(code)


def _error_payload(err: BaseException) -> tuple[bytes | None, str]:
    import traceback

    text = "".join(traceback.format_exception(err))
    try:
        pickled = pickle.dumps(err)
        pickle.loads(pickled)
    except Exception:
        pickled = None
    return pickled, text


def _send(fd: int, kind: int, payload: Any) -> None:
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(payload, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    head = _HEADER.pack(kind, len(data), len(raws)) + b"".join(
        _LENGTH.pack(raw.nbytes) for raw in raws)
    for part in (memoryview(head + data), *raws):
        sent = 0
        while sent < part.nbytes:
            sent += os.write(fd, part[sent:])


def _read(fd: int, size: int) -> bytearray | None:
    """Exactly `size` bytes, None at end of file."""
    data = bytearray(size)
    view = memoryview(data)
    got = 0
    while got < size:
        count = os.readv(fd, [view[got:]])
        if not count:
            return None
        got += count
    return data


def _message(fd: int) -> tuple[int, Any] | None:
    """(kind, payload) of the next message, None at end of file (also in the middle of one)."""
    head = _read(fd, _HEADER.size)
    if head is None:
        return None
    kind, size, count = _HEADER.unpack(head)
    lengths = _read(fd, _LENGTH.size * count) if count else bytearray()
    data = _read(fd, size) if lengths is not None else None
    if data is None:
        return None
    buffers = []
    for (length,) in _LENGTH.iter_unpack(lengths):
        buffer = _read(fd, length)
        if buffer is None:
            return None
        buffers.append(buffer)
    return kind, pickle.loads(data, buffers=buffers)


def _receive(fd: int, child: _Child, where: str) -> Generator[Any, None, Any]:
    while True:
        message = _message(fd)
        if message is None:
            status = child.reap(wait=True)
            raise InputError(f"the timeline worker process ended before the export was complete "
                             f"({_status_text(status)}; nothing written)", where,
                             f"re-run; if it recurs, set {WORKER_ENV}=0 to export in one process "
                             "(and check free memory)")
        kind, payload = message
        if kind == _ITEM:
            yield payload
        elif kind == _DONE:
            return payload
        elif kind == _INPUT_ERROR:
            raise InputError(*payload)
        else:
            pickled, text = payload
            if pickled is not None:
                err = pickle.loads(pickled)
                err.add_note(f"raised in the timeline worker process:\n{text}")
                raise err
            raise RuntimeError(f"the timeline worker process failed:\n{text}")


class _Child:
    """The forked worker, collected exactly once (its pid is never signalled after that)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.status: int | None = None
        self.reaped = False

    def reap(self, wait: bool) -> int | None:
        """Collect the child (`wait`: it is ending by itself; else it is killed first, as the
        export stops without it); its wait status."""
        import signal

        if not self.reaped:
            self.reaped = True
            try:
                if not wait:
                    os.kill(self.pid, signal.SIGKILL)
                self.status = os.waitpid(self.pid, 0)[1]
            except (ChildProcessError, ProcessLookupError):
                self.status = None
        return self.status


def _status_text(status: int | None) -> str:
    if status is None:
        return "its exit status is unknown"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
