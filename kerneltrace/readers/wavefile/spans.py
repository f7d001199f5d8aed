"""Per-file path for wave files that are not compact V3 (legacy, pretty-printed, extra keys).

Each file's array byte spans are located and normalised, all spans of a batch are parsed by one
numpy call, and the small remainder (scalars, extra keys) by json.loads; a file of an unusual but
valid layout goes to the json.loads fallback (json_fallback.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.fast import split_waitcnt_chunks
from kerneltrace.readers.wavefile.json_fallback import parse_with_json
from kerneltrace.readers.wavefile.record import (
    Unusual,
    WaveFile,
    build_wave,
    invalid,
    load_json,
    saturated,
)
from kerneltrace.readers.wavefile.simd import DIGITS_AND_WHITESPACE, WAITCNT_SKELETON, rows_skeleton

if TYPE_CHECKING:  # numpy is imported lazily at run time (import-time budget of the CLI)
    import numpy as np

_ARRAY_KEY_RE = re.compile(rb'"(instructions|timeline|waitcnt)"\s*:\s*')
_BRACKETS_TO_SPACES = bytes.maketrans(b"[],", b"   ")
_WHITESPACE = b" \t\r\n"
_ARRAY_CHARS = b"0123456789[],- \t\r\n"


@dataclass
class Prepared:
    """A wave file whose arrays are located and normalised, waiting for the batch parse."""

    path: Path
    data: bytes
    nbytes: int
    document: dict[str, Any]
    # (name, normalised text, number of integers it must parse to, waitcnt entry count)
    arrays: list[tuple[str, bytes, int, int]]


def prepare(data: bytes, path: Path) -> Prepared | WaveFile | InputError:
    """Locate and normalise one file's arrays (or parse it with json.loads, or its error)."""
    try:
        try:
            return _prepare_fast(data, path)
        except Unusual:
            return parse_with_json(data, path)
    except InputError as err:
        return err


def _array_spans(data: bytes, path: Path) -> dict[str, tuple[int, int]]:
    """Byte spans [start, end) of the three arrays, each starting at its '['."""
    spans: dict[str, tuple[int, int]] = {}
    for match in _ARRAY_KEY_RE.finditer(data):
        name = match.group(1).decode()
        start = match.end()
        if data[start:start + 1] != b"[":
            raise Unusual  # e.g. null: let json.loads decide
        # The integer arrays contain no quote and no brace: the span ends before the next one.
        ends = [pos for pos in (data.find(b'"', start), data.find(b"}", start)) if pos != -1]
        if not ends:
            raise invalid(path, f"`{name}` array is not terminated (file truncated?)")
        end = min(ends)
        while end > start and data[end - 1] in b", \t\r\n":
            end -= 1
        if name in spans:
            raise Unusual
        spans[name] = (start, end)
    return spans


def _prepare_fast(data: bytes, path: Path) -> Prepared:
    spans = _array_spans(data, path)
    # The remainder (scalars and small objects) with each big array replaced by [].
    pieces, cursor = [], 0
    for start, end in sorted(spans.values()):
        pieces.append(data[cursor:start])
        pieces.append(b"[]")
        cursor = end
    pieces.append(data[cursor:])
    document = load_json(b"".join(pieces), path)
    if not isinstance(document, dict) or not isinstance(document.get("wave"), dict):
        raise invalid(path, "no `wave` object")
    arrays = []
    for name in ("instructions", "timeline", "waitcnt"):
        if name not in spans:
            continue
        start, end = spans[name]
        span = data[start:end]
        opened = span.count(b"[")
        if opened != span.count(b"]"):
            raise invalid(path, f"unbalanced brackets in `{name}` (file truncated?)")
        if span.translate(None, _ARRAY_CHARS) or b"-" in span:
            raise Unusual  # floats, negatives, strings …: not the documented layout
        if name == "waitcnt":
            if not WAITCNT_SKELETON.fullmatch(span.translate(None, DIGITS_AND_WHITESPACE)):
                raise Unusual  # not [[line, [[producer, n], ...]], ...]: json.loads decides
            compact = span.translate(None, _WHITESPACE)
            # A -1 sentinel after each wait line marks where its producer list starts.
            entries = compact.count(b",[[") + compact.count(b",[]")
            compact = compact.replace(b",[[", b" -1 [").replace(b",[]", b" -1 ")
            pairs = opened - 1 - 2 * entries
            if pairs < 0:
                raise Unusual
            arrays.append((name, compact.translate(_BRACKETS_TO_SPACES), 2 * entries + 2 * pairs,
                           entries))
        else:
            width = 5 if name == "instructions" else 2
            if span.translate(None, DIGITS_AND_WHITESPACE) != rows_skeleton(opened - 1, width):
                raise Unusual  # ragged or deeper rows: json.loads decides (it refuses them)
            arrays.append((name, span.translate(_BRACKETS_TO_SPACES), width * (opened - 1), 0))
    return Prepared(path, data, len(data), document, arrays)


def finish_batch(batch: list[Prepared | WaveFile | InputError]) -> Iterator[WaveFile | InputError]:
    """Parse all prepared arrays of the batch with one numpy call, then cut it per file."""
    import numpy as np

    prepared = [item for item in batch if isinstance(item, Prepared)]
    texts = [text for item in prepared for _, text, _, _ in item.arrays]
    expected = sum(count for item in prepared for _, _, count, _ in item.arrays)
    joined = b" ".join(texts)
    values = (np.fromstring(joined, dtype=np.int64, sep=" ") if joined.strip()
              else np.zeros(0, np.int64))
    # numpy's text parser saturates out-of-range integers at INT64_MAX: settle such batches file by file
    batch_ok = values.size == expected and not saturated(values)
    waitcnts = _split_batch_waitcnt(prepared, values) if batch_ok else None
    cursor = 0
    for item in batch:
        if not isinstance(item, Prepared):
            yield item
            continue
        try:
            if batch_ok:
                count = sum(c for _, _, c, _ in item.arrays)
                yield _from_values(item, values[cursor:cursor + count],
                                   waitcnts.get(id(item)) if waitcnts else None)
                cursor += count
            else:  # something in the batch did not parse as counted: settle file by file
                yield _from_values(item, None)
        except Unusual:
            try:
                yield parse_with_json(item.data, item.path)
            except InputError as err:
                yield err
        except InputError as err:
            yield err


def _split_batch_waitcnt(prepared: list[Prepared], values: np.ndarray) -> dict[int, tuple] | None:
    """Waitcnt arrays of every prepared file of a batch (see split_waitcnt_chunks)."""
    chunks = []
    cursor = 0
    for item in prepared:
        for name, _, count, entry_count in item.arrays:
            if name == "waitcnt" and entry_count:
                chunks.append((id(item), cursor, cursor + count, entry_count))
            cursor += count
    return split_waitcnt_chunks(values, chunks)


def _from_values(item: Prepared, values: np.ndarray | None,
                 waitcnt: tuple | None = None) -> WaveFile:
    import numpy as np

    if values is None:
        texts = b" ".join(text for _, text, _, _ in item.arrays)
        values = (np.fromstring(texts, dtype=np.int64, sep=" ") if texts.strip()
                  else np.zeros(0, np.int64))
        if values.size != sum(c for _, _, c, _ in item.arrays) or saturated(values):
            raise Unusual
    arrays: dict[str, Any] = {}
    cursor = 0
    for name, _, count, entries in item.arrays:
        chunk = values[cursor:cursor + count]
        cursor += count
        if name == "waitcnt":
            arrays[name] = waitcnt if waitcnt is not None else _split_waitcnt(chunk, entries)
        else:
            arrays[name] = chunk.reshape(-1, 5 if name == "instructions" else 2)
    return build_wave(item.document, arrays, item.path, item.nbytes, "fast")


def _split_waitcnt(values: np.ndarray, entries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[line, -1, p, x, p, x, line, -1, ...] → (lines, CSR offsets, producers (p, 2))."""
    import numpy as np

    if entries == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, 2), np.int64)
    sentinels = np.flatnonzero(values == -1)
    if sentinels.size != entries or sentinels[0] != 1:
        raise Unusual
    next_line_at = np.append(sentinels[1:] - 1, values.size)
    pair_values = next_line_at - sentinels - 1
    if (pair_values % 2).any() or (pair_values < 0).any():
        raise Unusual
    keep = np.ones(values.size, dtype=bool)
    keep[sentinels] = False
    keep[sentinels - 1] = False
    offsets = np.zeros(entries + 1, np.int64)
    np.cumsum(pair_values // 2, out=offsets[1:])
    return values[sentinels - 1], offsets, values[keep].reshape(-1, 2)
