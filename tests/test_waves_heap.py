"""heap.keep_freed_memory: freed numpy temporaries are reused instead of faulted in again."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kerneltrace.analysis.waves import heap

# A fresh interpreter frees three 2 MB arrays at a time, 30 times over, and prints its minor
# page faults over the loop: glibc's default trims the freed top of the heap every time (6 MB
# free > twice its 2 MB threshold), so each round faults 1536 pages in again.
LOOP = f"""
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from {heap.__name__} import keep_freed_memory
    keep_freed_memory()
    keep_freed_memory()  # idempotent
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):
    arrays = [np.ones(1 << 18) for _ in range(3)]
    del arrays
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", LOOP, mode], capture_output=True, text=True,
                          env=env, check=True)
    return int(done.stdout)


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError, OSError):
        return False


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's")
def test_freed_blocks_are_reused_not_faulted_again() -> None:
    default, kept = _faults("default"), _faults("keep")
    assert default > 20_000  # the pattern does re-fault by default (30 x 1536 pages)
    assert kept < default / 10

