"""Fast reader for per-wave ATT files (`se*_sm*_sl*_wv*.json`): integer arrays parsed by numpy.

A wave file is a small JSON object around three big integer arrays (`instructions`, `timeline`,
`waitcnt`). `json.loads` builds one Python object per integer and runs at ~20-45 MB/s here; this
reader locates each array's byte span, turns brackets/commas into spaces with `bytes.translate`
and parses the digits with numpy's C text parser, one call per batch of files (thousands of tiny
wave files share it), then reads the small remainder (scalars such as `begin`/`end`/`cu`, and any
extra keys of newer decoders) with `json.loads`. The integer count each array must yield is known
from its brackets beforehand, which validates the shape.

Error policy: a file that is not valid JSON (truncated, corrupt) or whose arrays have the wrong
shape raises `InputError` naming the file. Callers that scan a whole directory
(`kerneltrace.analysis.waves`) catch it, skip the file and record a warning, so one bad file
never hides the others; the skipped file then also shows up in the consistency check.
When the fast path meets an unexpected but valid layout (floats, negative numbers, odd
nesting) it falls back to `json.loads` for that one file instead of guessing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.errors import InputError

if TYPE_CHECKING:  # numpy is imported lazily at run time (import-time budget of the CLI)
    import numpy as np

WAVE_FILE_RE = re.compile(r"^se(\d+)_sm(\d+)_sl(\d+)_wv(\d+)\.json$")
WAVE_FILE_GLOB = "se*_sm*_sl*_wv*.json"

# Column layout of the arrays (rocprof-formats.md §8.9).
INSTRUCTION_FIELDS = ("time", "category", "stall", "duration", "line")
TIMELINE_FIELDS = ("state", "duration")
# Decoder instruction categories and wave states used by the analyses.
CATEGORY_JUMP = 7  # taken branch
CATEGORY_NEXT = 8  # branch not taken
STATE_NAMES = {0: "empty", 1: "idle", 2: "exec", 3: "wait", 4: "stall"}

_ARRAY_KEY_RE = re.compile(rb'"(instructions|timeline|waitcnt)"\s*:\s*')
_BRACKETS_TO_SPACES = bytes.maketrans(b"[],", b"   ")
_WHITESPACE = b" \t\r\n"
_ARRAY_CHARS = b"0123456789[],- \t\r\n"


@dataclass(frozen=True)
class WaveFile:
    """One traced wave: scalars plus the three integer arrays as int64 numpy arrays."""

    path: Path
    layout: str  # "v3" | "legacy" (rocprofv2: no `cu`, `line` = code-array position)
    se: int | None  # from the file name
    simd: int
    slot: int
    wave_id: int
    cu: int | None
    begin: int
    end: int
    instructions: np.ndarray  # shape (n, 5): time, category, stall, duration, line
    timeline: np.ndarray  # shape (m, 2): state, duration
    waitcnt_lines: np.ndarray  # shape (k,): code row of each s_waitcnt entry
    waitcnt_offsets: np.ndarray  # shape (k+1,): CSR offsets into waitcnt_producers
    waitcnt_producers: np.ndarray  # shape (p, 2): producer line, second field (0 in V3)
    nbytes: int
    parser: str = "fast"  # "fast" | "json" (fallback for unusual but valid layouts)
    extra: dict[str, Any] = field(default_factory=dict)  # other keys (wave.info, dispatcher…)

    @property
    def duration(self) -> int:
        return self.end - self.begin


class _Unusual(Exception):
    """The fast path cannot vouch for this span; the caller falls back to json.loads."""


def wave_files(dispatch_dir: Path) -> list[Path]:
    """The wave files of a dispatch dir, sorted by (se, simd, slot, wv) numerically."""
    found = []
    for path in Path(dispatch_dir).glob(WAVE_FILE_GLOB):
        match = WAVE_FILE_RE.match(path.name)
        if match:
            found.append((tuple(int(g) for g in match.groups()), path))
    return [path for _, path in sorted(found)]


def iter_wave_files(paths: list[Path], batch_bytes: int = 4 << 20) -> Iterator[WaveFile | InputError]:
    """Read files in order, yielding a WaveFile or the InputError of each (never raising).

    Files are parsed in batches of about `batch_bytes` so that thousands of tiny wave files
    share one numpy parse call; memory stays bounded by max(batch_bytes, largest file).
    """
    batch: list[tuple[Path, bytes | InputError]] = []
    batch_size = 0
    for path in paths:
        path = path if isinstance(path, Path) else Path(path)
        data = _read(path)
        batch.append((path, data))
        if isinstance(data, bytes):
            batch_size += len(data)
        if batch_size >= batch_bytes:
            yield from _parse_batch(batch)
            batch, batch_size = [], 0
    yield from _parse_batch(batch)


def _read(path: Path) -> bytes | InputError:
    try:
        return path.read_bytes()
    except OSError as err:
        return InputError(f"cannot read wave file ({err.strerror})", str(path),
                          "check the file exists and is readable")


def _parse_batch(batch: list[tuple[Path, bytes | InputError]]) -> Iterator[WaveFile | InputError]:
    """The whole-batch path for compact V3 files, else the per-file path (same results)."""
    if not batch:
        return
    fast = _parse_compact_batch(batch)
    if fast is not None:
        yield from fast
        return
    items = [data if isinstance(data, InputError) else _prepare(data, path)
             for path, data in batch]
    yield from _finish_batch(items)


def read_wave_file(path: Path) -> WaveFile:
    """Read and parse one wave file; raises InputError for unreadable or invalid files."""
    result = next(iter_wave_files([Path(path)]))
    if isinstance(result, InputError):
        raise result
    return result


def parse_wave_bytes(data: bytes, path: Path) -> WaveFile:
    """Parse the bytes of one wave file (see module docstring for the method)."""
    item = _prepare(data, Path(path))
    result = next(_finish_batch([item]))
    if isinstance(result, InputError):
        raise result
    return result


def _invalid(path: Path, what: str) -> InputError:
    return InputError(f"invalid wave file: {what}", str(path),
                      "re-run the ATT decode, or delete the damaged wave file "
                      "(it will be reported as missing)")


@dataclass
class _Prepared:
    """A wave file whose arrays are located and normalised, waiting for the batch parse."""

    path: Path
    data: bytes
    nbytes: int
    document: dict[str, Any]
    # (name, normalised text, number of integers it must parse to, waitcnt entry count)
    arrays: list[tuple[str, bytes, int, int]]


def _prepare(data: bytes, path: Path) -> _Prepared | WaveFile | InputError:
    try:
        try:
            return _prepare_fast(data, path)
        except _Unusual:
            return _parse_with_json(data, path)
    except InputError as err:
        return err


def _array_spans(data: bytes, path: Path) -> dict[str, tuple[int, int]]:
    """Byte spans [start, end) of the three arrays, each starting at its '['."""
    spans: dict[str, tuple[int, int]] = {}
    for match in _ARRAY_KEY_RE.finditer(data):
        name = match.group(1).decode()
        start = match.end()
        if data[start:start + 1] != b"[":
            raise _Unusual  # e.g. null: let json.loads decide
        # The integer arrays contain no quote and no brace: the span ends before the next one.
        ends = [pos for pos in (data.find(b'"', start), data.find(b"}", start)) if pos != -1]
        if not ends:
            raise _invalid(path, f"`{name}` array is not terminated (file truncated?)")
        end = min(ends)
        while end > start and data[end - 1] in b", \t\r\n":
            end -= 1
        if name in spans:
            raise _Unusual
        spans[name] = (start, end)
    return spans


def _prepare_fast(data: bytes, path: Path) -> _Prepared:
    spans = _array_spans(data, path)
    # The remainder (scalars and small objects) with each big array replaced by [].
    pieces, cursor = [], 0
    for start, end in sorted(spans.values()):
        pieces.append(data[cursor:start])
        pieces.append(b"[]")
        cursor = end
    pieces.append(data[cursor:])
    document = _load_json(b"".join(pieces), path)
    if not isinstance(document, dict) or not isinstance(document.get("wave"), dict):
        raise _invalid(path, "no `wave` object")
    arrays = []
    for name in ("instructions", "timeline", "waitcnt"):
        if name not in spans:
            continue
        start, end = spans[name]
        span = data[start:end]
        opened = span.count(b"[")
        if opened != span.count(b"]"):
            raise _invalid(path, f"unbalanced brackets in `{name}` (file truncated?)")
        if span.translate(None, _ARRAY_CHARS) or b"-" in span:
            raise _Unusual  # floats, negatives, strings …: not the documented layout
        if name == "waitcnt":
            compact = span.translate(None, _WHITESPACE)
            # A -1 sentinel after each wait line marks where its producer list starts.
            entries = compact.count(b",[[") + compact.count(b",[]")
            compact = compact.replace(b",[[", b" -1 [").replace(b",[]", b" -1 ")
            pairs = opened - 1 - 2 * entries
            if pairs < 0:
                raise _Unusual
            arrays.append((name, compact.translate(_BRACKETS_TO_SPACES), 2 * entries + 2 * pairs,
                           entries))
        else:
            width = 5 if name == "instructions" else 2
            arrays.append((name, span.translate(_BRACKETS_TO_SPACES), width * (opened - 1), 0))
    return _Prepared(path, data, len(data), document, arrays)


def _finish_batch(batch: list[_Prepared | WaveFile | InputError]) -> Iterator[WaveFile | InputError]:
    """Parse all prepared arrays of the batch with one numpy call, then cut it per file."""
    import numpy as np

    prepared = [item for item in batch if isinstance(item, _Prepared)]
    texts = [text for item in prepared for _, text, _, _ in item.arrays]
    expected = sum(count for item in prepared for _, _, count, _ in item.arrays)
    joined = b" ".join(texts)
    values = (np.fromstring(joined, dtype=np.int64, sep=" ") if joined.strip()
              else np.zeros(0, np.int64))
    # numpy's text parser saturates out-of-range integers at INT64_MAX: settle such batches file by file
    batch_ok = values.size == expected and not _saturated(values)
    waitcnts = _split_batch_waitcnt(prepared, values) if batch_ok else None
    cursor = 0
    for item in batch:
        if not isinstance(item, _Prepared):
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
        except _Unusual:
            try:
                yield _parse_with_json(item.data, item.path)
            except InputError as err:
                yield err
        except InputError as err:
            yield err


def _split_batch_waitcnt(prepared: list[_Prepared], values: np.ndarray) -> dict[int, tuple] | None:
    """Waitcnt arrays of every prepared file of a batch (see _split_waitcnt_chunks)."""
    chunks = []
    cursor = 0
    for item in prepared:
        for name, _, count, entry_count in item.arrays:
            if name == "waitcnt" and entry_count:
                chunks.append((id(item), cursor, cursor + count, entry_count))
            cursor += count
    return _split_waitcnt_chunks(values, chunks)


def _split_waitcnt_chunks(values: np.ndarray,
                          chunks: list[tuple[int, int, int, int]]) -> dict[int, tuple] | None:
    """Split many waitcnt chunks (owner, start, end, entries) with a few numpy calls in all.

    Per-file numpy calls dominate for thousands of tiny wave files; here the sentinels, entry
    sizes and producer mask are computed once. None → fall back to per-file splitting.
    """
    import numpy as np

    if not chunks:
        return {}
    owners, starts, ends, entries = zip(*chunks, strict=True)
    sentinels = np.flatnonzero(values == -1)
    if sentinels.size != sum(entries):
        return None
    entries_array = np.asarray(entries)
    first_sentinel = np.concatenate(([0], np.cumsum(entries_array)[:-1]))
    owner_end = np.repeat(np.asarray(ends), entries_array)
    next_line_at = np.minimum(np.append(sentinels[1:] - 1, values.size), owner_end)
    pair_values = next_line_at - sentinels - 1
    if ((pair_values < 0).any() or (pair_values % 2).any()
            or (sentinels[first_sentinel] != np.asarray(starts) + 1).any()):
        return None
    cumulative_pairs = np.concatenate(([0], np.cumsum(pair_values // 2)))
    drop = np.zeros(values.size, dtype=bool)
    drop[sentinels] = True
    drop[sentinels - 1] = True
    result = {}
    for owner, start, end, first, count in zip(owners, starts, ends, first_sentinel.tolist(),
                                               entries, strict=True):
        chunk = values[start:end]
        result[owner] = (values[sentinels[first:first + count] - 1],
                         cumulative_pairs[first:first + count + 1] - cumulative_pairs[first],
                         chunk[~drop[start:end]].reshape(-1, 2))
    return result


# The rocprofv3 writer's compact V3 layout: splitting a file on '"' gives 30 segments with the
# keys at fixed places (the integer arrays contain no quote).
_COMPACT_PERIOD = 30
_COMPACT_KEYS = {1: b"duration", 3: b"name", 7: b"num_insts", 9: b"num_stitched", 11: b"wave",
                 13: b"begin", 15: b"cu", 17: b"end", 19: b"id", 21: b"instructions",
                 23: b"simd", 25: b"slot", 27: b"timeline", 29: b"waitcnt"}
_COMPACT_PUNCTUATION = {4: b":", 6: b",", 12: b":{"}
_COMPACT_SCALARS = {"begin": 14, "cu": 16, "end": 18, "id": 20, "simd": 24, "slot": 26}
_COMPACT_ARRAYS = {"instructions": 22, "timeline": 28, "waitcnt": 30}
_COMPACT_CHARS = b"0123456789[],:;{}\n"
_COMPACT_TO_SPACES = bytes.maketrans(b"[],:;{}\n", b"        ")


def _compact_ints(segments: list[bytes], sentinels: bool = False) -> np.ndarray | None:
    """Integers of the joined segments; `sentinels`: mark waitcnt producer lists with -1."""
    import numpy as np

    text = b";".join(segments)
    if text.translate(None, _COMPACT_CHARS):
        return None  # negatives, floats, whitespace …: the per-file path decides
    if sentinels:
        text = text.replace(b",[[", b" -1 [").replace(b",[]", b" -1 ")
    return np.fromstring(text.translate(_COMPACT_TO_SPACES), dtype=np.int64, sep=" ")


def _parse_compact_batch(batch: list[tuple[Path, bytes | InputError]]) -> list[WaveFile] | None:
    """Parse a batch of compact V3 wave files (the rocprofv3 writer's layout) as a whole.

    Applies only when every file is readable and splits on '"' into exactly the documented
    keys at their places; anything else returns None and the batch takes the per-file path.
    Each array kind of the whole batch is parsed by one numpy call; per file only a few
    C-level `bytes.count` calls and the record remain.
    """

    datas = [data for _, data in batch]
    if not all(isinstance(data, bytes) for data in datas):
        return None
    n = len(datas)
    segments = b"\n".join(datas).split(b'"')
    if len(segments) != _COMPACT_PERIOD * n + 1 or segments[0] != b"{":
        return None
    for place, key in (*_COMPACT_KEYS.items(), *_COMPACT_PUNCTUATION.items()):
        if segments[place::_COMPACT_PERIOD] != [key] * n:
            return None
    scalars = {}
    for name, place in _COMPACT_SCALARS.items():
        values = _compact_ints(segments[place::_COMPACT_PERIOD])
        if values is None or values.size != n:
            return None
        scalars[name] = values.tolist()
    texts = {name: segments[place::_COMPACT_PERIOD] for name, place in _COMPACT_ARRAYS.items()}
    # every file must close after its last array (a file cut there would otherwise pass)
    closing = texts["waitcnt"]
    if not closing[-1].endswith(b"]}}") or not all(
            text.endswith(b"]}}\n{") for text in closing[:-1]):
        return None
    opens = {name: list(map(bytes.count, texts[name], repeat(b"["))) for name in texts}
    entries = [a + b for a, b in zip(map(bytes.count, texts["waitcnt"], repeat(b",[[")),
                                     map(bytes.count, texts["waitcnt"], repeat(b",[]")), strict=True)]
    parsed = {"instructions": _compact_ints(texts["instructions"]),
              "timeline": _compact_ints(texts["timeline"]),
              "waitcnt": _compact_ints(texts["waitcnt"], sentinels=True)}
    counts = {"instructions": [5 * (k - 1) for k in opens["instructions"]],
              "timeline": [2 * (k - 1) for k in opens["timeline"]],
              "waitcnt": [2 * (k - 1) - 2 * e for k, e in zip(opens["waitcnt"], entries, strict=True)]}
    for name, values in parsed.items():
        if values is None or values.size != sum(counts[name]) or _saturated(values):
            return None
    offsets = {name: [0, *accumulate(counts[name])] for name in counts}
    chunks = [(i, offsets["waitcnt"][i], offsets["waitcnt"][i + 1], entries[i])
              for i in range(n) if entries[i]]
    waitcnts = _split_waitcnt_chunks(parsed["waitcnt"], chunks)
    if waitcnts is None:
        return None
    empty = _empty_arrays()["waitcnt"]
    instructions, timeline = parsed["instructions"], parsed["timeline"]
    result = []
    for i, (path, data) in enumerate(batch):
        match = WAVE_FILE_RE.match(path.name)
        lines, waitcnt_offsets, producers = waitcnts.get(i, empty)
        result.append(WaveFile(
            path=path, layout="v3", se=int(match.group(1)) if match else None,
            simd=scalars["simd"][i], slot=scalars["slot"][i], wave_id=scalars["id"][i],
            cu=scalars["cu"][i], begin=scalars["begin"][i], end=scalars["end"][i],
            instructions=instructions[offsets["instructions"][i]:offsets["instructions"][i + 1]]
            .reshape(-1, 5),
            timeline=timeline[offsets["timeline"][i]:offsets["timeline"][i + 1]].reshape(-1, 2),
            waitcnt_lines=lines, waitcnt_offsets=waitcnt_offsets, waitcnt_producers=producers,
            nbytes=len(data), parser="fast"))
    return result


def _from_values(item: _Prepared, values: np.ndarray | None,
                 waitcnt: tuple | None = None) -> WaveFile:
    import numpy as np

    if values is None:
        texts = b" ".join(text for _, text, _, _ in item.arrays)
        values = (np.fromstring(texts, dtype=np.int64, sep=" ") if texts.strip()
                  else np.zeros(0, np.int64))
        if values.size != sum(c for _, _, c, _ in item.arrays) or _saturated(values):
            raise _Unusual
    arrays: dict[str, Any] = {}
    cursor = 0
    for name, _, count, entries in item.arrays:
        chunk = values[cursor:cursor + count]
        cursor += count
        if name == "waitcnt":
            arrays[name] = waitcnt if waitcnt is not None else _split_waitcnt(chunk, entries)
        else:
            arrays[name] = chunk.reshape(-1, 5 if name == "instructions" else 2)
    return _build(item.document, arrays, item.path, item.nbytes, "fast")


def _saturated(values: np.ndarray) -> bool:
    import numpy as np

    return values.size > 0 and bool(values.max() == np.iinfo(np.int64).max)


def _split_waitcnt(values: np.ndarray, entries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[line, -1, p, x, p, x, line, -1, ...] → (lines, CSR offsets, producers (p, 2))."""
    import numpy as np

    if entries == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, 2), np.int64)
    sentinels = np.flatnonzero(values == -1)
    if sentinels.size != entries or sentinels[0] != 1:
        raise _Unusual
    next_line_at = np.append(sentinels[1:] - 1, values.size)
    pair_values = next_line_at - sentinels - 1
    if (pair_values % 2).any() or (pair_values < 0).any():
        raise _Unusual
    keep = np.ones(values.size, dtype=bool)
    keep[sentinels] = False
    keep[sentinels - 1] = False
    offsets = np.zeros(entries + 1, np.int64)
    np.cumsum(pair_values // 2, out=offsets[1:])
    return values[sentinels - 1], offsets, values[keep].reshape(-1, 2)


def _parse_with_json(data: bytes, path: Path) -> WaveFile:
    import numpy as np

    document = _load_json(data, path)
    wave = document.get("wave") if isinstance(document, dict) else None
    arrays: dict[str, Any] = {}
    if isinstance(wave, dict):
        for name, width in (("instructions", 5), ("timeline", 2)):
            rows = wave.get(name)
            if rows:
                try:
                    array = np.asarray(rows, dtype=np.int64)
                except (TypeError, ValueError, OverflowError) as err:
                    raise _invalid(path, f"`{name}` is not an array of integer tuples") from err
                if array.ndim != 2 or array.shape[1] != width:
                    raise _invalid(path, f"`{name}` rows must have {width} integers")
                arrays[name] = array
        entries = wave.get("waitcnt") or []
        try:
            lines = np.asarray([int(entry[0]) for entry in entries], dtype=np.int64)
            lists = [[(int(p[0]), int(p[1]) if len(p) > 1 else 0) for p in entry[1]]
                     for entry in entries]
            flat = [pair for producers in lists for pair in producers]
            producers = np.asarray(flat, dtype=np.int64).reshape(-1, 2)
        except (TypeError, ValueError, IndexError, OverflowError) as err:
            raise _invalid(path, "`waitcnt` entries must be [line, [[producer, n], ...]]") from err
        offsets = np.zeros(len(lists) + 1, np.int64)
        np.cumsum([len(p) for p in lists], out=offsets[1:])
        arrays["waitcnt"] = (lines, offsets, producers)
        for name in ("instructions", "timeline", "waitcnt"):
            wave.pop(name, None)
    return _build(document, arrays, path, len(data), "json")


def _load_json(text: bytes, path: Path) -> Any:
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise _invalid(path, f"not valid JSON ({err}); the file may be truncated") from err
    except RecursionError:
        raise _invalid(path, "nested too deeply to be a decoder output") from None


def _int_field(wave: dict[str, Any], key: str, path: Path, default: int | None = None) -> int:
    value = wave.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(path, f"`wave.{key}` must be an integer (got {value!r})")
    return value


_EMPTY: dict[str, Any] = {}


def _empty_arrays() -> dict[str, Any]:
    """Shared read-only empty arrays for absent keys (saves allocations on tiny files)."""
    if not _EMPTY:
        import numpy as np

        arrays = {"instructions": np.zeros((0, 5), np.int64), "timeline": np.zeros((0, 2), np.int64),
                  "waitcnt": (np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, 2), np.int64))}
        for value in (arrays["instructions"], arrays["timeline"], *arrays["waitcnt"]):
            value.flags.writeable = False
        _EMPTY.update(arrays)
    return _EMPTY


def _build(document: Any, arrays: dict[str, Any], path: Path, nbytes: int,
           parser: str) -> WaveFile:
    if not isinstance(document, dict) or not isinstance(document.get("wave"), dict):
        raise _invalid(path, "no `wave` object")
    wave = dict(document["wave"])
    for name in ("instructions", "timeline", "waitcnt"):
        wave.pop(name, None)
    legacy = "cu" not in wave or "loop_count" in document or document.get("name") == "SE"
    match = WAVE_FILE_RE.match(path.name)
    empty = _empty_arrays()
    lines, offsets, producers = arrays.get("waitcnt") or empty["waitcnt"]
    extra = {key: value for key, value in wave.items()
             if key not in ("begin", "end", "cu", "id", "simd", "slot")}
    return WaveFile(
        path=path,
        layout="legacy" if legacy else "v3",
        se=int(match.group(1)) if match else None,
        simd=_int_field(wave, "simd", path, int(match.group(2)) if match else None),
        slot=_int_field(wave, "slot", path, int(match.group(3)) if match else None),
        wave_id=_int_field(wave, "id", path, 0),
        cu=_int_field(wave, "cu", path) if "cu" in wave else None,
        begin=_int_field(wave, "begin", path),
        end=_int_field(wave, "end", path),
        instructions=arrays.get("instructions", empty["instructions"]),
        timeline=arrays.get("timeline", empty["timeline"]),
        waitcnt_lines=lines,
        waitcnt_offsets=offsets,
        waitcnt_producers=producers,
        nbytes=nbytes,
        parser=parser,
        extra=extra,
    )
