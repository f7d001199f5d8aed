"""Streaming a dispatch dir's wave files into WaveTotals, in one process or in two.

The files are read in order (kerneltrace.readers.wavefile.reader, ~4 MB batches) and handed to
the whole-group numpy pass (accumulate.add_group) in groups of up to GROUP_WAVES waves or
GROUP_INSTRUCTIONS instructions, which bounds the temporaries to a few MB.

With two usable CPUs and at least PARALLEL_BYTES of wave files, the file list is cut in two at a
SIMD boundary near the middle byte (files are sorted by SE, SIMD, slot, wave): a forked child
streams the second part while this process streams the first, and the child sends back its
reduced totals (a few per-row arrays and small dicts, not the waves). While streaming, peers'
intervals and wait windows of the SIMDs already passed are reduced (settle_peers), so memory
holds one batch, one group and the current SIMDs' intervals, not the whole capture's. Every total is a sum, a
union or a per-SIMD quantity, so the merged totals are the one-process totals; the result is
identical (tests compare both). Memory: each process holds one batch and one group at a time.
Anything unusual (no fork, a child that fails or dies, waves whose SIMD is on both sides of the
cut) falls back to streaming that part, or everything, in this process.

KERNELTRACE_WAVE_WORKERS=1 turns the second process off (=2 asks for it, size permitting); the
automatic choice also stays in one process when the caller runs other Python threads.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.analysis.waves.accumulate import WaveTotals, add_group, merge_totals
from kerneltrace.analysis.waves.peers import reduce_peers, scope_key, settle_peers
from kerneltrace.analysis.waves.waitcnt import flush_waits
from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.names import WAVE_FILE_RE
from kerneltrace.readers.wavefile.reader import iter_wave_files

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from kerneltrace.readers.wavefile.record import WaveFile

GROUP_WAVES = 512  # waves accumulated per numpy pass
GROUP_INSTRUCTIONS = 1 << 16  # … or instructions (bounds memory: a few MB of temporaries)
WORKERS_ENV = "KERNELTRACE_WAVE_WORKERS"
PARALLEL_BYTES = 4 << 20  # below this, fork + merge cost more than a second core saves


def stream(paths: list[Path], totals: WaveTotals, mfma_by_line: np.ndarray,
           settle: bool = True) -> WaveTotals:
    """Accumulate the wave files `paths` into `totals` in this process (waits flushed).

    `settle`: after each group, reduce peers' data of the SIMDs that no later file can hold
    (files are sorted by SE and SIMD; see peers.settle_peers), which bounds memory.
    """
    group: list[WaveFile] = []
    group_instructions = 0

    def flush() -> None:
        add_group(totals, group, mfma_by_line)
        if settle and totals.peers is not None and group:
            match = WAVE_FILE_RE.match(group[-1].path.name)
            if match:  # later files have this SE and SIMD or higher ones
                settle_peers(totals.peers, scope_key(int(match.group(1)), int(match.group(2))))

    for item in iter_wave_files(paths):
        if isinstance(item, InputError):
            totals.skipped.append({"file": Path(item.where).name, "error": item.what})
            continue
        group.append(item)
        group_instructions += len(item.instructions)
        if len(group) >= GROUP_WAVES or group_instructions >= GROUP_INSTRUCTIONS:
            flush()
            group, group_instructions = [], 0
    flush()
    flush_waits(totals.waits)
    return totals


def _broken(totals: WaveTotals) -> bool:
    return totals.peers is not None and totals.peers.broken


def accumulate(paths: list[Path], new_totals: Callable[[], WaveTotals], mfma_by_line: np.ndarray,
               workers: int | None = None) -> WaveTotals:
    """The totals of all wave files `paths` (module docstring); `workers` None = automatic."""
    halves = split(paths, worker_count(paths, workers))
    totals = _accumulate_halves(halves, new_totals, mfma_by_line) if len(halves) == 2 else None
    if totals is None or _broken(totals):
        totals = stream(paths, new_totals(), mfma_by_line)
    if _broken(totals):  # a wave file's `simd` disagrees with its name: no settling
        totals = stream(paths, new_totals(), mfma_by_line, settle=False)
    # file order, whatever the grouping: unreadable files are reported when read, implausible
    # ones when their group is accumulated
    order = {path.name: index for index, path in enumerate(paths)}
    totals.skipped.sort(key=lambda entry: order.get(entry["file"], len(order)))
    return totals


def worker_count(paths: list[Path], requested: int | None = None) -> int:
    """1 or 2: two only with two usable CPUs, fork, and at least PARALLEL_BYTES of files."""
    if requested is None:
        setting = os.environ.get(WORKERS_ENV, "").strip()
        requested = int(setting) if setting.isdigit() else None
    if requested is None:
        # automatic: not from a multi-threaded caller (another thread could hold a lock the
        # forked child would wait on forever)
        if threading.active_count() > 1:
            return 1
        try:
            requested = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            requested = os.cpu_count() or 1
    if requested < 2 or not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return 1
    size = 0
    for path in paths:
        try:
            size += path.stat().st_size
        except OSError:
            continue
        if size >= PARALLEL_BYTES:
            return 2
    return 1


def split(paths: list[Path], parts: int) -> list[list[Path]]:
    """`paths` cut in two at the SIMD boundary nearest the middle byte (or left whole)."""
    if parts < 2 or len(paths) < 2:
        return [paths]
    sizes, simds = [], []
    for path in paths:
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            sizes.append(0)
        match = WAVE_FILE_RE.match(path.name)
        simds.append(match.groups()[:2] if match else None)
    half, running, best = sum(sizes) / 2, 0, None
    for index in range(1, len(paths)):
        running += sizes[index - 1]
        if simds[index] is None or simds[index] == simds[index - 1]:
            continue
        if best is None or abs(running - half) < abs(best[1] - half):
            best = (index, running)
    if best is None:
        return [paths]
    return [paths[:best[0]], paths[best[0]:]]


def _scopes(totals: WaveTotals) -> set[int]:
    """The SIMD key of every accumulated wave (peers' per-SIMD unions need all its waves)."""
    return {scope_key(record[1], record[2]) for record in totals.per_wave}


class _PipeSender:
    """The child's end of the result pipe: one pickled object, written whole (send), then closed."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send(self, value: object) -> None:
        import pickle

        view = memoryview(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        while view:
            view = view[os.write(self._fd, view):]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


PIPE_BYTES = 1 << 20  # the pipe's buffer: the child's ~5-12 MB of totals in a few writes


def _widen(fd: int) -> None:
    """The pipe's buffer raised to PIPE_BYTES where Linux allows it (fewer switches between the
    processes while the totals pass; the default 64 KB means one per 64 KB)."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):
        pass


def _received(fd: int) -> tuple[str, Any]:
    """What the child sent through the pipe `fd` (read to its end, then closed); ("error", None)
    when it sent nothing whole (it died, was killed, ran out of memory)."""
    import pickle

    chunks = []
    try:
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return "error", None
    finally:
        os.close(fd)
    try:
        status, value = pickle.loads(b"".join(chunks))
    except Exception:  # truncated or empty: the child did not finish its send
        return "error", None
    return status, value


_UNREAPED: list[int] = []  # children that had sent everything but not yet ended
_AT_EXIT: list[bool] = []  # whether _reap_all is registered


def _reap(pid: int, wait: bool = True) -> None:
    """Collect the forked child `pid` (it has sent, failed, or was killed). Without `wait`, one
    still ending (unmapping its memory: ~5 ms) is collected at the next fork or at exit."""
    try:
        done, _ = os.waitpid(pid, 0 if wait else os.WNOHANG)
    except ChildProcessError:
        return
    if not done:
        if not _AT_EXIT:
            import atexit

            atexit.register(_reap_all)  # long ended by then: its CPU time is counted as ours
            _AT_EXIT.append(True)
        _UNREAPED.append(pid)


def _reap_all() -> None:
    while _UNREAPED:
        _reap(_UNREAPED.pop())


def _reap_earlier() -> None:
    """Collect the children of earlier calls that have ended since."""
    pending = _UNREAPED[:]
    _UNREAPED.clear()
    for pid in pending:
        _reap(pid, wait=False)


def _child(paths: list[Path], new_totals: Callable[[], WaveTotals], mfma_by_line: np.ndarray,
           connection: Any) -> None:
    """Forked worker: stream `paths`, reduce, send ("ok", totals) or ("error", why)."""
    try:
        totals = stream(paths, new_totals(), mfma_by_line)
        if totals.peers is not None:
            reduce_peers(totals.peers)
        connection.send(("ok", totals))
    except BaseException as err:
        try:
            connection.send(("error", repr(err)))
        except BaseException:
            pass
    finally:
        connection.close()


def _accumulate_halves(halves: list[list[Path]], new_totals: Callable[[], WaveTotals],
                       mfma_by_line: np.ndarray) -> WaveTotals | None:
    """First half here, second half in a forked child; None: redo everything in one process.

    A bare os.fork and a pipe (multiprocessing's import costs ~17 ms of every run): the child
    never returns from here (os._exit, no atexit handler, no buffered output of this process
    written twice: the standard streams are flushed before the fork)."""
    import gc
    import warnings

    for handle in (sys.stdout, sys.stderr):
        try:
            if handle is not None:
                handle.flush()
        except (OSError, ValueError):
            pass
    _reap_earlier()
    try:
        receiver, sender = os.pipe()
    except OSError:
        return None
    _widen(sender)
    # Objects that exist now move to the collector's permanent generation: the child's
    # collections then do not touch them, so their pages stay shared instead of being copied.
    gc.freeze()
    try:
        with warnings.catch_warnings():  # Python >= 3.12 warns about fork with threads alive
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:  # no process limit left, no memory
        gc.unfreeze()
        os.close(receiver)
        os.close(sender)
        return None
    if pid == 0:  # the child (its objects stay frozen: it ends with os._exit)
        code = 0
        try:
            os.close(receiver)
            _child(halves[1], new_totals, mfma_by_line, _PipeSender(sender))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    gc.unfreeze()
    os.close(sender)
    try:
        first = stream(halves[0], new_totals(), mfma_by_line)
        if first.peers is not None:  # while the child may still be streaming
            reduce_peers(first.peers)
    except BaseException:  # do not leave the child blocked on a pipe nobody reads
        import signal

        os.close(receiver)
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
        _reap(pid)
        raise
    status, second = _received(receiver)
    _reap(pid, wait=status != "ok")
    if status != "ok":
        second = stream(halves[1], new_totals(), mfma_by_line)
        if second.peers is not None:
            reduce_peers(second.peers)
    if _scopes(first) & _scopes(second):  # a SIMD on both sides: its unions need all its waves
        return None
    merge_totals(first, second)
    return first
