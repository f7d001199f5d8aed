"""Wave-level analyses on hand-made and synthetic wave files whose answers are known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltrace.analysis.waves.analyze import analyze_waves
from kerneltrace.readers.codejson import read_code_json

SOURCE = "/src/k.py"
# code.json rows (row 0 is the kernel label); the loop is rows 2..6.
ASM = [
    "s_load_dwordx2 s[4:5], s[0:1], 0x0",  # 1
    "buffer_load_dwordx4 v[0:3], v8, s[4:7], 0 offen",  # 2  loop header, A load
    "buffer_load_dwordx4 v[4:7], v9, s[4:7], 0 offen",  # 3  V load (youngest)
    "s_waitcnt vmcnt(0)",  # 4
    "v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]",  # 5  32-cycle pass
    "s_cbranch_scc1 65530",  # 6  back edge to row 2
    "s_endpgm",  # 7
]
WAIT_STALLS = (100, 60, 20)  # stall of the wait in iterations 0, 1, 2
MFMA_PASS = 32


def make_wave(begin: int) -> dict:
    """One wave: row 1, three loop iterations (rows 2-6), row 7. Returns the wave object."""
    instructions, t = [[begin, 1, 0, 4, 1]], begin + 4
    for k, stall in enumerate(WAIT_STALLS):
        last = k == len(WAIT_STALLS) - 1
        instructions += [[t, 3, 0, 4, 2], [t + 4, 3, 0, 4, 3], [t + 8, 9, stall, stall, 4],
                         [t + 8 + stall, 6, 0, 4, 5], [t + 12 + stall, 8 if last else 7, 0, 4, 6]]
        t += 16 + stall
    instructions.append([t, 11, 0, 4, 7])
    return {"begin": begin, "cu": 1, "end": t + 4, "id": 0, "instructions": instructions,
            "simd": 0, "slot": 0, "timeline": [[1, 4], [2, 40], [3, 180], [4, 12]],
            "waitcnt": [[4, [[2, 0], [3, 0]]] for _ in WAIT_STALLS]}


def invariant_rows(waves: list[dict]) -> list[list]:
    """code.json rows computed with the §8.10 accumulation (independent of the code under test)."""
    hit, lat, stall, idle = ([0] * (len(ASM) + 1) for _ in range(4))
    for wave in waves:
        prev_end = wave["begin"]
        for time, _cat, st, dur, line in wave["instructions"]:
            hit[line] += 1
            lat[line] += dur
            stall[line] += st
            idle[line] += max(time - prev_end, 0)
            prev_end = max(prev_end, time + dur)
    rows = [["; kernel", 0, 0, "kernel()", 2, 6400, 0, 0, 0, 0]]
    for i, asm in enumerate(ASM, start=1):
        rows.append([asm, 0, i, f"{SOURCE}:{10 + i}", 2, 6400 + 8 * i,
                     hit[i], lat[i], stall[i], idle[i]])
    return rows


def write_capture(root: Path, placements: list[tuple[int, int, int]]) -> Path:
    """Write code.json, filenames.json, occupancy.json and one wave file per (se, simd, begin)."""
    directory = root / "ui_output_agent_1_dispatch_1"
    directory.mkdir()
    waves, index = [], {}
    for number, (se, simd, begin) in enumerate(placements):
        wave = make_wave(begin)
        wave["simd"] = simd
        name = f"se{se}_sm{simd}_sl0_wv{number}.json"
        (directory / name).write_text(json.dumps(
            {"duration": wave["end"] - begin, "name": f"SE{se}", "num_insts": 17,
             "num_stitched": 17, "wave": wave}, separators=(",", ":")))
        index.setdefault(str(se), {}).setdefault(str(simd), {}).setdefault("0", {})[str(number)] = [
            name, begin, wave["end"]]
        waves.append(wave)
    (directory / "code.json").write_text(json.dumps(
        {"code": invariant_rows(waves),
         "header": "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle",
         "version": "3.0.0"}))
    (directory / "filenames.json").write_text(json.dumps(
        {"counter_names": [], "gfxip": 9, "gfxv": "vega", "global_begin_time": 0,
         "version": "3.0.0", "wave_filenames": index}))
    # cu 1: three waves start at 1000 and end at 1300 / 1400 / 1500; cu 2 must be ignored.
    events = [[1000, 1, 0, 0, 1, 1], [1000, 1, 1, 0, 1, 1], [1000, 1, 2, 0, 1, 1],
              [1300, 1, 0, 0, 0, 1], [1400, 1, 1, 0, 0, 1], [1500, 1, 2, 0, 0, 1],
              [900, 2, 0, 0, 1, 1], [1600, 2, 0, 0, 0, 1]]
    (directory / "occupancy.json").write_text(json.dumps(
        {"0": events, "dispatches": {"0": "0 / 0x0", "1": "kernel"}, "version": "3.0.0"}))
    return directory


@pytest.fixture()
def capture(tmp_path):
    # waves 0 and 2 share SE0/SIMD0 at the same time; wave 1 runs alone on SIMD1
    return write_capture(tmp_path, [(0, 0, 1000), (0, 1, 1000), (0, 0, 1000)])


def analyze(directory: Path) -> dict:
    return analyze_waves(directory, read_code_json(directory / "code.json"))


def test_counts_states_and_timing(capture):
    result = analyze(capture)
    assert (result["files"], result["waves"], result["layout"]) == (3, 3, "v3")
    assert result["bytes"] == sum(p.stat().st_size for p in capture.glob("se*_wv*.json"))
    assert result["states"] == {"idle": 12, "exec": 120, "wait": 540, "stall": 36}
    wave_end = 1000 + 4 + sum(16 + s for s in WAIT_STALLS) + 4
    assert result["timing"]["span_cycles"] == wave_end - 1000
    assert result["timing"]["begin_spread"] == 0
    assert result["per_wave"]["duration"]["max"] == wave_end - 1000
    assert result["skipped"] == []


def test_waitcnt_stall_goes_to_the_youngest_drained_load(capture):
    (wait,) = result_waits = analyze(capture)["waitcnt"]
    assert result_waits[0]["index"] == 4 and wait["asm"] == "s_waitcnt vmcnt(0)"
    assert wait["stall_cycles"] == 3 * sum(WAIT_STALLS)
    cycles = {p["index"]: p["cycles"] for p in wait["producers"]}
    assert cycles == {3: 3 * sum(WAIT_STALLS), 2: 0}  # row 3 is issued after row 2
    assert wait["dominant_producer"]["source"] == f"{SOURCE}:13"
    assert wait["unattributed_cycles"] == 0


def test_loop_bounds_iterations_and_mfma_busy(capture):
    (loop,) = analyze(capture)["loops"]
    assert (loop["first_index"], loop["last_index"]) == (2, 6)
    assert loop["iterations"] == 9 and loop["entries"] == 3 and loop["waves"] == 3
    # iterations that jumped back: 16 + 100 and 16 + 60 cycles
    assert loop["cycles_per_iteration"] == pytest.approx((116 + 76) / 2)
    # SIMD0 holds two overlapping waves (2 × 2 MFMAs) in 192 cycles, SIMD1 one wave (2 MFMAs)
    assert loop["mfma_busy_fraction"] == pytest.approx((4 * MFMA_PASS + 2 * MFMA_PASS) / (2 * 192),
                                                       abs=1e-4)
    assert loop["split"]["prologue_cycles"] == 3 * 4


def test_consistency_ok_then_detects_a_missing_wave_file(capture):
    assert analyze(capture)["consistency"] == {"ok": True, "details": [], "missing_files": [],
                                               "mismatched_rows": {}}
    (capture / "se0_sm1_sl0_wv1.json").unlink()
    consistency = analyze(capture)["consistency"]
    assert consistency["ok"] is False
    assert consistency["missing_files"] == ["se0_sm1_sl0_wv1.json"]
    assert consistency["mismatched_rows"]["Hit"] == len(ASM)
    assert any("missing" in line for line in consistency["details"])


def test_damaged_wave_file_is_skipped_and_reported(capture):
    path = capture / "se0_sm1_sl0_wv1.json"
    path.write_bytes(path.read_bytes()[:200])
    result = analyze(capture)
    assert result["waves"] == 2
    assert [s["file"] for s in result["skipped"]] == ["se0_sm1_sl0_wv1.json"]
    assert result["consistency"]["ok"] is False


def test_occupancy_on_the_traced_cu(capture):
    occupancy = analyze(capture)["occupancy"]
    assert occupancy["available"] is True
    (se0,) = occupancy["per_se"]
    assert (se0["cu"], se0["max_waves"]) == (1, 3)
    assert se0["mean_waves"] == pytest.approx((3 * 300 + 2 * 100 + 1 * 100) / 500)
    assert se0["series"][0] == [1000, 3] and se0["series"][-1] == [1500, 0]


def test_no_wave_files(tmp_path):
    directory = write_capture(tmp_path, [(0, 0, 1000)])
    for path in directory.glob("se*_wv*.json"):
        path.unlink()
    result = analyze(directory)
    assert result["files"] == 0 and result["waves"] == 0
    assert result["loops"] == [] and result["waitcnt"] == []
    assert result["consistency"]["ok"] is False
    assert "no wave files" in result["consistency"]["details"][0]


def test_synthetic_gemm_capture(tmp_path):
    from kerneltrace.synth import demo_gemm, simulate, write_dispatch_dir
    from kerneltrace.synth.simulate import LABEL_ROWS

    spec = demo_gemm("gfx942", iterations=6)
    directory = write_dispatch_dir(tmp_path, spec)
    result = analyze(directory)
    waves = simulate(spec)
    assert result["consistency"]["ok"], result["consistency"]["details"]
    assert result["waves"] == len(waves) == spec.waves.total_waves
    expected_states = {"idle": 0, "exec": 0, "wait": 0, "stall": 0}
    names = {1: "idle", 2: "exec", 3: "wait", 4: "stall"}
    for wave in waves:
        for state, cycles in wave.timeline:
            if state in names:
                expected_states[names[state]] += cycles
    assert result["states"] == expected_states
    hot_loop = result["loops"][0]
    assert hot_loop["first_index"] == spec.loop.first + LABEL_ROWS
    assert hot_loop["last_index"] == spec.loop.last + LABEL_ROWS
    assert hot_loop["iterations"] == spec.loop.iterations * len(waves)
    assert 0 < hot_loop["mfma_busy_fraction"] <= 1
    # every attributed producer is one the wave files list for that wait
    listed = {}
    for wave in waves:
        for wait_line, producers in wave.waitcnt:
            listed.setdefault(wait_line, set()).update(p for p, _ in producers)
    assert result["waitcnt"]
    for wait in result["waitcnt"]:
        assert {p["index"] for p in wait["producers"]} <= listed[wait["index"]]
        assert sum(p["cycles"] for p in wait["producers"]) + wait["unattributed_cycles"] == \
            wait["stall_cycles"]


def test_synthetic_legacy_capture(tmp_path):
    from kerneltrace.synth import demo_gemm, write_dispatch_dir

    directory = write_dispatch_dir(tmp_path, demo_gemm("gfx942", iterations=3), variant="legacy")
    result = analyze(directory)
    assert result["layout"] == "legacy"
    assert result["waves"] > 0 and result["skipped"] == []
    assert result["loops"] and result["loops"][0]["iterations"] == 3 * result["waves"]


@pytest.mark.parametrize("group_waves", [1, 3])
def test_grouping_does_not_change_results(tmp_path, monkeypatch, group_waves):
    """Whole-group numpy passes (per-wave running max via offsets) equal wave-by-wave ones."""
    from kerneltrace.analysis.waves import stream as waves_module
    from kerneltrace.synth import demo_gemm, write_dispatch_dir

    directory = write_dispatch_dir(tmp_path, demo_gemm("gfx942", iterations=4, waves_per_slot=2))
    together = analyze(directory)
    monkeypatch.setattr(waves_module, "GROUP_WAVES", group_waves)
    assert analyze(directory) == together
    assert together["consistency"]["ok"]
