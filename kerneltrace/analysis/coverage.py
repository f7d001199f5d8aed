"""Trace coverage: how much of the dispatch's duration the traced waves span (`structure.trace_coverage`).

ATT traces a few CUs; the plan's gains are shares of the traced waves' time. They are shares of
kernel time only as far as those waves span the kernel: `span_cycles` (first wave begin to last
wave end) at the shader clock, against the kernel-trace row's `duration_ns`. The clock is the
capture's measured one (realtime.json, recorded as `waves.clock_mhz`), else the agent's maximum
engine clock, else the one every product of the arch shares (both maxima: the span in ns is then
a lower bound). The kernel-trace row is often joined by kernel name from another run; it
describes this trace only when the traced waves per CU agree with what its grid gives a CU
(`waves_per_cu` vs `expected_waves_per_cu`, judged by the plan: plan/coverage.py). Facts only;
the judgement (early exit, the factor on gains) uses the plan's thresholds.
"""

from __future__ import annotations

from collections.abc import Mapping

from kerneltrace.arch.table import arch_clock_mhz


def _clock(doc: Mapping) -> tuple[float | None, str]:
    measured = (doc.get("waves") or {}).get("clock_mhz")
    if isinstance(measured, int | float) and measured > 0:
        return float(measured), "realtime.json (measured)"
    agent = ((doc.get("metadata") or {}).get("agent") or {}).get("max_engine_clock_mhz")
    if isinstance(agent, int | float) and agent > 0:
        return float(agent), "agent_info maximum engine clock (the real clock may be lower)"
    table = arch_clock_mhz(((doc.get("arch") or {}).get("name")) or "")
    if table:
        return float(table), "arch table maximum engine clock (the real clock may be lower)"
    return None, "unknown"


def clock_mhz(doc: Mapping) -> float | None:
    """The shader clock the traced cycles run at (measured, else the agent's or the arch's
    maximum: then a span in µs is a lower bound)."""
    return _clock(doc)[0]


def trace_coverage(doc: Mapping, launch: Mapping | None) -> dict | None:
    """The `trace_coverage` facts of one hotspot document (None without wave timing)."""
    waves = doc.get("waves") or {}
    span = (waves.get("timing") or {}).get("span_cycles")
    if not isinstance(span, int) or span <= 0:
        return None
    mhz, source = _clock(doc)
    metadata = doc.get("metadata") or {}
    duration = (metadata.get("kernel_trace") or {}).get("duration_ns")
    span_ns = round(span * 1000 / mhz, 1) if mhz else None
    coverage = (round(span_ns / duration, 4)
                if span_ns is not None and isinstance(duration, int | float) and duration > 0 else None)
    residency = waves.get("residency") or {}
    expected = None
    if launch and launch.get("cu_count"):
        expected = round(max(launch["waves_per_workgroup"], launch["grid_waves"] / launch["cu_count"]), 3)
    totals = doc.get("totals") or {}
    rows, executed = totals.get("instructions"), totals.get("executed_instructions")
    return {
        "span_cycles": span,
        "clock_mhz": mhz,
        "clock_source": source,
        "span_ns": span_ns,
        "duration_ns": duration if isinstance(duration, int | float) else None,
        "kernel_trace_join": metadata.get("kernel_trace_join"),
        "coverage": coverage,
        "waves_per_cu": residency.get("waves_per_cu"),
        "expected_waves_per_cu": expected,
        "wave_duration_cycles": ((waves.get("per_wave") or {}).get("duration") or {}).get("mean"),
        "executed_fraction": round(executed / rows, 4) if rows and isinstance(executed, int) else None,
    }
