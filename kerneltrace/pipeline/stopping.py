"""SIGTERM to the Snakemake process stops running captures too (Snakemake's own stop waits for them).

Snakemake answers SIGTERM with a graceful stop: no new jobs, but running ones are awaited, so a
capture would keep the GPU until it ends (or its timeout). ``stop_captures_on_sigterm`` wraps
Snakemake's handler: it first sends SIGTERM to the capture jobs among this process's descendants
(their own handlers kill the rocprofv3 process group and remove the temp dir, see
rocprof/groupguard.py), then lets Snakemake stop as it would. Analysis jobs are left to finish.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
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


def stop_captures_on_sigterm() -> None:
    """Install the wrapper around the current SIGTERM handler (call once Snakemake has set its)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: object) -> None:
        for pid in capture_jobs(os.getpid()):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)
