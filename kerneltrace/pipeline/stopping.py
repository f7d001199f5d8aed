"""SIGTERM/SIGINT to the Snakemake process end the run within seconds: captures stopped, locks released.

Snakemake answers SIGTERM with a graceful stop: no new jobs, but running ones are awaited, so a
capture would keep the GPU until it ends (or its timeout); and its handler takes the scheduler's
non-reentrant lock, so a SIGTERM that lands while the main thread holds it hangs Snakemake
forever. ``stop_on_signals`` replaces the handlers with ones that never block (they write the
signal to a pipe); a worker thread sends SIGTERM to the capture jobs among this process's
descendants (their own handlers kill the rocprofv3 process group and remove the temp dir, see
rocprof/groupguard.py), then runs Snakemake's graceful stop. If the run has not ended after
GRACE_SECONDS (2 s after a repeated signal), it kills what is left, removes Snakemake's locks and
exits 128 + signal.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

# The scripts whose jobs hold the GPU (rules att_capture, pmc_capture, discover_kernels).
CAPTURE_SCRIPTS = ("att_capture", "pmc_capture", "discover_kernels")


def _processes(proc: Path) -> Iterable[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process readable under /proc."""
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        # the command name in parentheses may hold spaces and parentheses: split after the last ')'
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1].isdigit():
            yield int(entry.name), int(fields[1]), cmdline


def capture_jobs(root: int, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of capture-script processes descending from ``root``."""
    table = list(_processes(proc))
    children: dict[int, list[int]] = {}
    for pid, parent, _ in table:
        children.setdefault(parent, []).append(pid)
    descendants, stack = set(), [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in descendants:
                descendants.add(child)
                stack.append(child)
    return sorted(pid for pid, _, cmdline in table
                  if pid in descendants and any(name in cmdline for name in CAPTURE_SCRIPTS))


# How long a stopped run may take to end on its own (Snakemake's graceful stop awaits running
# jobs) before it is ended: capture jobs killed, Snakemake's locks removed, exit 128 + signal.
# A second stop signal shortens it to REPEAT_GRACE_SECONDS.
GRACE_SECONDS = 10.0
REPEAT_GRACE_SECONDS = 2.0


class _Stopper:
    """The signal handlers and the thread that does their work.

    The handlers only write the signal number to a pipe (async-signal-safe, never blocking: a
    full pipe drops the byte) and, for the first SIGINT, raise KeyboardInterrupt as Python's own
    handler would. Everything that can block (walking /proc, Snakemake's graceful stop, which
    takes the scheduler's non-reentrant lock that the interrupted main thread may hold) runs in
    the worker thread.
    """

    def __init__(self, grace: float, unlock: Callable[[], None] | None) -> None:
        self.grace, self.unlock = grace, unlock
        self.previous_term: object = signal.SIG_DFL
        self.interrupted = False
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        threading.Thread(target=self._work, name="kerneltrace-stop", daemon=True).start()

    def handler(self, signum: int, frame: object) -> None:
        try:
            os.write(self.write_fd, bytes([signum]))
        except OSError:  # pipe full: a stop is already under way
            pass
        if signum == signal.SIGINT and not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt  # Snakemake's Ctrl-C path, once; repeats only escalate

    def _work(self) -> None:
        deadline = None
        stops, last = 0, signal.SIGTERM
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.read_fd], [], [], timeout)
            if not ready:
                self._end_now(last)
                return
            last = os.read(self.read_fd, 1)[0]
            stops += 1
            if stops == 1:
                # once, and beside this loop: walking /proc takes seconds on a busy host
                threading.Thread(target=_signal_captures, args=(signal.SIGTERM,),
                                 name="kerneltrace-stop-captures", daemon=True).start()
                deadline = time.monotonic() + self.grace
                previous = self.previous_term
                if last == signal.SIGTERM and callable(previous):
                    # Snakemake's graceful stop, outside the handler and in a thread of its own:
                    # it waits for the scheduler's lock, and the deadline must still be kept
                    threading.Thread(target=previous, args=(last, None), name="kerneltrace-graceful",
                                     daemon=True).start()
                elif last == signal.SIGTERM:
                    deadline = time.monotonic()  # no graceful stop to wait for
            else:
                deadline = min(deadline, time.monotonic() + REPEAT_GRACE_SECONDS)

    def _end_now(self, signum: int) -> None:
        _signal_captures(signal.SIGKILL)
        if self.unlock is not None:
            try:
                self.unlock()
            except Exception:
                pass
        print(f"kernel-trace-analysis: stopped ({signal.Signals(signum).name}); running jobs "
              "were ended", file=sys.stderr, flush=True)
        os._exit(128 + signum)


_STOPPER: _Stopper | None = None


def _signal_captures(sig: int) -> None:
    for pid in capture_jobs(os.getpid()):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_on_signals(unlock: Callable[[], None] | None = None, grace: float | None = None) -> None:
    """Install (or re-install, after Snakemake replaced it) the SIGTERM/SIGINT wrapper.

    Call it in the main process at parse time (before Snakemake locks the working directory) and
    again in ``onstart`` (Snakemake's scheduler has installed its SIGTERM handler by then: it
    becomes the graceful stop the worker calls). ``unlock`` removes Snakemake's locks when the
    run has to be ended; ``grace`` defaults to GRACE_SECONDS (env KERNELTRACE_STOP_GRACE)."""
    global _STOPPER
    if _STOPPER is None:
        if grace is None:
            try:
                grace = float(os.environ.get("KERNELTRACE_STOP_GRACE", GRACE_SECONDS))
            except ValueError:
                grace = GRACE_SECONDS
        _STOPPER = _Stopper(grace if grace >= 0 else GRACE_SECONDS, unlock)
    elif unlock is not None:
        _STOPPER.unlock = unlock
    current = signal.getsignal(signal.SIGTERM)
    if current != _STOPPER.handler:
        _STOPPER.previous_term = current
    signal.signal(signal.SIGTERM, _STOPPER.handler)
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:  # a background job ignores Ctrl-C: keep it so
        signal.signal(signal.SIGINT, _STOPPER.handler)


def stop_captures_on_sigterm() -> None:
    """The onstart hook (kept name): install the wrapper around Snakemake's SIGTERM handler."""
    stop_on_signals()
