"""CounterDispatch / CounterRun: the shape every PMC reader (counter CSV, rocpd, pmc_perf) returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kerneltrace.errors import InputError


@dataclass
class CounterDispatch:
    """Counters of one dispatch of one run. Counter names are stored without the '_sum' suffix."""

    dispatch_id: int
    kernel: str
    counters: dict[str, float] = field(default_factory=dict)
    start_ns: int | None = None
    end_ns: int | None = None
    agent: str | None = None

    @property
    def duration_ns(self) -> int | None:
        if self.start_ns is None or self.end_ns is None or self.end_ns <= self.start_ns:
            return None
        return self.end_ns - self.start_ns


@dataclass
class CounterRun:
    """One application run (one rocprofv3 pass / job, one rocpd guid, one rocprof-compute workload)."""

    source: str  # file or directory as given
    format: str  # "counter_csv" | "rocpd" | "pmc_perf"
    dispatches: list[CounterDispatch]  # in dispatch order within the run
    arch: str | None = None  # gfx target when the run says so
    arch_source: str = ""
    product: str | None = None
    peak_gbps: float | None = None  # a peak shipped with the data (rocprof-compute sysinfo hbm_bw)
    peak_source: str = ""
    notes: list[str] = field(default_factory=list)

    def kernels(self) -> list[str]:
        return sorted({d.kernel for d in self.dispatches})


def parse_number(text: str, where: str, what: str) -> float:
    """float() with a clear InputError for non-numeric or non-finite values."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise InputError(
            f"{what} {text!r} is not a finite number",
            where,
            "re-export the file from rocprofv3; values must be numbers such as 2.000000 or 0.00000000e+00",
        )
    return value
