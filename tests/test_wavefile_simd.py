"""The pysimdjson wave path gives the same records and errors as the numpy/json path, or defers.

Each hand-made variant (regular, ragged, nested deeper, out of int64, floats, null, duplicate
keys, escaped keys, whitespace, legacy, damaged) is read with simdjson enabled and disabled: both
must agree with each other and with json.loads; shape errors must be InputErrors on both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wave_fixtures import WAVE

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.reader import iter_wave_files, parse_wave_bytes, read_wave_file

pytest.importorskip("simdjson")

COMPACT = json.dumps(WAVE, separators=(",", ":"))
INS = "[[70120,1,0,4,1],[70140,9,920,920,6],[71100,6,0,8,7]]"
WAIT = "[[6,[[1,0],[2,0],[3,0]]],[18,[[13,0],[14,0]]],[20,[]]]"


def record(result) -> tuple:
    """Everything a WaveFile carries except the parser label, or the error's text."""
    if isinstance(result, InputError):
        return ("error", str(result))
    offsets = result.waitcnt_offsets.tolist()
    return (result.layout, result.se, result.simd, result.slot, result.wave_id, result.cu,
            result.begin, result.end, result.nbytes, result.extra,
            result.instructions.shape, result.instructions.tolist(),
            result.timeline.shape, result.timeline.tolist(),
            result.waitcnt_lines.tolist(), offsets, result.waitcnt_producers.shape,
            result.waitcnt_producers.tolist())


def both(tmp_path: Path, text: str | bytes):
    path = tmp_path / "se1_sm2_sl3_wv4.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with_simd = next(iter_wave_files([path], simd=True))
    without = next(iter_wave_files([path], simd=False))
    assert record(with_simd) == record(without)
    return with_simd, without


def waitcnt_as_lists(result) -> list:
    offsets = result.waitcnt_offsets.tolist()
    return [[line, result.waitcnt_producers[offsets[i]:offsets[i + 1]].tolist()]
            for i, line in enumerate(result.waitcnt_lines.tolist())]


ACCEPTED = {
    "compact": COMPACT,
    "pretty": json.dumps(WAVE, indent=3),
    "tabs and CRLF": json.dumps(WAVE, indent="\t").replace("\n", "\r\n"),
    "empty arrays": COMPACT.replace(INS, "[]").replace(WAIT, "[]"),
    "only empty waits": COMPACT.replace(WAIT, "[[3,[]],[4,[]]]"),
    "one wait, one pair": COMPACT.replace(WAIT, "[[3,[[1,0]]]]"),
    "legacy second field": COMPACT.replace(WAIT, "[[3,[[1,7],[2,9]]]]"),
    "int64 max": COMPACT.replace("70120", str(2**63 - 1)),
    "extra keys": COMPACT.replace('"id":0', '"id":0,"dispatcher":3,"info":{"Issue":[1,2]}'),
    "legacy layout": json.dumps({"name": "SE", "duration": 10, "wave": {
        "id": 0, "simd": 1, "slot": 2, "begin": 100, "end": 110, "info": {"Issue": 2},
        "instructions": [[101, 1, 0, 4, 2]], "timeline": [[2, 8]],
        "waitcnt": [[6, [[2, 0], [3, 1]]]]}, "loop_count": {}, "top_n": [],
        "generation_time": "Wed May 28 09:56:15 2025"}),
}


@pytest.mark.parametrize("variant", list(ACCEPTED))
def test_valid_variants_take_the_simd_path_and_equal_json(tmp_path, variant):
    with_simd, without = both(tmp_path, ACCEPTED[variant])
    assert with_simd.parser == "simd"
    reference = json.loads(ACCEPTED[variant])["wave"]
    assert with_simd.instructions.tolist() == reference["instructions"]
    assert with_simd.timeline.tolist() == reference["timeline"]
    assert waitcnt_as_lists(with_simd) == reference["waitcnt"]
    assert with_simd.instructions.dtype == with_simd.waitcnt_producers.dtype == "int64"


REFUSED = {
    "ragged rows that compensate": COMPACT.replace(INS, "[[70120,1,0,4,1,9],[70140,9,920,920],"
                                                         "[71100,6,0,8,7]]"),
    "short row": COMPACT.replace("[70120,1,0,4,1]", "[70120,1,0,4]"),
    "row nested deeper": COMPACT.replace("[70120,1,0,4,1]", "[70120,1,0,4,[1]]"),
    "a row that is a number": COMPACT.replace(INS, "[[70120,1,0,[4,1,70140,9,920,920]],6,"
                                                   "[71100,6,0,8,7]]"),
    "timeline row of three": COMPACT.replace("[1,32]", "[1,32,5]"),
    "beyond int64": COMPACT.replace("70120", str(2**63)),
    "beyond uint64": COMPACT.replace("70120", str(10**30)),
    "very negative": COMPACT.replace("70120", str(-(10**30))),
    "string in a row": COMPACT.replace("[70120,1,0,4,1]", '[70120,1,0,4,"1"]'),
    "waitcnt producers not a list": COMPACT.replace("[[13,0],[14,0]]", "13"),
    "truncated": COMPACT[: len(COMPACT) // 2],
    "cut after the last array": COMPACT[:-2],
    "deep nesting": '{"wave": {"begin": 1, "end": 2, "waitcnt": ' + "[" * 5000 + "]" * 5000 + "}}",
    "no wave": json.dumps({"name": "SE0"}),
    "begin is a float": COMPACT.replace('"begin":70088', '"begin":70088.5'),
}


@pytest.mark.parametrize("variant", list(REFUSED))
def test_bad_shapes_and_values_are_the_same_input_error(tmp_path, variant):
    with_simd, without = both(tmp_path, REFUSED[variant])
    assert isinstance(with_simd, InputError) and isinstance(without, InputError)
    assert with_simd.where.endswith("se1_sm2_sl3_wv4.json")


DEFERRED = {
    "negative value": COMPACT.replace("[1,32]", "[1,-32]"),
    "float value": COMPACT.replace("[1,32]", "[1,32.0]"),
    "null instructions": COMPACT.replace(INS, "null"),
    "escaped key": COMPACT.replace('"instructions"', '"instruction\\u0073"'),
    "duplicated key": COMPACT.replace('"id":0', '"id":0,"timeline":[[4,4]]'),
    "duplicated scalar": COMPACT.replace('"id":0', '"id":0,"id":5'),
    # the json path reads [producer, n] and ignores more fields (as before the simd path)
    "waitcnt pair of three": COMPACT.replace("[13,0]", "[13,0,5]"),
}


def test_non_utf8_string_is_decided_by_the_numpy_path(tmp_path):
    """simdjson refuses invalid UTF-8 anywhere; the numpy path never decodes the name string."""
    text = COMPACT.replace('"SE0"', '"SE\udcff"').encode("utf-8", "surrogateescape")
    with_simd, without = both(tmp_path, text)
    assert with_simd.parser == without.parser == "fast"


@pytest.mark.parametrize("variant", list(DEFERRED))
def test_unusual_valid_layouts_are_left_to_the_numpy_and_json_paths(tmp_path, variant):
    with_simd, _ = both(tmp_path, DEFERRED[variant])
    assert not isinstance(with_simd, InputError)
    assert with_simd.parser in ("fast", "json")
    reference = json.loads(DEFERRED[variant])["wave"]
    assert with_simd.begin == reference["begin"] and with_simd.wave_id == reference["id"]


def test_order_is_kept_when_files_alternate_between_paths(tmp_path):
    texts = [COMPACT, DEFERRED["negative value"], REFUSED["truncated"], COMPACT.replace(
        '"begin":70088', '"begin":70000'), DEFERRED["float value"], ACCEPTED["pretty"]]
    paths = []
    for k, text in enumerate(texts):
        paths.append(tmp_path / f"se0_sm0_sl0_wv{k}.json")
        paths[-1].write_text(text)
    results = list(iter_wave_files(paths, batch_bytes=1 << 20))
    assert [getattr(r, "parser", "error") for r in results] == [
        "simd", "json", "error", "simd", "json", "simd"]
    assert [r.path for r in results if not isinstance(r, InputError)] == [
        paths[0], paths[1], paths[3], paths[4], paths[5]]
    assert results[2].where == str(paths[2])
    assert [record(r) for r in results] == [record(r) for r in iter_wave_files(paths, simd=False)]


def test_parser_is_reused_after_refusals(tmp_path):
    good = tmp_path / "se0_sm0_sl0_wv0.json"
    good.write_text(COMPACT)
    for bad in REFUSED.values():
        parse_wave_bytes(COMPACT.encode(), good)  # a live parse before each refusal
        with pytest.raises(InputError):
            parse_wave_bytes(bad.encode(), good)
    assert read_wave_file(good).parser == "simd"


def test_environment_switch_disables_the_simd_path(tmp_path, monkeypatch):
    from kerneltrace.readers.wavefile.simd import PARSER_ENV

    path = tmp_path / "se0_sm0_sl0_wv0.json"
    path.write_text(COMPACT)
    assert read_wave_file(path).parser == "simd"
    monkeypatch.setenv(PARSER_ENV, "numpy")
    assert read_wave_file(path).parser == "fast"


def test_numpy_whole_batch_path_still_engages_and_refuses_compensating_rows(tmp_path):
    """The skeleton checks added to the numpy batch path keep regular compact files on it."""
    from kerneltrace.readers.wavefile.fast import parse_compact_batch

    good = [(tmp_path / f"se0_sm0_sl0_wv{k}.json", COMPACT.encode()) for k in range(3)]
    records = parse_compact_batch(good)
    assert records is not None and [r.parser for r in records] == ["fast"] * 3
    ragged = REFUSED["ragged rows that compensate"].encode()
    assert parse_compact_batch([*good, (tmp_path / "se0_sm0_sl0_wv9.json", ragged)]) is None
