"""SIMD path for one wave file: pysimdjson parses it, the integer arrays leave as int64 buffers.

simdjson validates the whole document (syntax, UTF-8, depth) at several hundred MB/s and
`Array.as_buffer(of_type="i")` copies a nested integer array into one int64 buffer without a
Python object per element. That export flattens any nesting and refuses nothing but non-integer
and out-of-range values, so the *shape* is certified separately from the file's skeleton: the
bytes with digits and whitespace deleted (`bytes.translate`, C speed). A regular `instructions`
array of n rows has exactly the skeleton `[[,,,,],[,,,,],...]`; anything else (ragged rows, rows
nested deeper, negative numbers, floats, strings, duplicate keys) does not match.

The path never decides that a file is bad: whatever it cannot certify (simdjson refuses the
document, a value is not an int64, a skeleton differs, a key is duplicated) returns None and the
file takes the numpy/json path (wavefile.py), which gives the same records and the same
InputErrors as before this path existed. One parser is reused (its buffer grows to the largest
file seen, so memory stays bounded by the largest single file) and no proxy outlives a call.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from kerneltrace.readers.wavefile_record import WaveFile, build_wave

# Environment switch for the whole process (tests, benchmarks, a platform with a broken wheel).
PARSER_ENV = "KERNELTRACE_WAVE_PARSER"  # "numpy" disables this path
_ARRAY_NAMES = ("instructions", "timeline", "waitcnt")
_WIDTHS = {"instructions": 5, "timeline": 2}
DIGITS_AND_WHITESPACE = b"0123456789 \t\r\n"
# Skeleton of a regular waitcnt array: [[line,[[p,x],...]],...] with digits removed (shared with
# the numpy paths, whose sentinel split would misread e.g. [line, p] as a producer pair).
WAITCNT_SKELETON = re.compile(
    rb"\[(?:\[,\[(?:\[,\](?:,\[,\])*)?\]\](?:,\[,\[(?:\[,\](?:,\[,\])*)?\]\])*)?\]")
# Between two waitcnt entries (and nowhere else in a regular skeleton): "]],[,[".
_ENTRY_BREAK = b"],[,["
_PAIR = b"[,]"


def rows_skeleton(rows: int, width: int) -> bytes:
    """The skeleton (digits and whitespace deleted) of a regular array of `rows` × `width` ints.

    Shared with the numpy paths, whose integer counts alone cannot see ragged rows that
    compensate each other ([[1,2,3,4,5,6],[7,8,9,10]] holds 10 integers in 2 rows).
    """
    if rows == 0:
        return b"[]"
    row = b"[" + b"," * (width - 1) + b"]"
    return b"[" + (row + b",") * (rows - 1) + row + b"]"


class SimdReader:
    """Parses wave files with one reused simdjson parser; `parse` returns None to defer."""

    def __init__(self, simdjson_module: Any) -> None:
        self._simdjson = simdjson_module
        self._parser = simdjson_module.Parser()

    def parse(self, data: bytes, path: Path) -> WaveFile | None:
        """The WaveFile of a file this path can certify, else None (the numpy path decides)."""
        try:
            return self._parse(data, path)
        except Exception:  # noqa: BLE001 - any refusal defers to the authoritative path
            # The failed call's proxies died with its frame; a fresh parser is still the safe
            # choice should the library have kept any state about them.
            self._parser = self._simdjson.Parser()
            return None

    def _parse(self, data: bytes, path: Path) -> WaveFile | None:
        import numpy as np

        simdjson = self._simdjson
        skeleton = data.translate(None, DIGITS_AND_WHITESPACE)
        document = self._parser.parse(data)
        if not isinstance(document, simdjson.Object):
            return None
        wave = document.get("wave")
        if not isinstance(wave, simdjson.Object):
            return None
        arrays: dict[str, Any] = {}
        for name, width in _WIDTHS.items():
            rows = wave.get(name)
            if rows is None:
                if name in wave:  # null: the json path decides what that means
                    return None
                continue
            if not isinstance(rows, simdjson.Array):
                return None
            count = len(rows)
            flat = np.frombuffer(rows.as_buffer(of_type="i"), dtype=np.int64)
            del rows
            if flat.size != width * count:
                return None
            at = _value_at(skeleton, name)
            if at < 0 or not skeleton.startswith(rows_skeleton(count, width), at):
                return None
            arrays[name] = flat.reshape(-1, width)
        entries = wave.get("waitcnt")
        if entries is not None:
            if not isinstance(entries, simdjson.Array):
                return None
            waitcnt = _waitcnt(np, skeleton, len(entries),
                               np.frombuffer(entries.as_buffer(of_type="i"), dtype=np.int64))
            del entries
            if waitcnt is None:
                return None
            arrays["waitcnt"] = waitcnt
        elif "waitcnt" in wave:
            return None
        plain = _plain_document(simdjson, document, wave)
        del document, wave
        if plain is None:
            return None
        return build_wave(plain, arrays, path, len(data), "simd")


def _value_at(skeleton: bytes, name: str) -> int:
    """Where the value of key `name` starts in the skeleton; -1 unless the key occurs once."""
    key = b'"' + name.encode() + b'":'
    if skeleton.count(key) != 1:
        return -1
    return skeleton.find(key) + len(key)


def _waitcnt(np: Any, skeleton: bytes, entry_count: int, flat: Any) -> tuple | None:
    """(lines, CSR offsets, producers (p, 2)) from the flat waitcnt values, or None."""
    at = _value_at(skeleton, "waitcnt")
    match = WAITCNT_SKELETON.match(skeleton, at) if at >= 0 else None
    if match is None:
        return None
    if entry_count == 0:
        return (np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, 2), np.int64)) \
            if flat.size == 0 else None
    pieces = match.group()[1:-1].split(_ENTRY_BREAK)
    if len(pieces) != entry_count:
        return None
    pairs = np.fromiter(map(bytes.count, pieces, [_PAIR] * entry_count), np.int64, entry_count)
    offsets = np.zeros(entry_count + 1, np.int64)
    np.cumsum(pairs, out=offsets[1:])
    if flat.size != entry_count + 2 * int(offsets[-1]):
        return None
    # entry i starts after i lines and 2 * offsets[i] producer values
    starts = np.arange(entry_count) + 2 * offsets[:-1]
    keep = np.ones(flat.size, dtype=bool)
    keep[starts] = False
    return flat[starts], offsets, flat[keep].reshape(-1, 2)


def _plain(simdjson: Any, value: Any) -> Any:
    if isinstance(value, simdjson.Object):
        return value.as_dict()
    if isinstance(value, simdjson.Array):
        return value.as_list()
    return value


def _plain_document(simdjson: Any, document: Any, wave: Any) -> dict[str, Any] | None:
    """The document without the big arrays as plain Python (None: a duplicated key)."""
    plain: dict[str, Any] = {}
    seen = 0
    for key, value in document.items():
        seen += 1
        if key != "wave":
            plain[key] = _plain(simdjson, value)
    scalars: dict[str, Any] = {}
    wave_keys = 0
    for key, value in wave.items():
        wave_keys += 1
        if key not in _ARRAY_NAMES:
            scalars[key] = _plain(simdjson, value)
    arrays_present = sum(name in wave for name in _ARRAY_NAMES)
    # json.loads keeps the last of duplicated keys; rather than mimic that, defer
    if seen != len(plain) + 1 or wave_keys != len(scalars) + arrays_present:
        return None
    plain["wave"] = scalars
    return plain


_READER: list[SimdReader | None] = []


def simd_reader() -> SimdReader | None:
    """The process-wide reader, or None when pysimdjson is missing or disabled by PARSER_ENV."""
    if os.environ.get(PARSER_ENV, "").strip().lower() == "numpy":
        return None
    if not _READER:
        try:
            import simdjson
        except ImportError:
            _READER.append(None)
        else:
            _READER.append(SimdReader(simdjson))
    return _READER[0]
