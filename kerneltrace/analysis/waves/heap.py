"""The C allocator's thresholds for the wave analyses: freed temporaries reused, not re-faulted.

The analyses allocate numpy temporaries of 0.5-10 MB per group (a TK GEMM capture: ~2M
instructions in groups of 64K). glibc's malloc serves such blocks by `mmap` and returns them
on free (its threshold grows only up to the largest block freed so far), and trims the top of
the heap whenever 2x that threshold is free, so the next block of the same size is fresh memory
the kernel faults in page by page: on the 61 MB capture, 86 000 page faults and 0.2-0.5 s of
system time in one process, a third of the analysis. With blocks up to MMAP_BELOW served from
the heap and up to TRIM_ABOVE of free heap kept, the same run takes 38 000 faults (the first
touch of its ~180 MB peak) and 0.1 s; the peak RSS is the same (measured: 211 vs 215 MB).

The setting is process-wide and stays (a short-lived CLI or pipeline job runs the analysis);
other C libraries and Python's own small objects are not affected. Only on glibc; elsewhere,
or if `mallopt` refuses, nothing changes. The results never depend on it.
"""

from __future__ import annotations

import os

MMAP_BELOW = 32 << 20  # blocks below this come from the heap (glibc's largest allowed value)
TRIM_ABOVE = 64 << 20  # free heap kept at its top before trimming
_M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_DONE: list[bool] = []


def keep_freed_memory() -> None:
    """Set glibc's mmap and trim thresholds (module docstring), once per process."""
    if _DONE:
        return
    _DONE.append(True)
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return
    except (AttributeError, ValueError, OSError):  # not glibc (or no confstr)
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # the mmap threshold first: setting it ends glibc's dynamic adjustment of both
    if mallopt(_M_MMAP_THRESHOLD, MMAP_BELOW):
        mallopt(_M_TRIM_THRESHOLD, TRIM_ABOVE)
