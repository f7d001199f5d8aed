"""Timing helpers shared by the bench scripts: repeated calls of one action in this process."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def samples(action: Callable[[], object], repeat: int) -> list[float]:
    """Wall seconds of ``repeat`` calls of ``action``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    return statistics.median(samples(action, repeat))


def best_seconds(action: Callable[[], object], repeat: int) -> float:
    return min(samples(action, repeat))


def cpu_seconds(action: Callable[[], object]) -> float:
    """CPU seconds of this process spent in one call of `action` (robust to other processes)."""
    start = time.process_time()
    action()
    return time.process_time() - start


def alternating_medians(base: Callable[[], object], head: Callable[[], object],
                        repeat: int) -> tuple[float, float]:
    """Median wall seconds of ``base`` and of ``head``, called in turn so load changes fall on both."""
    base_times, head_times = [], []
    for _ in range(repeat):
        base_times.extend(samples(base, 1))
        head_times.extend(samples(head, 1))
    return statistics.median(base_times), statistics.median(head_times)


def ratio_line(label: str, base: float, head: float, unit: str = "s", scale: float = 1.0) -> str:
    return f"{label}: base {base * scale:.3f} {unit}, head {head * scale:.3f} {unit}, head/base {head / base:.2f}"
