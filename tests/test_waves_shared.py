"""Wave-level analyses on the real captures in ../shared (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltrace.analysis.waves.analyze import analyze_waves
from kerneltrace.readers.codejson import read_code_json
from kerneltrace.readers.wavefile.reader import wave_files

pytestmark = pytest.mark.shared

FLYDSL = "flydsl-kernel-profiling-lib/examples"
COMPLETE = [
    f"{FLYDSL}/flash_attn_func/att_viewer/big/ui_output_agent_38430_dispatch_44",
    f"{FLYDSL}/pa/att_viewer/big/ui_output_agent_10886_dispatch_209",
    f"{FLYDSL}/moe_reduce/att_viewer/big/ui_output_agent_42768_dispatch_39",
    f"{FLYDSL}/vec_add/att_viewer/big/ui_output_agent_14705_dispatch_25",
]


def analyze(directory: Path) -> dict:
    return analyze_waves(directory, read_code_json(directory / "code.json"))


@pytest.mark.parametrize("relative", COMPLETE, ids=lambda r: r.split("/")[1])
def test_complete_captures_are_consistent(captures, relative):
    directory = captures / relative
    result = analyze(directory)
    paths = wave_files(directory)
    assert result["files"] == result["waves"] == len(paths) > 0
    assert result["bytes"] == sum(p.stat().st_size for p in paths)
    assert result["consistency"]["ok"], result["consistency"]["details"]
    assert result["occupancy"]["available"] is True
    assert 1 <= result["occupancy"]["max_waves"]
    states = result["states"]
    assert all(value >= 0 for value in states.values()) and states["exec"] > 0
    for wait in result["waitcnt"]:
        assert wait["asm"].startswith("s_waitcnt")
        assert sum(p["cycles"] for p in wait["producers"]) + wait["unattributed_cycles"] \
            <= wait["stall_cycles"]


def test_flash_attention_hot_wait_and_loop(captures):
    result = analyze(captures / COMPLETE[0])
    hottest = result["waitcnt"][0]
    producer = hottest["dominant_producer"]
    assert producer is not None and producer["asm"].startswith("buffer_load")
    assert producer["source"]  # source-mapped capture: the plan can name the line
    (loop, *_) = result["loops"]
    assert loop["first_index"] < loop["last_index"]
    assert loop["iterations_per_wave"] > 2
    assert 0 < loop["mfma_busy_fraction"] < 1


def test_moe_reduce_thousands_of_waves(captures):
    result = analyze(captures / COMPLETE[2])
    assert result["waves"] == 4112
    assert result["per_wave"]["duration"]["min"] <= result["per_wave"]["duration"]["max"]
    assert result["timing"]["begin_spread"] > 0  # waves launched over the whole dispatch
    assert len(result["longest_waves"]) == 3


def test_softmax_without_wave_files_is_flagged(captures):
    directory = captures / f"{FLYDSL}/softmax/att_viewer/big/ui_output_agent_47920_dispatch_13"
    consistency = analyze(directory)["consistency"]
    assert consistency["ok"] is False
    assert len(consistency["missing_files"]) > 1000  # filenames.json lists 2056 wave files


def test_legacy_capture_with_missing_se_files(captures):
    directory = captures / "aiter-glog-fork-legacy-att/att/flash_fwd_splitkv_mla_kernel_v1_ui"
    result = analyze(directory)
    assert result["layout"] == "legacy" and result["waves"] == 544
    assert result["occupancy"]["available"] is False  # packed legacy events: skipped with a note
    assert result["consistency"]["ok"] is False
    assert result["consistency"]["missing_files"]  # some SE files of v1 are missing
