"""Estimated kernel-time change of a before/after pair (wave lifetimes, waves in flight, hot loops).

The estimate answers "did the kernel get faster, and by how much?" from what a thread trace
measures directly: how long the traced waves lived, how many of them ran at once, and how long
one iteration of the hot loop took. Its band is the noise floor of repeated captures of one
build (``gate.time_noise``, default ``NOISE_FLOOR``); the compare verdict follows the estimate
and its band.
Why each basis, and the calibration against re-timed kernels: docs/calibration.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kerneltrace.compare.launch import by_launch
from kerneltrace.compare.values import finite
from kerneltrace.numfmt import percent
from kerneltrace.thresholds import DEFAULT_COMPARE, DEFAULT_GATE, CompareThresholds

# Half-width of the band, as a fraction of kernel time: the default of `gate.time_noise`
# (kerneltrace/thresholds.py says how it was measured; tests/test_compare_time_shared.py
# recomputes it from the shared captures).
NOISE_FLOOR = DEFAULT_GATE.time_noise


@dataclass(frozen=True)
class HotLoop:
    """The hottest loop of one capture (``waves.loops[0]``)."""

    header: int | None
    waves: int  # traced waves that ran the loop
    cycles_per_iteration: float
    iterations_per_wave: float  # per wave that ran the loop
    uniform: bool  # every traced wave ran the loop the same number of times
    share: float  # loop cycles / Σ wave durations


@dataclass(frozen=True)
class TimeSide:
    """What one capture says about time: per-wave lifetime, concurrency, hot loop, latency."""

    waves: int | None
    mean_duration: float | None
    waves_in_flight: float | None  # Σ wave lifetimes / time on the traced CU
    waves_per_simd: float | None  # occupancy limit from registers/LDS (a property of the code)
    loop: HotLoop | None
    latency_per_wave: float | None  # code.json Σ latency / traced waves (no wave files needed)


def _hot_loop(waves: Mapping[str, Any], wave_count: int) -> HotLoop | None:
    loops = waves.get("loops")
    if not isinstance(loops, list) or not loops or not isinstance(loops[0], Mapping):
        return None
    loop = loops[0]
    cpi = finite(loop.get("cycles_per_iteration"))
    iterations = finite(loop.get("iterations"))
    loop_waves = finite(loop.get("waves"))
    if not cpi or not iterations or not loop_waves:
        return None
    split = loop.get("split") if isinstance(loop.get("split"), Mapping) else {}
    share = finite(split.get("loop_share"))
    uniform = loop_waves == wave_count and iterations % loop_waves == 0
    header = loop.get("first_index") if isinstance(loop.get("first_index"), int) else None
    return HotLoop(header, int(loop_waves), cpi, iterations / loop_waves, uniform,
                   min(max(share, 0.0), 1.0) if share is not None else 1.0)


def time_side(doc: Mapping[str, Any], traced_waves: int | None) -> TimeSide:
    """Read the time-related facts of one hotspot document (``/2`` for the wave-based ones)."""
    occupancy = doc.get("occupancy") if isinstance(doc.get("occupancy"), Mapping) else {}
    totals = doc.get("totals") if isinstance(doc.get("totals"), Mapping) else {}
    latency = finite(totals.get("latency_cycles"))
    latency_per_wave = latency / traced_waves if latency and traced_waves else None
    waves = doc.get("waves") if isinstance(doc.get("waves"), Mapping) else {}
    count = waves.get("waves") if isinstance(waves.get("waves"), int) else 0
    per_wave = waves.get("per_wave") if isinstance(waves.get("per_wave"), Mapping) else {}
    duration = per_wave.get("duration") if isinstance(per_wave.get("duration"), Mapping) else {}
    mean = finite(duration.get("mean"))
    timing = waves.get("timing") if isinstance(waves.get("timing"), Mapping) else {}
    span = finite(timing.get("span_cycles"))
    if count <= 0 or not mean:
        return TimeSide(traced_waves, None, None, finite(occupancy.get("waves_per_simd")), None,
                        latency_per_wave)
    return TimeSide(count, mean, count * mean / span if span else None,
                    finite(occupancy.get("waves_per_simd")), _hot_loop(waves, count),
                    latency_per_wave)


def _change(before: float | None, after: float | None) -> float | None:
    return after / before - 1.0 if before and after is not None else None


def components(before: TimeSide, after: TimeSide) -> dict[str, Any]:
    """Every candidate measure, whether or not it is the basis (relative changes)."""
    hot_loop = None
    if before.loop and after.loop:
        hot_loop = _change(before.loop.cycles_per_iteration * before.loop.iterations_per_wave,
                           after.loop.cycles_per_iteration * after.loop.iterations_per_wave)
    return {
        "wave_lifetime": _change(before.mean_duration, after.mean_duration),
        "mean_wave_cycles": [before.mean_duration, after.mean_duration],
        "waves_in_flight": [before.waves_in_flight, after.waves_in_flight],
        "waves_per_simd": [before.waves_per_simd, after.waves_per_simd],
        "hot_loop": hot_loop,
        "hot_loop_cycles_per_iteration": [before.loop.cycles_per_iteration if before.loop else None,
                                          after.loop.cycles_per_iteration if after.loop else None],
        "hot_loop_iterations_per_wave": [before.loop.iterations_per_wave if before.loop else None,
                                         after.loop.iterations_per_wave if after.loop else None],
        "latency_per_wave": _change(before.latency_per_wave, after.latency_per_wave),
    }


def _pct(value: float) -> str:
    return percent(value, sign=True)


def _choose(before: TimeSide, after: TimeSide, identical_stream: bool, same_work: float
            ) -> tuple[str, float | None, float, str, list[str]]:
    """(basis, value, extra band, why, notes) — the measure that answers for this pair;
    hot-loop iterations per wave differing by more than `same_work` widen the band."""
    notes: list[str] = []
    if before.mean_duration and after.mean_duration:
        lifetime = after.mean_duration / before.mean_duration
        loops = before.loop and after.loop
        if identical_stream and loops and before.loop.header == after.loop.header:
            cpi = after.loop.cycles_per_iteration / before.loop.cycles_per_iteration - 1.0
            value = before.loop.share * cpi
            why = (f"identical instruction stream: the code did not change, so the lifetime "
                   f"difference ({_pct(lifetime - 1)}) comes from which waves were traced "
                   f"({before.loop.waves} of {before.waves} vs {after.loop.waves} of "
                   f"{after.waves} waves ran the loop, {before.loop.iterations_per_wave:.2f} vs "
                   f"{after.loop.iterations_per_wave:.2f} iterations each) or noise; the hot "
                   f"loop's cycles per iteration ({_pct(cpi)}) are compared at the same work, "
                   f"weighted by its share of wave time ({before.loop.share:.0%})")
            return "hot_loop", value, 0.0, why, notes
        extra = 0.0
        why = ("mean wave lifetime from the wave files: each traced wave's begin→end is the "
               "time its work took; with the same grid and waves in flight kernel time scales "
               "with it")
        if loops:
            work = after.loop.iterations_per_wave / before.loop.iterations_per_wave - 1.0
            if abs(work) > same_work and not (before.loop.uniform and after.loop.uniform):
                extra = abs(work)
                notes.append(f"the traced waves ran {_pct(work)} hot-loop iterations per wave and "
                             "the trip count varies between waves: part of the lifetime change may "
                             "be the wave sample; the band is widened by that much")
        flight_b, flight_a = before.waves_in_flight, after.waves_in_flight
        occ_b, occ_a = before.waves_per_simd, after.waves_per_simd
        occupancy_moved = bool(occ_b and occ_a and occ_b != occ_a and flight_b and flight_a)
        if occupancy_moved and (occ_a > occ_b) != (flight_a > flight_b):
            notes.append(f"the occupancy limit changed ({occ_b:g} → {occ_a:g} waves/SIMD) but the "
                         f"waves in flight on the traced CU moved the other way ({flight_b:.2f} → "
                         f"{flight_a:.2f}): the concurrency there is set by how many waves landed "
                         "on that CU, not by the limit, so only the lifetime is used")
        elif occupancy_moved:
            value = lifetime * flight_b / flight_a - 1.0
            why = (f"mean wave lifetime ({_pct(lifetime - 1)}) divided by the change of waves in "
                   f"flight on the traced CU ({flight_b:.2f} → {flight_a:.2f}, Σ lifetimes / "
                   f"time on the CU), because the occupancy limit changed ({occ_b:g} → "
                   f"{occ_a:g} waves/SIMD): kernel time ∝ lifetime / concurrency")
            return "wave_lifetime+waves_in_flight", value, extra, why, notes
        return "wave_lifetime", lifetime - 1.0, extra, why, notes
    if before.latency_per_wave and after.latency_per_wave:
        why = ("no wave lifetimes on both sides: code.json latency per traced wave (Σ "
               "instruction latency, stall included) stands in for the wave lifetime; it is "
               "95–96 % of the lifetime on the calibration captures")
        return ("latency_per_wave", after.latency_per_wave / before.latency_per_wave - 1.0, 0.0,
                why, notes)
    return ("unavailable", None, 0.0,
            "neither wave lifetimes (wave files) nor code.json latency on both sides", notes)


def by_work_unit(before: TimeSide, after: TimeSide, work: Mapping[str, Any]
                 ) -> tuple[float | None, str, list[str]]:
    """(relative time change or None, why, notes) per unit of work when the waves do different
    work and the launch is unknown: for one problem, kernel time ∝ (time a wave takes per unit
    of work) ÷ (waves in flight per CU), so a persistent GEMM doing 7 tiles per wave compares
    with its one-tile original per MFMA, not per wave."""
    unit = work.get("unit")
    work_b, work_a = finite(work.get("work_per_wave_before")), finite(work.get("work_per_wave_after"))
    if not unit or not work_b or not work_a:
        return None, "no work per wave on both sides", []
    if before.mean_duration and after.mean_duration:
        time_b, time_a, what = before.mean_duration, after.mean_duration, "mean wave lifetime"
    elif before.latency_per_wave and after.latency_per_wave:
        time_b, time_a = before.latency_per_wave, after.latency_per_wave
        what = "code.json latency per wave (no wave files on a side)"
    else:
        return None, "no wave lifetime or latency per wave on both sides", []
    notes = []
    value = (time_a / work_a) / (time_b / work_b)
    flight_b, flight_a = before.waves_in_flight, after.waves_in_flight
    if flight_b and flight_a:
        value *= flight_b / flight_a
        concurrency = (f" × waves in flight per CU {flight_b:.2f} → {flight_a:.2f} "
                       "(kernel time ∝ 1 ÷ concurrency)")
    else:
        concurrency = ""
        notes.append("waves in flight per CU unknown on a side (no wave files): taken as equal")
    why = (f"the waves do different work ({unit} per wave {work_b:,.0f} → {work_a:,.0f}) and the "
           f"launch is unknown, so time is compared per unit of work: {what} per "
           f"{unit.split(' (')[0].rstrip('s')} {time_b / work_b:,.2f} → {time_a / work_a:,.2f} "
           f"cycles{concurrency}; assumes both sides compute the same problem on equally busy "
           "CUs (the same total work; an under-filled grid on either side breaks it)")
    return value - 1.0, why, notes


def unavailable(why: str, noise: float = NOISE_FLOOR) -> dict[str, Any]:
    """An ``estimated_time_change`` without a value (the pair cannot be timed from its traces)."""
    return {"value": None, "low": None, "high": None, "basis": "unavailable", "why": why,
            "noise_floor": noise, "visible": True, "notes": [], "components": {}}


def estimate_time_change(before: Mapping[str, Any], after: Mapping[str, Any], *,
                         waves_before: int | None, waves_after: int | None,
                         identical_stream: bool, noise: float = NOISE_FLOOR,
                         same_work: bool = True, identical_capture: bool = False,
                         limits: CompareThresholds = DEFAULT_COMPARE,
                         work: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``estimated_time_change`` object of kerneltrace.compare/1 (docs/compare-json.md).

    ``same_work`` False (hits per wave differ: compare/work.py): the time change comes from the
    launch (compare/launch.py) or is unavailable. ``identical_capture``: the two documents hold
    the same instructions and counts, so the change is zero ("no change"). ``limits``: the
    `compare` thresholds in use. ``work``: the `work_per_wave` object, whose unit of work
    compares waves doing different work when the launch is unknown."""
    side_b, side_a = time_side(before, waves_before), time_side(after, waves_after)
    launch = None
    if identical_capture:
        basis, value, extra, notes = "identical_capture", 0.0, 0.0, []
        why = "the two captures hold the same instructions with the same counts"
    elif not same_work:
        value, extra, why, launch = by_launch(before, after)
        basis, notes = "launch_rounds", []
        if value is None:
            missing = why
            value, why, notes = by_work_unit(side_b, side_a, work or {})
            basis = "work_unit"
            if value is None:
                basis = "unavailable"
                why = ("the waves do different work, so per-wave figures cannot be compared, and the "
                       f"launch is unknown ({missing}; {why}): compare the per-unit-of-work "
                       "figures, or time both kernels end to end")
            else:
                notes.append(f"launch unknown ({missing})")
    else:
        basis, value, extra, why, notes = _choose(side_b, side_a, identical_stream,
                                                  limits.same_work)
    if value is not None and not math.isfinite(value):
        basis, value, why = "unavailable", None, "the time figures are out of range"
    half = noise + extra
    if value is not None:
        value = max(value, -1.0)  # a kernel cannot take less than no time
    result: dict[str, Any] = {
        "value": value,
        "low": max(value - half, -1.0) if value is not None else None,
        "high": value + half if value is not None else None,
        "basis": basis,
        "why": why,
        "noise_floor": noise,
        "visible": True,
        "notes": notes,
        "components": components(side_b, side_a),
    }
    if launch is not None:
        result["launch"] = launch
    if value is not None and identical_stream and not identical_capture and abs(value) <= half:
        result["visible"] = False
        notes.append("same instruction stream and the same per-CU timing within the noise floor: "
                     "a change outside the traced CU (grid, workgroup order/swizzle, L2 or XCD "
                     "placement, clocks) cannot be seen in these traces; re-time the kernel to "
                     "judge it")
    return result


def time_verdict(estimate: Mapping[str, Any], min_change: float | None
                 ) -> tuple[str, str] | None:
    """(verdict, reason) from the estimate and its band; None when there is no estimate."""
    value = estimate.get("value")
    if value is None:
        return None
    low, high = estimate["low"], estimate["high"]
    floor = min_change or 0.0
    band = (f"estimated time change {_pct(value)} (band {_pct(low)} … {_pct(high)}, "
            f"basis {estimate['basis']})")
    if low > 0 and value >= floor:
        return "regressed", f"{band}: slower beyond the noise floor"
    if high < 0 and -value >= floor:
        return "improved", f"{band}: faster beyond the noise floor"
    return "neutral", f"{band}: within the noise floor"
