"""Time estimate on real captures: A/A re-captures are neutral, calibration pairs go the right way.

A/A: re-captures of one flash_attn_func build (../shared/captures). Calibration: before/after
pairs whose speed the authors measured (../shared/calibration, tests/calibration_pairs.py PAIRS).
Both skip when ../shared is absent.
"""

from __future__ import annotations

import pytest
from calibration_pairs import AA_PAIRS, PAIRS, dispatch_dir

from kerneltrace.compare.document import compare
from kerneltrace.compare.estimate import NOISE_FLOOR
from kerneltrace.compare.inputs import load_side

pytestmark = pytest.mark.shared

_DOCS: dict[str, dict] = {}


def doc(path) -> dict:
    key = str(path)
    if key not in _DOCS:
        _DOCS[key] = load_side(path).single  # a dispatch dir: analyzed with its wave files
    return _DOCS[key]


@pytest.mark.parametrize("pair", AA_PAIRS, ids=lambda p: p[1].rsplit("/", 2)[-2] + "/"
                         + p[1].rsplit("_", 3)[-3])
def test_recaptures_of_one_build_are_neutral(captures, pair):
    before, after = doc(captures / pair[0]), doc(captures / pair[1])
    result = compare(before, after)
    estimate = result["estimated_time_change"]
    assert result["instructions"]["identical_sequence"] is True
    assert estimate["basis"] == "hot_loop"
    assert estimate["low"] < 0 < estimate["high"]
    assert result["verdict"] == "neutral"
    assert estimate["visible"] is False


def test_noise_floor_covers_the_same_commit_recapture(captures):
    """The band's half-width is at least what two captures of one commit differ by per wave."""
    before, after = (doc(captures / path) for path in AA_PAIRS[0])

    def per_wave(d, key):
        waves = d["waves"]
        return {"lifetime": waves["per_wave"]["duration"]["mean"],
                "span": waves["timing"]["span_cycles"] / waves["waves"],
                "hits": d["totals"]["hits"] / waves["waves"]}[key]

    spread = max(abs(per_wave(after, k) / per_wave(before, k) - 1)
                 for k in ("lifetime", "span", "hits"))
    assert 0.05 < spread <= NOISE_FLOOR


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_calibration_pair_direction_and_verdict(calibration, pair):
    before = doc(dispatch_dir(calibration, pair.before))
    after = doc(dispatch_dir(calibration, pair.after))
    result = compare(before, after)
    estimate = result["estimated_time_change"]
    measured = pair.measured_time_change
    assert estimate["basis"].startswith("wave_lifetime")
    if abs(measured) >= 0.05:
        # Every change of 5 % or more: right direction, and the verdict says so.
        assert (estimate["value"] < 0) == (measured < 0)
        assert result["verdict"] == ("improved" if measured < 0 else "regressed")
    else:
        assert result["verdict"] == "neutral"
    # The band is wide enough for the measured change, within twice the noise floor.
    assert estimate["low"] - NOISE_FLOOR <= measured <= estimate["high"] + NOISE_FLOOR
