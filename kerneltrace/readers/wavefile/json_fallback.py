"""The json.loads fallback for one wave file of an unusual but valid layout (never guessed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltrace.readers.wavefile.record import WaveFile, build_wave, invalid, load_json


def parse_with_json(data: bytes, path: Path) -> WaveFile:
    """Parse one wave file with json.loads, checking the shape of each array."""
    import numpy as np

    document = load_json(data, path)
    wave = document.get("wave") if isinstance(document, dict) else None
    arrays: dict[str, Any] = {}
    if isinstance(wave, dict):
        for name, width in (("instructions", 5), ("timeline", 2)):
            rows = wave.get(name)
            if rows:
                try:
                    array = np.asarray(rows, dtype=np.int64)
                except (TypeError, ValueError, OverflowError) as err:
                    raise invalid(path, f"`{name}` is not an array of integer tuples") from err
                if array.ndim != 2 or array.shape[1] != width:
                    raise invalid(path, f"`{name}` rows must have {width} integers")
                arrays[name] = array
        entries = wave.get("waitcnt") or []
        try:
            lines = np.asarray([int(entry[0]) for entry in entries], dtype=np.int64)
            lists = [[(int(p[0]), int(p[1]) if len(p) > 1 else 0) for p in entry[1]]
                     for entry in entries]
            flat = [pair for producers in lists for pair in producers]
            producers = np.asarray(flat, dtype=np.int64).reshape(-1, 2)
        except (TypeError, ValueError, IndexError, OverflowError) as err:
            raise invalid(path, "`waitcnt` entries must be [line, [[producer, n], ...]]") from err
        offsets = np.zeros(len(lists) + 1, np.int64)
        np.cumsum([len(p) for p in lists], out=offsets[1:])
        arrays["waitcnt"] = (lines, offsets, producers)
        for name in ("instructions", "timeline", "waitcnt"):
            wave.pop(name, None)
    return build_wave(document, arrays, path, len(data), "json")
