"""The pysimdjson fast path gives the same records as the fallback, or defers to it.

Each hand-made variant (regular, ragged, nested deeper, out of int64, floats, null, duplicate
keys, escaped keys, whitespace, legacy, damaged) is read with simdjson enabled and disabled: both
must agree with each other and with json.loads; bad files are the fallback's InputError on both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wave_fixtures import WAVE

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.reader import (
    PARSER_ENV,
    iter_wave_files,
    parse_wave_bytes,
    read_wave_file,
)

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
    "fraction in a row": COMPACT.replace("[1,32]", "[1,32.5]"),
    "boolean in a row": COMPACT.replace("[1,32]", "[1,true]"),
    "NaN in a row": COMPACT.replace("[1,32]", "[1,NaN]"),
    "waitcnt line is a string": COMPACT.replace("[[6,[[1,0]", '[["6",[[1,0]'),
    "waitcnt producer is null": COMPACT.replace("[13,0]", "null"),
    "waitcnt producer is empty": COMPACT.replace("[13,0]", "[]"),
    "waitcnt entry without producers": COMPACT.replace("[20,[]]", "[20]"),
    "instructions is an object": COMPACT.replace(INS, '{"a":1}'),
}


@pytest.mark.parametrize("variant", list(REFUSED))
def test_bad_shapes_and_values_are_the_same_input_error(tmp_path, variant):
    with_simd, without = both(tmp_path, REFUSED[variant])
    assert isinstance(with_simd, InputError) and isinstance(without, InputError)
    assert with_simd.where.endswith("se1_sm2_sl3_wv4.json")


DEFERRED = {
    "negative value": COMPACT.replace("[1,32]", "[1,-32]"),
    "float value": COMPACT.replace("[1,32]", "[1,32.0]"),
    "exponent value": COMPACT.replace("[1,32]", "[1,3.2e1]"),
    "null instructions": COMPACT.replace(INS, "null"),
    "escaped key": COMPACT.replace('"instructions"', '"instruction\\u0073"'),
    "duplicated key": COMPACT.replace('"id":0', '"id":0,"timeline":[[4,4]]'),
    # the fallback reads [producer, n] and ignores more fields; a lone producer gets n = 0
    "waitcnt pair of three": COMPACT.replace("[13,0]", "[13,0,5]"),
    "waitcnt pair of one": COMPACT.replace("[13,0]", "[13]"),
    "waitcnt entry of three": COMPACT.replace("[20,[]]", "[20,[],7]"),
}
# What the fallback makes of each (json.loads, then the rules above), for the records check
EXPECTED = {"negative value": ("timeline", 0, [1, -32]), "float value": ("timeline", 0, [1, 32]),
            "exponent value": ("timeline", 0, [1, 32]), "waitcnt pair of one": ("waitcnt", 1, [13, 0]),
            "waitcnt pair of three": ("waitcnt", 1, [13, 0])}


def test_non_utf8_string_is_refused_by_both(tmp_path):
    """simdjson refuses invalid UTF-8 anywhere; so does json.loads (the fallback's error)."""
    text = COMPACT.replace('"SE0"', '"SE\udcff"').encode("utf-8", "surrogateescape")
    with_simd, without = both(tmp_path, text)
    assert isinstance(with_simd, InputError) and "not valid JSON" in str(with_simd)


@pytest.mark.parametrize("variant", list(DEFERRED))
def test_unusual_valid_layouts_are_left_to_the_fallback(tmp_path, variant):
    with_simd, _ = both(tmp_path, DEFERRED[variant])
    assert not isinstance(with_simd, InputError)
    assert with_simd.parser == "json"
    reference = json.loads(DEFERRED[variant])["wave"]
    assert with_simd.begin == reference["begin"] and with_simd.wave_id == reference["id"]
    if variant in EXPECTED:
        name, row, expected = EXPECTED[variant]
        got = (waitcnt_as_lists(with_simd)[row][1][0] if name == "waitcnt"
               else getattr(with_simd, name)[row].tolist())
        assert got == expected


def test_duplicated_scalar_is_read_as_json_loads_reads_it(tmp_path):
    """The batch path reads the small head with json.loads: the last duplicate wins, as in the
    fallback (the per-file simd path defers such a file)."""
    text = COMPACT.replace('"id":0', '"id":0,"id":5')
    with_simd, without = both(tmp_path, text)
    assert with_simd.parser == "simd" and without.parser == "json"
    assert with_simd.wave_id == without.wave_id == 5
    assert with_simd.extra == without.extra


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


def test_environment_switch_forces_the_fallback(tmp_path, monkeypatch):
    path = tmp_path / "se0_sm0_sl0_wv0.json"
    path.write_text(COMPACT)
    assert read_wave_file(path).parser == "simd"
    monkeypatch.setenv(PARSER_ENV, "json")
    assert read_wave_file(path).parser == "json"
    assert parse_wave_bytes(COMPACT.encode(), path).parser == "json"
    forced = record(read_wave_file(path))
    monkeypatch.delenv(PARSER_ENV)
    assert record(read_wave_file(path)) == forced


def test_long_waitcnt_skeletons_are_counted_like_short_ones():
    """waitcnt_pairs counts a long skeleton by its brackets (numpy) and a short one by split +
    count: the same counts on random regular skeletons both sides of COUNT_BY_NUMPY, with other
    text before and after, and a long irregular skeleton is still refused."""
    import random

    from kerneltrace.readers.wavefile import simd

    def skeleton(counts: list[int]) -> bytes:
        return b"[" + b",".join(b"[,[" + b",".join([b"[,]"] * k) + b"]]" for k in counts) + b"]"

    rng = random.Random(7)
    lengths = set()
    for trial in range(300):
        counts = [rng.choice([0, 0, 1, 2, 5, 30]) for _ in range(rng.choice([1, 3, 40, 400, 3000]))]
        prefix = b'{"waitcnt":' if trial % 2 else b""
        text = prefix + skeleton(counts) + (b"}" if trial % 2 else b"")
        assert simd.waitcnt_pairs(text, len(prefix)) == counts
        lengths.add(len(skeleton(counts)) >= simd.COUNT_BY_NUMPY)
    assert lengths == {True, False}  # both ways were taken
    irregular = skeleton([3] * 2000).replace(b"[,],[,]]]", b"[,],[,],]]", 1)  # a number after a pair
    assert simd.waitcnt_pairs(irregular, 0) is None


def test_the_possessive_waitcnt_pattern_matches_as_the_plain_one():
    """The possessive pattern accepts, refuses and ends exactly where the plain one does."""
    import random
    import re

    from kerneltrace.readers.wavefile import simd

    plain = re.compile(
        rb"\[(?:\[,\[(?:\[,\](?:,\[,\])*)?\]\](?:,\[,\[(?:\[,\](?:,\[,\])*)?\]\])*)?\]")
    rng = random.Random(24)
    pieces = [b"[", b"]", b",", b"[,]", b"[,[", b"]]", b",[,]", b",[,["]
    for _ in range(20000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for at in range(min(len(text), 3) + 1):
            a, b = plain.match(text, at), simd._WAITCNT_SKELETON.match(text, at)
            assert (a and a.end()) == (b and b.end()), (text, at)
    regular = b"[" + b",".join(b"[,[" + b",".join([b"[,]"] * n) + b"]]" for n in (0, 3, 1)) + b"]"
    assert simd._WAITCNT_SKELETON.match(regular).end() == len(regular)
