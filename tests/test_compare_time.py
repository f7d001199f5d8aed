"""Estimated time change on synthetic before/after pairs with a known change of wave lifetime.

The expected change is recomputed from the generator's own simulation (``simulate``: each wave's
begin/end), independently of the wave reader and of the comparison code.
"""

from __future__ import annotations

import dataclasses
from statistics import mean

import pytest

from kerneltrace.compare.document import compare
from kerneltrace.compare.estimate import NOISE_FLOOR
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.synth import demo_gemm, demo_vec_add, write_dispatch_dir
from kerneltrace.synth.simulate import simulate

ADD_INDEX = 11  # demo_vec_add: v_add_f32_e32 v2, v2, v3


def mean_lifetime(spec) -> float:
    return mean(wave.end - wave.begin for wave in simulate(spec))


def analyzed(tmp_path, name, spec) -> dict:
    return analyze_dispatch(write_dispatch_dir(tmp_path / name, spec), waves=True)


def vec_add_with_fma(stall: int):
    """vec_add whose add became an FMA with ``stall`` extra cycles: a changed instruction stream."""
    spec = demo_vec_add()
    instructions = list(spec.instructions)
    assert instructions[ADD_INDEX].asm.startswith("v_add_f32")
    instructions[ADD_INDEX] = dataclasses.replace(
        instructions[ADD_INDEX], asm="v_fma_f32 v2, v2, v3, v2", stall_cycles=stall)
    return dataclasses.replace(spec, instructions=tuple(instructions))


def gemm_with_loop_stall(extra: int, seed: int = 0):
    """demo_gemm with ``extra`` stall cycles on one loop instruction: same instruction stream."""
    spec = demo_gemm(seed=seed)
    index = spec.loop.first + 2
    instructions = list(spec.instructions)
    instructions[index] = dataclasses.replace(
        instructions[index], stall_cycles=instructions[index].stall_cycles + extra)
    return dataclasses.replace(spec, instructions=tuple(instructions))


@pytest.mark.parametrize(("stall", "verdict"), [(600, "regressed"), (20, "neutral")])
def test_changed_stream_uses_the_wave_lifetime(tmp_path, stall, verdict):
    before_spec, after_spec = demo_vec_add(), vec_add_with_fma(stall)
    expected = mean_lifetime(after_spec) / mean_lifetime(before_spec) - 1
    result = compare(analyzed(tmp_path, "before", before_spec),
                     analyzed(tmp_path, "after", after_spec))
    estimate = result["estimated_time_change"]
    assert result["instructions"]["identical_sequence"] is False
    assert estimate["basis"] == "wave_lifetime"
    assert estimate["value"] == pytest.approx(expected, abs=1e-4)
    assert estimate["low"] == pytest.approx(expected - NOISE_FLOOR, abs=1e-4)
    assert estimate["high"] == pytest.approx(expected + NOISE_FLOOR, abs=1e-4)
    assert result["verdict"] == verdict
    assert result["verdict_basis"] == "estimated_time_change"


def test_faster_after_is_improved(tmp_path):
    before_spec, after_spec = vec_add_with_fma(600), demo_vec_add()
    expected = mean_lifetime(after_spec) / mean_lifetime(before_spec) - 1
    assert expected < -NOISE_FLOOR
    result = compare(analyzed(tmp_path, "before", before_spec),
                     analyzed(tmp_path, "after", after_spec))
    assert result["estimated_time_change"]["value"] == pytest.approx(expected, abs=1e-4)
    assert result["verdict"] == "improved"
    assert result["reasons"][0].startswith(f"estimated time change {expected:+.1%}")


def test_same_stream_uses_hot_loop_cycles_per_iteration(tmp_path):
    before_spec, after_spec = demo_gemm(), gemm_with_loop_stall(400)
    lifetime = mean_lifetime(after_spec) / mean_lifetime(before_spec) - 1
    result = compare(analyzed(tmp_path, "before", before_spec),
                     analyzed(tmp_path, "after", after_spec))
    estimate = result["estimated_time_change"]
    assert result["instructions"]["identical_sequence"] is True
    assert estimate["basis"] == "hot_loop"
    # Every wave runs the same iterations: the loop's share × its per-iteration change is the
    # lifetime change, less the part of the lifetime outside the loop.
    assert lifetime > NOISE_FLOOR
    assert estimate["value"] == pytest.approx(lifetime, abs=0.02)
    assert estimate["visible"] is True
    assert result["verdict"] == "regressed"


def test_same_stream_same_timing_says_the_trace_cannot_see_it(tmp_path):
    # Another seed: the same code with other jitter, as two captures of one build would be.
    result = compare(analyzed(tmp_path, "before", demo_gemm(seed=0)),
                     analyzed(tmp_path, "after", demo_gemm(seed=1)))
    estimate = result["estimated_time_change"]
    assert abs(estimate["value"]) < 0.02
    assert result["verdict"] == "neutral"
    assert estimate["visible"] is False
    assert any("cannot be seen in these traces" in note for note in result["notes"])


def test_occupancy_change_divides_by_waves_in_flight(tmp_path):
    before = analyzed(tmp_path, "before", demo_vec_add())
    after = analyzed(tmp_path, "after", vec_add_with_fma(300))
    flight_before = before["waves"]["waves"] * before["waves"]["per_wave"]["duration"]["mean"] \
        / before["waves"]["timing"]["span_cycles"]
    flight_after = after["waves"]["waves"] * after["waves"]["per_wave"]["duration"]["mean"] \
        / after["waves"]["timing"]["span_cycles"]
    lifetime = after["waves"]["per_wave"]["duration"]["mean"] \
        / before["waves"]["per_wave"]["duration"]["mean"]
    # Same direction as the waves in flight: the limit rose or fell with them.
    before["occupancy"]["waves_per_simd"] = 4
    after["occupancy"]["waves_per_simd"] = 8 if flight_after > flight_before else 2
    estimate = compare(before, after)["estimated_time_change"]
    assert estimate["basis"] == "wave_lifetime+waves_in_flight"
    assert estimate["value"] == pytest.approx(lifetime * flight_before / flight_after - 1)
    # Against the waves in flight: the limit did not bind, only the lifetime counts.
    after["occupancy"]["waves_per_simd"] = 2 if flight_after > flight_before else 8
    estimate = compare(before, after)["estimated_time_change"]
    assert estimate["basis"] == "wave_lifetime"
    assert any("moved the other way" in note for note in estimate["notes"])


def _waves(mean: float, loop_waves: int, iterations: int, waves: int = 8) -> dict:
    return {"waves": waves, "per_wave": {"duration": {"mean": mean}},
            "timing": {"span_cycles": mean * 2},
            "loops": [{"first_index": 3, "last_index": 6, "cycles_per_iteration": 100.0,
                       "iterations": iterations, "waves": loop_waves,
                       "split": {"loop_share": 0.8}}]}


def test_changed_stream_with_a_varying_trip_count_widens_the_band():
    from tests.test_compare import BASE_ROWS, make_doc

    before, after = make_doc(BASE_ROWS), make_doc(BASE_ROWS)
    after["instructions"][0]["asm"] = "v_fma_f32 v5, v6, v7, v5"  # another instruction stream
    before["waves"] = _waves(1000.0, loop_waves=6, iterations=30)  # 5 per loop wave, 6 of 8 waves
    after["waves"] = _waves(1100.0, loop_waves=8, iterations=48)  # 6 per loop wave
    estimate = compare(before, after)["estimated_time_change"]
    assert estimate["basis"] == "wave_lifetime"
    assert estimate["value"] == pytest.approx(0.10)
    assert estimate["high"] - estimate["value"] == pytest.approx(NOISE_FLOOR + 0.2)
    assert any("trip count varies" in note for note in estimate["notes"])
    # Every wave runs the loop the same number of times: the change set the trip count.
    before["waves"] = _waves(1000.0, loop_waves=8, iterations=40)
    after["waves"] = _waves(1100.0, loop_waves=8, iterations=48)
    estimate = compare(before, after)["estimated_time_change"]
    assert estimate["high"] - estimate["value"] == pytest.approx(NOISE_FLOOR)
