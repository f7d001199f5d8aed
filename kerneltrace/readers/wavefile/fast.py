"""Whole-batch numpy path for compact V3 wave files, and the batched waitcnt split both paths use.

The rocprofv3 writer's compact V3 layout: splitting a batch of files on '"' gives 30 segments per
file with the keys at fixed places (the integer arrays contain no quote), so every array kind of
the batch is parsed by one numpy call (docs/waves-json.md, "Reading the wave files fast").
"""

from __future__ import annotations

from itertools import accumulate, repeat
from pathlib import Path
from typing import TYPE_CHECKING

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.record import WAVE_FILE_RE, WaveFile, empty_arrays, saturated
from kerneltrace.readers.wavefile.simd import DIGITS_AND_WHITESPACE, WAITCNT_SKELETON, rows_skeleton

if TYPE_CHECKING:  # numpy is imported lazily at run time (import-time budget of the CLI)
    import numpy as np

_COMPACT_PERIOD = 30
_COMPACT_KEYS = {1: b"duration", 3: b"name", 7: b"num_insts", 9: b"num_stitched", 11: b"wave",
                 13: b"begin", 15: b"cu", 17: b"end", 19: b"id", 21: b"instructions",
                 23: b"simd", 25: b"slot", 27: b"timeline", 29: b"waitcnt"}
_COMPACT_PUNCTUATION = {4: b":", 6: b",", 12: b":{"}
_COMPACT_SCALARS = {"begin": 14, "cu": 16, "end": 18, "id": 20, "simd": 24, "slot": 26}
_COMPACT_ARRAYS = {"instructions": 22, "timeline": 28, "waitcnt": 30}
_COMPACT_CHARS = b"0123456789[],:;{}\n"
_COMPACT_TO_SPACES = bytes.maketrans(b"[],:;{}\n", b"        ")


def split_waitcnt_chunks(values: np.ndarray,
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


def _compact_ints(segments: list[bytes], sentinels: bool = False) -> np.ndarray | None:
    """Integers of the joined segments; `sentinels`: mark waitcnt producer lists with -1."""
    import numpy as np

    text = b";".join(segments)
    if text.translate(None, _COMPACT_CHARS):
        return None  # negatives, floats, whitespace …: the per-file path decides
    if sentinels:
        text = text.replace(b",[[", b" -1 [").replace(b",[]", b" -1 ")
    return np.fromstring(text.translate(_COMPACT_TO_SPACES), dtype=np.int64, sep=" ")


def parse_compact_batch(batch: list[tuple[Path, bytes | InputError]]) -> list[WaveFile] | None:
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
    # bracket and integer counts cannot see ragged rows that compensate: compare the skeletons
    for name, width in (("instructions", 5), ("timeline", 2)):
        skeletons = map(bytes.translate, texts[name], repeat(None), repeat(DIGITS_AND_WHITESPACE))
        if any(skeleton != b":" + rows_skeleton(k - 1, width) + b","
               for skeleton, k in zip(skeletons, opens[name], strict=True)):
            return None
    for text in texts["waitcnt"]:
        skeleton = text.translate(None, DIGITS_AND_WHITESPACE)
        match = WAITCNT_SKELETON.match(skeleton, 1)
        if match is None or skeleton[match.end():] not in (b"}}{", b"}}"):  # "\n" is deleted too
            return None
    entries = [a + b for a, b in zip(map(bytes.count, texts["waitcnt"], repeat(b",[[")),
                                     map(bytes.count, texts["waitcnt"], repeat(b",[]")), strict=True)]
    parsed = {"instructions": _compact_ints(texts["instructions"]),
              "timeline": _compact_ints(texts["timeline"]),
              "waitcnt": _compact_ints(texts["waitcnt"], sentinels=True)}
    counts = {"instructions": [5 * (k - 1) for k in opens["instructions"]],
              "timeline": [2 * (k - 1) for k in opens["timeline"]],
              "waitcnt": [2 * (k - 1) - 2 * e for k, e in zip(opens["waitcnt"], entries, strict=True)]}
    for name, values in parsed.items():
        if values is None or values.size != sum(counts[name]) or saturated(values):
            return None
    offsets = {name: [0, *accumulate(counts[name])] for name in counts}
    chunks = [(i, offsets["waitcnt"][i], offsets["waitcnt"][i + 1], entries[i])
              for i in range(n) if entries[i]]
    waitcnts = split_waitcnt_chunks(parsed["waitcnt"], chunks)
    if waitcnts is None:
        return None
    empty = empty_arrays()["waitcnt"]
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
