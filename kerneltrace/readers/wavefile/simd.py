"""The fast path for wave files: pysimdjson parses one file, its integer arrays leave as int64 buffers.

simdjson validates the whole document (syntax, UTF-8, depth) at several hundred MB/s and
`Array.as_buffer(of_type="i")` copies a nested integer array into one int64 buffer without a
Python object per element. That export flattens any nesting and refuses nothing but non-integer
and out-of-range values, so the *shape* is certified separately from the file's skeleton: the
bytes with digits and whitespace deleted (`bytes.translate`, C speed). A regular `instructions`
array of n rows has exactly the skeleton `[[,,,,],[,,,,],...]`; anything else (ragged rows, rows
nested deeper, negative numbers, floats, strings, duplicate keys) does not match.

The path never decides that a file is bad: whatever it cannot certify (simdjson refuses the
document, a value is not an int64, a skeleton differs, a key is duplicated) returns None and the
file takes the fallback (json_fallback.py), which gives the same records on valid files and
alone decides errors. One parser is reused (its buffer grows to the largest file seen, so memory
stays bounded by the largest single file) and no proxy outlives a call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path
from typing import Any

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.record import WaveFile, build_wave, empty_arrays

_ARRAY_NAMES = ("instructions", "timeline", "waitcnt")
_WIDTHS = {"instructions": 5, "timeline": 2}
DIGITS_AND_WHITESPACE = b"0123456789 \t\r\n"
# Skeleton of a regular waitcnt array: [[line,[[p,x],...]],...] with digits removed. Possessive
# quantifiers (never give back: the next byte alone decides each repetition, so the matches are
# those of the plain pattern) spare the engine its backtracking records: ~1.6x faster.
_WAITCNT_SKELETON = re.compile(
    rb"\[(?:\[,\[(?:\[,\](?:,\[,\])*+)?+\]\](?:,\[,\[(?:\[,\](?:,\[,\])*+)?+\]\])*+)?+\]")
# Between two waitcnt entries (and nowhere else in a regular skeleton): "]],[,[".
_ENTRY_BREAK = b"],[,["
_PAIR = b"[,]"
COUNT_BY_NUMPY = 4096  # waitcnt skeletons this long are counted by numpy (fewer: split + count)
# Every occurrence of an array key in the skeleton, in one scan (quotes are rare there: the
# regex engine skips from quote to quote).
_KEY_RE = re.compile(rb'"(' + b"|".join(name.encode() for name in _ARRAY_NAMES) + rb')":')


def rows_skeleton(rows: int, width: int) -> bytes:
    """The skeleton (digits and whitespace deleted) of a regular array of `rows` × `width` ints.

    Integer counts alone cannot see ragged rows that compensate each other
    ([[1,2,3,4,5,6],[7,8,9,10]] holds 10 integers in 2 rows); the skeleton does.
    """
    if rows == 0:
        return b"[]"
    row = b"[" + b"," * (width - 1) + b"]"
    return b"[" + (row + b",") * (rows - 1) + row + b"]"


@dataclass
class Certified:
    """A file whose structure simdjson and the skeleton certified, waiting for the batch pass."""

    path: Path
    data: bytes  # kept until the batch is finished: the fallback re-reads it on a late refusal
    document: dict[str, Any]  # the document without the big arrays, plain Python
    buffers: dict[str, Any]  # array name -> int64 buffer (simdjson ArrayBuffer)
    pairs: list[int]  # producer count of each waitcnt entry


class SimdReader:
    """Certifies wave files with one reused simdjson parser; `certify` returns None to defer."""

    def __init__(self, simdjson_module: Any) -> None:
        self._simdjson = simdjson_module
        self.module = simdjson_module  # for other readers of decoder JSON (occupancy.json)
        self._parser = simdjson_module.Parser()
        self.batch_parser = simdjson_module.Parser()  # batch.py's, reused batch after batch

    def certify(self, data: bytes, path: Path) -> Certified | None:
        """The certified arrays of a file this path vouches for, else None (the fallback decides)."""
        try:
            return self._certify(data, path)
        except Exception:
            # The failed call's proxies died with its frame; a fresh parser is still the safe
            # choice should the library have kept any state about them.
            self._parser = self._simdjson.Parser()
            return None

    def parse(self, data: bytes, path: Path) -> WaveFile | None:
        """One file: its WaveFile, None when the path defers."""
        certified = self.certify(data, path)
        return None if certified is None else finish_batch([certified])[0]

    def _certify(self, data: bytes, path: Path) -> Certified | None:
        simdjson = self._simdjson
        skeleton = data.translate(None, DIGITS_AND_WHITESPACE)
        document = self._parser.parse(data)
        wave = document.get("wave") if isinstance(document, simdjson.Object) else None
        if not isinstance(wave, simdjson.Object):
            return None
        buffers: dict[str, Any] = {}
        pairs: list[int] = []
        values_at = _values_at(skeleton)
        for name in _ARRAY_NAMES:
            rows = wave.get(name)
            if rows is None:
                if name in wave:  # null: the fallback decides what that means
                    return None
                continue
            if not isinstance(rows, simdjson.Array):
                return None
            buffer = memoryview(rows.as_buffer(of_type="i"))
            del rows
            at = values_at.get(name, -1)
            if at < 0:
                return None
            # The skeleton alone fixes the shape: with it, every row (entry) holds exactly its
            # integers, so the buffer size gives the row count and no len() proxy call is needed.
            if name == "waitcnt":
                found = waitcnt_pairs(skeleton, at)
                if found is None or buffer.nbytes != 8 * (len(found) + 2 * sum(found)):
                    return None
                pairs = found
            else:
                width = _WIDTHS[name]
                count, rest = divmod(buffer.nbytes, 8 * width)
                if rest or not skeleton.startswith(rows_skeleton(count, width), at):
                    return None
            buffers[name] = buffer
        plain = _plain_document(simdjson, document, wave)
        del document, wave
        if plain is None:
            return None
        return Certified(path, data, plain, buffers, pairs)


def _values_at(skeleton: bytes) -> dict[str, int]:
    """Where the value of each array key starts in the skeleton; -1 unless the key occurs once."""
    found: dict[str, int] = {}
    for match in _KEY_RE.finditer(skeleton):
        name = match.group(1).decode()
        found[name] = -1 if name in found else match.end()
    return found


def waitcnt_pairs(skeleton: bytes, at: int, whole: bool = False) -> list[int] | None:
    """Producer count of each waitcnt entry from a regular skeleton at `at` (`whole`: the
    skeleton must end there too), or None."""
    match = _WAITCNT_SKELETON.match(skeleton, at)
    if match is None or (whole and match.end() != len(skeleton)):
        return None
    if match.end() - at == 2:  # []
        return []
    if match.end() - at >= COUNT_BY_NUMPY:
        return _pairs_by_brackets(skeleton, at, match.end())
    pieces = match.group()[1:-1].split(_ENTRY_BREAK)
    return list(map(bytes.count, pieces, repeat(_PAIR, len(pieces))))


def _pairs_by_brackets(skeleton: bytes, start: int, end: int) -> list[int]:
    """waitcnt_pairs' counts of a regular skeleton[start:end] from its brackets, in a few numpy
    passes: each entry "[,[" + its pairs "[,]" + "]]" opens 2 + (its pairs) brackets, and "[,["
    occurs nowhere else (after "[," a pair has "]")."""
    import numpy as np

    text = np.frombuffer(skeleton, np.uint8, end - start, start)
    opens = text == ord("[")
    entries = np.flatnonzero(opens[:-2] & (text[1:-1] == ord(",")) & opens[2:])
    before = np.zeros(len(text) + 1, np.int64)
    np.cumsum(opens, out=before[1:])  # brackets opened before each position
    bounds = np.append(entries, len(text) - 1)  # the last entry ends at the closing "]"
    return (np.diff(before[bounds]) - 2).tolist()


def split_waitcnt(values: Any, pairs: list[list[int]]) -> list[tuple[Any, Any, Any]] | None:
    """Each file's (lines, CSR offsets, producers (p, 2)) from the int64 values of a batch's
    waitcnt arrays end to end and each file's producer count per entry (None: sizes disagree).

    Entry j of the values starts after j lines and 2 x (pairs before j): a few numpy calls for
    the whole batch, then views.
    """
    import numpy as np

    counts = np.fromiter(chain.from_iterable(pairs), np.int64)
    cumulative = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=cumulative[1:])
    if values.size != counts.size + 2 * int(cumulative[-1]):
        return None
    starts = np.arange(counts.size) + 2 * cumulative[:-1]
    keep = np.ones(values.size, dtype=bool)
    keep[starts] = False
    lines = values[starts]
    producers = values[keep].reshape(-1, 2)
    bounds = cumulative.tolist()
    empty = empty_arrays()["waitcnt"]
    result = []
    entry = 0
    for file_pairs in pairs:
        count = len(file_pairs)
        if not count:
            result.append(empty)
            continue
        first, last = bounds[entry], bounds[entry + count]
        result.append((lines[entry:entry + count], cumulative[entry:entry + count + 1] - first,
                       producers[first:last]))
        entry += count
    return result


def finish_batch(batch: list[Certified]) -> list[WaveFile | None]:
    """WaveFiles of certified files (None: refused late); the batch's waitcnt split by a few numpy calls.

    A late refusal is a scalar the record does not accept (`begin` a float...): the fallback
    re-reads that file and words the error.
    """
    import numpy as np

    # instructions / timeline: a zero-copy int64 view of each file's own buffer
    waitcnt = np.frombuffer(b"".join(item.buffers.get("waitcnt", b"") for item in batch),
                            dtype=np.int64)
    waits = split_waitcnt(waitcnt, [item.pairs if "waitcnt" in item.buffers else []
                                    for item in batch])
    if waits is None:  # cannot happen: certify checked each file's sizes
        return [None] * len(batch)
    result: list[WaveFile | None] = []
    for item, wait in zip(batch, waits, strict=True):
        parsed: dict[str, Any] = {
            name: np.frombuffer(item.buffers[name], dtype=np.int64).reshape(-1, width)
            for name, width in _WIDTHS.items() if name in item.buffers}
        parsed["waitcnt"] = wait
        try:
            result.append(build_wave(item.document, parsed, item.path, len(item.data), "simd"))
        except InputError:  # a scalar of the wrong type: the fallback decides
            result.append(None)
    return result


def plain_value(simdjson: Any, value: Any) -> Any:
    """A pysimdjson value as plain Python (objects and arrays converted, scalars as they are)."""
    if isinstance(value, simdjson.Object):
        return value.as_dict()
    if isinstance(value, simdjson.Array):
        return value.as_list()
    return value


def _plain_document(simdjson: Any, document: Any, wave: Any) -> dict[str, Any] | None:
    """The document without the big arrays as plain Python (None: a duplicated key).

    Keys are walked with keys() + get(): items() would convert the big arrays to lists too.
    """
    top_keys = list(document.keys())
    wave_keys = list(wave.keys())
    # json.loads keeps the last of duplicated keys; rather than mimic that, defer
    if len(set(top_keys)) != len(top_keys) or len(set(wave_keys)) != len(wave_keys):
        return None
    plain = {key: plain_value(simdjson, document.get(key)) for key in top_keys if key != "wave"}
    plain["wave"] = {key: plain_value(simdjson, wave.get(key)) for key in wave_keys
                     if key not in _ARRAY_NAMES}
    return plain


_READER: list[SimdReader | None] = []


def simd_reader() -> SimdReader | None:
    """The process-wide reader, or None when pysimdjson is not importable."""
    if not _READER:
        try:
            import simdjson
        except ImportError:
            _READER.append(None)
        else:
            _READER.append(SimdReader(simdjson))
    return _READER[0]
