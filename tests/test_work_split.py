"""waves.work_split: traced waves that did no work, and the capture-quality note they raise."""

from __future__ import annotations

from kerneltrace.analysis.waves.work_split import work_split
from kerneltrace.plan.coverage import work_split_notes
from kerneltrace.thresholds import DEFAULT_STRUCTURE


def _wave(instructions: int, cycles: int) -> tuple:
    return ("se0_sm0_sl0_wv0.json", 0, 0, 0, 1000, 1000 + cycles, instructions, 0, 0, 0, 0)


def test_waves_that_leave_at_the_work_check_are_empty():
    waves = [_wave(12, 600)] * 6 + [_wave(900, 11000)] * 2
    split = work_split(waves)
    assert (split["empty_waves"], split["busy_waves"], split["waves"]) == (6, 2, 8)
    assert split["empty_share"] == 0.75 and split["empty_max_instructions"] == 12
    assert split["busy_mean_cycles"] == 11000.0 and split["empty_mean_cycles"] == 600.0
    assert split["busy_max_cycles"] == 11000


def test_a_share_just_above_the_cut_is_busy():
    cut = DEFAULT_STRUCTURE.empty_wave_share
    waves = [_wave(int(1000 * cut) + 1, 900), _wave(1000, 9000)]
    assert work_split(waves)["empty_waves"] == 0


def test_too_short_a_kernel_to_tell():
    assert work_split([_wave(10, 100), _wave(DEFAULT_STRUCTURE.empty_wave_min_busy - 1, 900)]) is None
    assert work_split([]) is None


def test_the_note_appears_only_when_many_waves_are_empty():
    many = {"waves": {"work_split": work_split([_wave(12, 600)] * 6 + [_wave(900, 11000)] * 2)}}
    (note,) = work_split_notes(many)
    assert note["kind"] == "empty-waves" and "6 of 8 traced waves (75%) did no work" in note["note"]
    few = {"waves": {"work_split": work_split([_wave(12, 600)] + [_wave(900, 11000)] * 7)}}
    assert work_split_notes(few) == []
    assert work_split_notes({}) == []
