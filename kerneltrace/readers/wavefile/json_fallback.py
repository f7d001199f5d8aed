"""The fallback wave-file parser (json.loads + numpy): any valid layout, and every error decision.

It reads each file the SIMD path does not certify (pysimdjson missing or switched off, legacy or
unusual layouts, negative numbers, integral floats, null arrays, escaped or duplicated keys: the
last one wins, as in json.loads) and alone decides that a file is bad: invalid JSON, no `wave`
object, rows of the wrong width, values that are not int64 integers (fractions, booleans,
strings, beyond int64), malformed waitcnt entries. A waitcnt producer keeps its first two fields
(a lone field gets 0 as its second).

Each list is converted in one C pass (`array.array("q")` takes Python ints within int64 and
raises on anything else); only when that refuses are the values checked one by one, which
takes integral floats (32.0) and words the error.
"""

from __future__ import annotations

import json
from array import array
from itertools import accumulate, chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.errors import InputError
from kerneltrace.readers.wavefile.record import WaveFile, build_wave, invalid

if TYPE_CHECKING:  # numpy is imported lazily at run time (import-time budget of the CLI)
    import numpy as np

_ROW_WIDTHS = {"instructions": 5, "timeline": 2}
_WAITCNT_SHAPE = "`waitcnt` entries must be [line, [[producer, n], ...]]"


def parse_with_json(data: bytes, path: Path) -> WaveFile:
    """Parse one wave file with json.loads; raises InputError naming the file when it is bad."""
    document = _load_json(data, path)
    wave = document.get("wave") if isinstance(document, dict) else None
    if not isinstance(wave, dict):
        raise invalid(path, "no `wave` object")
    # array("q") takes a boolean for 0/1: a file holding a JSON boolean is checked value by value
    quick = b"true" not in data and b"false" not in data
    arrays: dict[str, Any] = {}
    for name, width in _ROW_WIDTHS.items():
        rows = wave.get(name)
        if rows:  # absent, null or empty: no rows
            arrays[name] = _rows(rows, name, width, path, quick)
    entries = wave.get("waitcnt")
    if entries:
        arrays["waitcnt"] = _waitcnt(entries, path, quick)
    return build_wave(document, arrays, path, len(data), "json")


def parse_or_error(data: bytes, path: Path) -> WaveFile | InputError:
    """parse_with_json, its InputError returned instead of raised (for batch readers)."""
    try:
        return parse_with_json(data, path)
    except InputError as err:
        return err


def _load_json(text: bytes, path: Path) -> Any:
    """json.loads with one-line InputErrors for invalid or absurdly nested content."""
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise invalid(path, f"not valid JSON ({err}); the file may be truncated") from err
    except RecursionError:
        raise invalid(path, "nested too deeply to be a decoder output") from None


def _rows(rows: Any, name: str, width: int, path: Path, quick: bool) -> np.ndarray:
    """An (n, width) int64 array from a JSON array of n rows of `width` integers."""
    if not isinstance(rows, list):
        raise invalid(path, f"`{name}` is not an array of integer tuples (got {_short(rows)})")
    converted = _quick_rows(rows, width) if quick else None
    if converted is not None:
        return converted
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {width}:
        index, row = next((index, row) for index, row in enumerate(rows)
                          if type(row) is not list or len(row) != width)
        raise invalid(path, f"`{name}` rows must have {width} integers "
                            f"(row {index} is {_short(row)})")
    return _int64(list(chain.from_iterable(rows)), f"`{name}`", path).reshape(-1, width)


def _waitcnt(entries: Any, path: Path, quick: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lines, CSR offsets, producers (p, 2)) of a JSON waitcnt array."""
    import numpy as np

    if not isinstance(entries, list) or not all(
            type(entry) is list and len(entry) >= 2 and type(entry[1]) is list
            for entry in entries):
        raise invalid(path, _WAITCNT_SHAPE)
    lines = [entry[0] for entry in entries]
    groups = [entry[1] for entry in entries]
    pairs = list(chain.from_iterable(groups))
    line_array = _quick_ints(lines) if quick else None
    if line_array is None:
        line_array = _int64(lines, "`waitcnt`", path)
    producers = _quick_rows(pairs, 2) if quick and pairs else None
    if producers is None:
        if not all(type(pair) is list and len(pair) == 2 for pair in pairs):
            if not all(type(pair) is list and pair for pair in pairs):
                raise invalid(path, _WAITCNT_SHAPE)
            pairs = [pair[:2] if len(pair) > 1 else [pair[0], 0] for pair in pairs]
        producers = _int64(list(chain.from_iterable(pairs)), "`waitcnt`", path).reshape(-1, 2)
    offsets = np.array([0, *accumulate(map(len, groups))], dtype=np.int64)
    return line_array, offsets, producers


def _quick_ints(values: list[Any]) -> np.ndarray | None:
    """The values as int64 when all are Python ints within int64 (or booleans), else None."""
    import numpy as np

    try:
        return np.frombuffer(array("q", values), dtype=np.int64)
    except (TypeError, OverflowError):
        return None


def _quick_rows(rows: list[Any], width: int) -> np.ndarray | None:
    """_quick_ints of rows that all hold `width` values (a str or object row fails the ints)."""
    try:
        if set(map(len, rows)) != {width}:
            return None
    except TypeError:  # a row without a length (a number, null)
        return None
    values = _quick_ints(list(chain.from_iterable(rows)))
    return None if values is None else values.reshape(-1, width)


def _int64(values: list[Any], what: str, path: Path) -> np.ndarray:
    """The values as int64 checked one by one: integral floats (32.0) are taken, the rest refused."""
    import numpy as np

    kinds = set(map(type, values))
    if not kinds <= {int}:
        if not kinds <= {int, float}:  # bool, str, None, list, dict
            bad = next(value for value in values if type(value) not in (int, float))
            raise invalid(path, f"{what} is not an array of integer tuples (holds {_short(bad)})")
        values = [_integral(value, what, path) for value in values]
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        bad = next(value for value in values if not -(2**63) <= value < 2**63)
        raise invalid(path, f"{what} holds an integer beyond int64 ({_short(bad)})") from None


def _integral(value: int | float, what: str, path: Path) -> int:
    if type(value) is float:
        if not value.is_integer():  # also inf and nan
            raise invalid(path, f"{what} is not an array of integer tuples (holds {value!r})")
        return int(value)
    return value


def _short(value: Any) -> str:
    """The value as JSON (true, "1", NaN), cut to 60 characters."""
    text = json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 60 else text[:57] + "..."
