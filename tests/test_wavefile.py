"""The wave-file reader (fast path and fallback) equals json.loads on real and hand-made files, and rejects bad ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import all_shared_dispatch_dirs
from wave_fixtures import WAVE

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.reader import (
    PARSER_ENV,
    iter_wave_files,
    parse_wave_bytes,
    read_wave_file,
    wave_files,
)


@pytest.fixture(autouse=True, params=["simd", "json"])
def parser_path(request, monkeypatch) -> str:
    """Every test runs against both reader paths: the pysimdjson fast path, and the fallback alone."""
    if request.param == "simd":
        pytest.importorskip("simdjson")
        monkeypatch.delenv(PARSER_ENV, raising=False)
        return "simd"
    monkeypatch.setenv(PARSER_ENV, "json")
    return "json"


def as_json(wave: dict) -> dict:
    """What json.loads gives for the three arrays and the scalars, in the reader's terms."""
    return {
        "instructions": wave.get("instructions", []),
        "timeline": wave.get("timeline", []),
        "waitcnt": wave.get("waitcnt", []),
        "begin": wave["begin"], "end": wave["end"],
    }


def as_read(parsed) -> dict:
    waitcnt = []
    for i, line in enumerate(parsed.waitcnt_lines.tolist()):
        lo, hi = parsed.waitcnt_offsets[i], parsed.waitcnt_offsets[i + 1]
        waitcnt.append([line, parsed.waitcnt_producers[lo:hi].tolist()])
    return {"instructions": parsed.instructions.tolist(), "timeline": parsed.timeline.tolist(),
            "waitcnt": waitcnt, "begin": parsed.begin, "end": parsed.end}


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_compact_v3_file_matches_json(tmp_path, parser_path):
    path = write(tmp_path, "se3_sm2_sl1_wv0.json", json.dumps(WAVE, separators=(",", ":")))
    parsed = read_wave_file(path)
    assert parsed.parser == parser_path
    assert as_read(parsed) == as_json(WAVE["wave"])
    assert (parsed.se, parsed.simd, parsed.slot, parsed.cu, parsed.layout) == (3, 2, 1, 1, "v3")
    assert parsed.duration == 75672 - 70088


def test_pretty_printed_file_and_extra_keys(tmp_path, parser_path):
    wave = json.loads(json.dumps(WAVE))
    wave["wave"]["dispatcher"] = 3
    wave["wave"]["info"] = {"note": "newer decoder"}
    path = write(tmp_path, "se0_sm0_sl0_wv0.json", json.dumps(wave, indent=2))
    parsed = read_wave_file(path)
    assert parsed.parser == parser_path
    assert as_read(parsed) == as_json(wave["wave"])
    assert parsed.extra == {"dispatcher": 3, "info": {"note": "newer decoder"}}


def test_missing_arrays_give_empty_arrays(tmp_path):
    path = write(tmp_path, "se0_sm0_sl0_wv0.json",
                 json.dumps({"wave": {"begin": 5, "end": 9, "cu": 0, "id": 0, "simd": 0, "slot": 0}}))
    parsed = read_wave_file(path)
    assert parsed.instructions.shape == (0, 5)
    assert parsed.timeline.shape == (0, 2)
    assert parsed.waitcnt_lines.size == 0 and parsed.waitcnt_offsets.tolist() == [0]


def test_unusual_values_fall_back_to_json(tmp_path):
    wave = json.loads(json.dumps(WAVE))
    wave["wave"]["timeline"] = [[1, -4], [2, 20]]  # negative: not the documented layout
    path = write(tmp_path, "se0_sm0_sl0_wv0.json", json.dumps(wave))
    parsed = read_wave_file(path)
    assert parsed.parser == "json"
    assert as_read(parsed) == as_json(wave["wave"])


def test_legacy_layout(tmp_path):
    legacy = {"name": "SE", "duration": 10,
              "wave": {"id": 0, "simd": 1, "slot": 2, "begin": 100, "end": 110,
                       "info": {"Issue": 2}, "instructions": [[101, 1, 0, 4, 2], [105, 2, 0, 4, 3]],
                       "timeline": [[2, 8]], "waitcnt": [[6, [[2, 0], [3, 1]]]]},
              "loop_count": {}, "top_n": [], "num_stitched": 2, "num_insts": 2,
              "websocket_port": 18000, "generation_time": "Wed May 28 09:56:15 2025"}
    path = write(tmp_path, "se0_sm1_sl2_wv0.json", json.dumps(legacy))
    parsed = read_wave_file(path)
    assert parsed.layout == "legacy" and parsed.cu is None
    assert as_read(parsed) == as_json(legacy["wave"])


@pytest.mark.parametrize("damage", ["truncate", "garbage", "no-wave", "bad-width"])
def test_bad_files_raise_input_error_naming_the_file(tmp_path, damage):
    text = json.dumps(WAVE)
    if damage == "truncate":
        text = text[: len(text) // 2]
    elif damage == "garbage":
        text = "not json at all"
    elif damage == "no-wave":
        text = json.dumps({"name": "SE0"})
    else:
        text = text.replace("[70120, 1, 0, 4, 1]", "[70120, 1, 0, 4]")
    path = write(tmp_path, "se0_sm0_sl0_wv0.json", text)
    with pytest.raises(InputError) as err:
        read_wave_file(path)
    assert err.value.where == str(path)
    assert err.value.fix


def test_iteration_yields_errors_and_continues(tmp_path):
    good = write(tmp_path, "se0_sm0_sl0_wv0.json", json.dumps(WAVE))
    bad = write(tmp_path, "se0_sm0_sl0_wv1.json", json.dumps(WAVE)[:100])
    also_good = write(tmp_path, "se0_sm0_sl0_wv2.json", json.dumps(WAVE))
    results = list(iter_wave_files([good, bad, also_good]))
    assert [type(r).__name__ for r in results] == ["WaveFile", "InputError", "WaveFile"]
    assert as_read(results[2]) == as_json(WAVE["wave"])


def test_batching_does_not_change_results(tmp_path):
    paths = []
    for k in range(12):
        wave = json.loads(json.dumps(WAVE))
        wave["wave"]["instructions"] = [[70120 + 8 * i + k, 2, k, 4 + k, i] for i in range(k + 1)]
        wave["wave"]["waitcnt"] = [[k, [[p, 0] for p in range(k % 3)]]]
        paths.append(write(tmp_path, f"se0_sm0_sl0_wv{k}.json", json.dumps(wave)))
    one_batch = [as_read(w) for w in iter_wave_files(paths)]
    tiny_batches = [as_read(w) for w in iter_wave_files(paths, batch_bytes=1)]
    reference = [as_json(json.loads(p.read_bytes())["wave"]) for p in paths]
    assert one_batch == reference
    assert tiny_batches == reference


def test_wave_files_sorted_numerically(tmp_path):
    for name in ("se0_sm0_sl0_wv10.json", "se0_sm0_sl0_wv2.json", "se1_sm0_sl0_wv0.json",
                 "code.json", "se0_perfcounter.json"):
        write(tmp_path, name, "{}")
    assert [p.name for p in wave_files(tmp_path)] == [
        "se0_sm0_sl0_wv2.json", "se0_sm0_sl0_wv10.json", "se1_sm0_sl0_wv0.json"]


def test_parse_bytes_without_a_file():
    parsed = parse_wave_bytes(json.dumps(WAVE).encode(), Path("se0_sm0_sl0_wv0.json"))
    assert as_read(parsed) == as_json(WAVE["wave"])


def _sample(paths: list[Path], limit: int = 120) -> list[Path]:
    step = max(len(paths) // limit, 1)
    return paths[::step]


@pytest.mark.shared
def test_every_shared_capture_parses_like_json(captures, parser_path):
    checked = 0
    for directory in all_shared_dispatch_dirs():
        paths = _sample(wave_files(directory))  # all files of small dirs, a sample of big ones
        for path, parsed in zip(paths, iter_wave_files(paths), strict=True):
            assert not isinstance(parsed, InputError), parsed
            reference = json.loads(path.read_bytes())["wave"]
            assert as_read(parsed) == as_json(reference), path
            assert parsed.parser == parser_path, path
            assert parsed.nbytes == path.stat().st_size
            checked += 1
    assert checked > 500  # flash attention, moe_reduce, vec_add, legacy … were all reached


def _compact(wave: dict) -> str:
    return json.dumps(wave, separators=(",", ":"))


def test_compact_and_pretty_printed_batches_give_the_same_records(tmp_path):
    """A batch of compact V3 files and of their pretty-printed copies read alike."""
    compact, pretty = tmp_path / "compact", tmp_path / "pretty"
    compact.mkdir()
    pretty.mkdir()
    for k in range(6):
        wave = json.loads(json.dumps(WAVE))
        wave["wave"]["begin"] += k
        wave["wave"]["instructions"] = [[70120 + 8 * i, 6, k, 4 + k, i] for i in range(k + 1)]
        wave["wave"]["waitcnt"] = [[k, [[p, 0] for p in range(k % 3)]], [k + 1, [[9, 0]]]]
        if k == 4:
            wave["wave"]["waitcnt"] = []
        (compact / f"se0_sm0_sl0_wv{k}.json").write_text(_compact(wave))
        (pretty / f"se0_sm0_sl0_wv{k}.json").write_text(json.dumps(wave, indent=1))
    fast = list(iter_wave_files(wave_files(compact)))
    slow = list(iter_wave_files(wave_files(pretty)))
    assert [as_read(w) for w in fast] == [as_read(w) for w in slow]
    assert [(w.simd, w.slot, w.cu, w.wave_id, w.se) for w in fast] == \
        [(w.simd, w.slot, w.cu, w.wave_id, w.se) for w in slow]
    assert [as_read(w) for w in fast] == [
        as_json(json.loads(p.read_bytes())["wave"]) for p in wave_files(compact)]


def test_bad_file_in_a_compact_batch(tmp_path):
    good = write(tmp_path, "se0_sm0_sl0_wv0.json", _compact(WAVE))
    truncated = write(tmp_path, "se0_sm0_sl0_wv1.json", _compact(WAVE)[:-30])
    extra_key = json.loads(json.dumps(WAVE))
    extra_key["wave"]["dispatcher"] = 1
    newer = write(tmp_path, "se0_sm0_sl0_wv2.json", _compact(extra_key))
    results = list(iter_wave_files([good, truncated, newer]))
    assert isinstance(results[1], InputError) and results[1].where == str(truncated)
    assert as_read(results[0]) == as_read(results[2]) == as_json(WAVE["wave"])
    assert results[2].extra == {"dispatcher": 1}


def test_compact_file_cut_after_its_last_array_is_rejected(tmp_path):
    text = _compact(WAVE)
    cut = write(tmp_path, "se0_sm0_sl0_wv0.json", text[:-2])  # drops the closing braces
    with pytest.raises(InputError):
        read_wave_file(cut)
