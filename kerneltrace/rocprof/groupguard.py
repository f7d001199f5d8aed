"""Process-group guard for a capture: the rocprofv3 group dies with the job that started it.

Run as ``python groupguard.py PARENT_PID -- ARGV...`` (a standalone file: no package import, so it
starts fast and works without an installed package). The guard leads the new session/process group
that the capture runs in. It asks the kernel for SIGTERM when its parent (the capture job) dies,
even by SIGKILL (``PR_SET_PDEATHSIG``), and on SIGTERM/SIGINT/SIGHUP it terminates the whole group:
rocprofv3, the profiled application and its children. Otherwise it waits for ARGV and exits with
its status (a death by signal is re-raised on the guard).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
# Seconds the group gets between SIGTERM and SIGKILL; KERNELTRACE_KILL_GRACE overrides it (the
# tests set a short one; kerneltrace/rocprof/capture.py reads the same variable).
GRACE_ENV = "KERNELTRACE_KILL_GRACE"
DEFAULT_GRACE_SECONDS = 5.0


def grace_seconds() -> float:
    """The kill grace from the environment (a bad or negative value: the default)."""
    try:
        value = float(os.environ.get(GRACE_ENV, DEFAULT_GRACE_SECONDS))
    except ValueError:
        return DEFAULT_GRACE_SECONDS
    return value if value >= 0 else DEFAULT_GRACE_SECONDS


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the job's signal handlers still kill the group
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _terminate_group(child: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace_seconds()
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(0, signal.SIGKILL)  # the rest of the group, the guard included


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: groupguard.py PARENT_PID -- ARGV...", file=sys.stderr)
        return 2
    parent, command = int(argv[0]), argv[2:]
    child: subprocess.Popen[bytes] | None = None

    def stop(signum: int, _frame: object) -> None:
        if child is None:  # nothing started yet, or starting right now: take the group down
            os.killpg(0, signal.SIGKILL)
        _terminate_group(child)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    _die_with_parent(parent)
    try:
        child = subprocess.Popen(command)
    except OSError as err:
        print(f"cannot start {command[0]}: {err.strerror}", file=sys.stderr)
        return 127
    status = child.wait()
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
