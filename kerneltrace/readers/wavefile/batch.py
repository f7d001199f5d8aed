"""The batch fast path for wave files: many compact files, one simdjson parse of all their arrays.

Per-file parsing spends most of its time in Python around the parser (proxies, skeleton checks,
the small document), not in the parser: moe_reduce's 4112 files (15 MB) take ~70 ms to parse one
by one and ~4x that to certify. Here each file is cut by a few C-speed bytes operations into its
three integer arrays and the small rest (the "head": the document with each array written `[]`):
* each array's text must be digits, commas and brackets only, and its skeleton (digits deleted)
  the regular one (`[[,,,,],...]` rows; waitcnt `[[,[[,],...]],...]`), so it is one complete
  array on its own and the texts of a batch joined by commas are one array of exactly those
  arrays: one `simdjson.Parser.parse` validates every number and `as_buffer` exports them;
* the head is read by `json.loads` (small), so every key, scalar and `extra` value is what the
  fallback gives; the cut is checked by the head itself (each cut key must read back as `[]`
  under `wave`).
Whitespace (pretty-printed files) is allowed around and inside the arrays. A file this path
does not vouch for (a backslash anywhere, an array key twice, any other character inside an
array, a head json.loads refuses, a scalar the record refuses) returns None and takes the
per-file paths (simd.py, then json_fallback.py); if simdjson refuses the
batch's arrays (a number beyond int64, a leading zero, an empty value), every file of the batch
does. This path never decides an error.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.record import WaveFile, build_wave
from kerneltrace.readers.wavefile.simd import (
    DIGITS_AND_WHITESPACE,
    rows_skeleton,
    split_waitcnt,
    waitcnt_pairs,
)

if TYPE_CHECKING:
    from pathlib import Path

    from kerneltrace.readers.wavefile.simd import SimdReader

_NAMES = ("instructions", "timeline", "waitcnt")
_WIDTHS = (5, 2)
_KEYS = tuple(b'"' + name.encode() + b'":' for name in _NAMES)
_TAIL = b" \t\r\n,"  # between an array value and the next key or the end of its object
_SKELETONS: dict[tuple[int, int], bytes] = {}


def _cut(data: bytes) -> tuple[bytes, list[bytes | None]] | None:
    """(head, the three array texts or None when absent) of a compact file, None: not vouched for."""
    if b"\\" in data:  # escaped key or string: quotes no longer delimit every string
        return None
    spans: list[tuple[int, int]] = []
    texts: list[bytes | None] = []
    for key in _KEYS:
        at = data.find(key)
        if at < 0:
            texts.append(None)
            continue
        if data.find(key, at + 1) >= 0:  # twice (duplicate or nested): per-file paths decide
            return None
        start = at + len(key)
        if data[start:start + 1] != b"[":  # whitespace first (pretty-printed), or no array
            ahead = data[start:start + 64]
            start += len(ahead) - len(ahead.lstrip())
            if data[start:start + 1] != b"[":  # null, a number…: the per-file paths decide
                return None
        # an array of integers holds no quote and no brace: it ends before the next of them
        # (its skeleton is checked in full later: anything else in it is refused there)
        quote, brace = data.find(b'"', start), data.find(b"}", start)
        end = min(quote if quote >= 0 else len(data), brace if brace >= 0 else len(data))
        end = start + len(data[start:end].rstrip(_TAIL))
        spans.append((start, end))
        texts.append(data[start:end])
    if not spans:
        return data, texts
    spans.sort()
    pieces, last = [], 0
    for start, end in spans:
        pieces += (data[last:start], b"[]")
        last = end
    pieces.append(data[last:])
    return b"".join(pieces), texts


def _rows(text: bytes, width: int) -> int | None:
    """Row count of a regular `rows × width` array text, else None."""
    rows = text.count(b"[") - 1
    shape = (rows, width)
    skeleton = _SKELETONS.get(shape)
    if skeleton is None:
        skeleton = rows_skeleton(rows, width)
        if len(_SKELETONS) < 4096:
            _SKELETONS[shape] = skeleton
    return rows if text.translate(None, DIGITS_AND_WHITESPACE) == skeleton else None


def _head(head: bytes, texts: list[bytes | None]) -> dict[str, Any] | None:
    """The head document when it is one and every cut array reads back as `[]` under `wave`."""
    try:
        document = json.loads(head)
    except (ValueError, RecursionError):
        return None
    wave = document.get("wave") if type(document) is dict else None
    if type(wave) is not dict:
        return None
    for name, text in zip(_NAMES, texts, strict=True):
        if (wave.get(name) != [] if text is not None else name in wave):
            return None
    return document


def read_batch(items: list[tuple[Path, bytes]], reader: SimdReader) -> list[WaveFile | None]:
    """The WaveFile of each (path, data) this path vouches for, None for the others (in order)."""
    result: list[WaveFile | None] = [None] * len(items)
    accepted: list[tuple[int, dict[str, Any], int, int, list[int]]] = []
    arrays: tuple[list[bytes], list[bytes], list[bytes]] = ([], [], [])
    for index, (_, data) in enumerate(items):
        cut = _cut(data)
        if cut is None:
            continue
        head, texts = cut
        counts = []
        for text, width in zip(texts, _WIDTHS, strict=False):
            rows = 0 if text is None else _rows(text, width)
            if rows is None:
                break
            counts.append(rows)
        else:
            pairs: list[int] | None = [] if texts[2] is None else waitcnt_pairs(
                texts[2].translate(None, DIGITS_AND_WHITESPACE), 0, whole=True)
            document = _head(head, texts) if pairs is not None else None
            if document is not None:
                accepted.append((index, document, counts[0], counts[1], pairs))
                for column, text in zip(arrays, texts, strict=True):
                    if text is not None and text != b"[]":
                        column.append(text)
    if not accepted:
        return result
    values = _export(arrays, reader)
    if values is None:
        return result
    instructions = values[0].reshape(-1, 5)
    timeline = values[1].reshape(-1, 2)
    if (len(instructions) != sum(entry[2] for entry in accepted)
            or len(timeline) != sum(entry[3] for entry in accepted)):
        return result  # cannot happen with certified texts; never guess
    waitcnt = split_waitcnt(values[2], [entry[4] for entry in accepted])
    if waitcnt is None:
        return result
    row = line = 0
    for (index, document, rows, lines, _), wait in zip(accepted, waitcnt, strict=True):
        path, data = items[index]
        parsed = {"instructions": instructions[row:row + rows], "timeline": timeline[line:line + lines],
                  "waitcnt": wait}
        row += rows
        line += lines
        try:
            result[index] = build_wave(document, parsed, path, len(data), "simd")
        except InputError:  # a scalar of the wrong type: the fallback words it
            result[index] = None
    return result


def _export(arrays: tuple[list[bytes], ...], reader: SimdReader) -> list[Any] | None:
    """The integers of each column's texts as one int64 array per column (None: simdjson refuses).

    The reader's batch parser is reused (a fresh one costs more than the parse: its buffers for
    a 4 MB batch are allocated and touched anew); after a refusal it is replaced, so no proxy of
    the failed call can block it.
    """
    import numpy as np

    text = b"[[" + b"],[".join(b",".join(column) for column in arrays) + b"]]"
    document = None
    try:
        document = reader.batch_parser.parse(text)
        buffers = [document[index].as_buffer(of_type="i") for index in range(len(arrays))]
    except (ValueError, RuntimeError, TypeError, IndexError):
        document = None
        reader.batch_parser = reader.module.Parser()
        return None
    finally:
        document = None
    return [np.frombuffer(buffer, np.int64) for buffer in buffers]
