"""The batch path (one simdjson parse for a batch's arrays) gives the fallback's records, or defers.

Every hand-made variant of test_wavefile_simd (valid, unusual, damaged) is put into ONE batch
with regular files around it, so a bad file's neighbours are read through the same joined parse:
each result must equal the fallback's (record or error text), in file order. Pairs of damaged
files whose halves would make one valid document when joined must not be read as one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_wavefile_simd import ACCEPTED, COMPACT, DEFERRED, INS, REFUSED, record

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.batch import read_batch
from kerneltrace.readers.wavefile.reader import iter_wave_files
from kerneltrace.readers.wavefile.simd import SimdReader

simdjson = pytest.importorskip("simdjson")

VARIANTS = {**{f"accepted {k}": v for k, v in ACCEPTED.items()},
            **{f"deferred {k}": v for k, v in DEFERRED.items()},
            **{f"refused {k}": v for k, v in REFUSED.items()},
            "duplicated scalar": COMPACT.replace('"id":0', '"id":0,"id":5'),
            "key inside a string": COMPACT.replace('"name":"SE0"', '"name":"a\\"instructions\\":[]"'),
            "array key outside wave": COMPACT.replace('"wave":', '"instructions":[[1,2,3,4,5]],"wave":'),
            "array key in a nested object": COMPACT.replace('"id":0', '"id":0,"info":{"timeline":[[1,2]]}'),
            "leading zero": COMPACT.replace("70120", "070120"),
            "empty value": COMPACT.replace("[1,32]", "[1,]"),
            "space in a row": COMPACT.replace("[1,32]", "[1, 32]"),
            "two commas after an array": COMPACT.replace(INS + ",", INS + ",,"),
            "brace in an array": COMPACT.replace("[1,32]", "[1,32}"),
            }


def write(tmp_path: Path, texts: list[str | bytes]) -> list[Path]:
    paths = []
    for index, text in enumerate(texts):
        path = tmp_path / f"se0_sm0_sl0_wv{index}.json"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        paths.append(path)
    return paths


def test_every_variant_in_one_batch_equals_the_fallback(tmp_path):
    texts = []
    for text in VARIANTS.values():
        texts += [COMPACT, text]
    texts.append(COMPACT)
    paths = write(tmp_path, texts)
    fast = list(iter_wave_files(paths, batch_bytes=1 << 30))
    slow = list(iter_wave_files(paths, simd=False))
    assert [record(r) for r in fast] == [record(r) for r in slow]
    assert [Path(r.where if isinstance(r, InputError) else r.path) for r in fast] == paths


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_variant_beside_regular_files(tmp_path, name):
    """The variant between two regular files: the regular ones are still read by the batch when
    the variant is only deferred, and every record equals the fallback's."""
    paths = write(tmp_path, [COMPACT, VARIANTS[name], COMPACT])
    fast = list(iter_wave_files(paths, batch_bytes=1 << 30))
    slow = list(iter_wave_files(paths, simd=False))
    assert [record(r) for r in fast] == [record(r) for r in slow]


def test_batch_vouches_for_compact_files_and_defers_the_unusual():
    items = [(Path(f"se0_sm0_sl0_wv{k}.json"), text.encode()) for k, text in enumerate([
        COMPACT, ACCEPTED["pretty"], DEFERRED["negative value"], DEFERRED["escaped key"],
        REFUSED["truncated"], ACCEPTED["legacy layout"], ACCEPTED["empty arrays"],
        VARIANTS["array key outside wave"], VARIANTS["key inside a string"]])]
    taken = [wave is not None for wave in read_batch(items, SimdReader(simdjson))]
    assert taken == [True, True, False, False, False, True, True, False, False]


def test_a_number_beyond_int64_sends_the_whole_batch_to_the_per_file_paths():
    items = [(Path("se0_sm0_sl0_wv0.json"), COMPACT.encode()),
             (Path("se0_sm0_sl0_wv1.json"), REFUSED["beyond int64"].encode())]
    assert read_batch(items, SimdReader(simdjson)) == [None, None]


def test_halves_that_join_into_one_document_are_not_read_as_one(tmp_path):
    """`{"x":[1` + `2]}` is valid only when joined; each half is the fallback's error."""
    cut = COMPACT.index("[1,32]") + 3  # inside a timeline row
    first, second = COMPACT[:cut], COMPACT[cut:]
    for texts in ([first, second], [first, "2]" + second[1:]], [COMPACT[:-1], "}"]):
        paths = write(tmp_path, texts)
        fast = list(iter_wave_files(paths, batch_bytes=1 << 30))
        assert all(isinstance(result, InputError) for result in fast)
        assert [record(r) for r in fast] == [record(r) for r in iter_wave_files(paths, simd=False)]


def test_batches_split_by_size_give_the_same_records(tmp_path):
    texts = [COMPACT.replace('"begin":70088', f'"begin":{70000 + k}') for k in range(40)]
    paths = write(tmp_path, texts)
    one = [record(r) for r in iter_wave_files(paths, batch_bytes=1 << 30)]
    many = [record(r) for r in iter_wave_files(paths, batch_bytes=3000)]
    assert one == many == [record(r) for r in iter_wave_files(paths, simd=False)]
    assert [json.loads(t)["wave"]["begin"] for t in texts] == [r[6] for r in one]


def test_every_variant_differs_from_the_regular_file():
    assert [name for name, text in VARIANTS.items() if text == COMPACT] == ["accepted compact"]


def test_large_files_take_the_per_file_path_with_the_same_records(tmp_path, monkeypatch):
    from kerneltrace.readers.wavefile import reader

    texts = [COMPACT, COMPACT.replace('"begin":70088', '"begin":70000'), ACCEPTED["pretty"]]
    paths = write(tmp_path, texts)
    everything = [record(r) for r in iter_wave_files(paths, batch_bytes=1 << 30)]
    monkeypatch.setattr(reader, "BATCH_FILE_BYTES", len(COMPACT))  # the pretty file is larger
    calls = []
    monkeypatch.setattr(reader, "read_batch", lambda items, simd: calls.append(len(items))
                        or read_batch(items, simd))
    assert [record(r) for r in iter_wave_files(paths, batch_bytes=1 << 30)] == everything
    assert calls == [2]
