"""Resident waves over time on the traced CU of each SE, from a dispatch dir's occupancy.json."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.readers.regular import JSON_METADATA_LIMIT, optional_json, read_regular

if TYPE_CHECKING:
    import numpy as np

SERIES_POINTS = 64  # occupancy series length (for charts)


def event_rows(events: list) -> np.ndarray:
    """The first 6 fields of each event with at least 6, as int64 rows."""
    import numpy as np

    # the usual case, every event a row of the same width of plain integers, in one C call
    try:
        table = np.array(events)
    except (ValueError, TypeError, OverflowError):
        table = None
    if table is not None and table.ndim == 2 and table.dtype == np.int64:
        return table[:, :6] if table.shape[1] >= 6 else np.zeros((0, 6), np.int64)
    return np.asarray([event[:6] for event in events if len(event) >= 6], dtype=np.int64)


def occupancy_summary(dispatch_dir: Path, traced_cu: dict[int, int]) -> dict[str, Any]:
    """Waves resident over time on the traced CU of each SE, from occupancy.json."""

    path = Path(dispatch_dir) / "occupancy.json"
    fast = _simd_document(path)
    if fast is not None:
        try:
            return _summary(fast, traced_cu)
        except (ValueError, TypeError, OverflowError, IndexError):
            pass  # the json.loads path below words it
    document, problem = optional_json(path, "occupancy.json")
    if problem:
        return {"available": False, "note": problem}
    try:
        return _summary(document, traced_cu)
    except (ValueError, TypeError, OverflowError, IndexError) as err:
        return {"available": False, "note": f"occupancy.json has malformed events ({type(err).__name__}); "
                                            "occupancy over time skipped"}


def _summary(document: object, traced_cu: dict[int, int]) -> dict[str, Any]:
    import numpy as np

    per_se = []
    for key, events in sorted(document.items()) if isinstance(document, dict) else []:
        if isinstance(events, _Rows):  # the fast path: regular rows, digit keys, never empty
            pass
        elif not (key.isascii() and key.isdigit()) or not isinstance(events, list) or not events:
            continue
        elif not isinstance(events[0], list):
            return {"available": False,
                    "note": "legacy occupancy.json (packed 64-bit events) is not decoded"}
        se = int(key)
        cu = traced_cu.get(se)
        if cu is None:
            continue
        rows = events.rows if isinstance(events, _Rows) else event_rows(
            [event for event in events if isinstance(event, list)])
        if rows.ndim != 2 or rows.shape[1] < 6:
            continue
        if not len(rows):
            continue
        rows = rows[rows[:, 1] == cu]
        if not len(rows):
            continue
        rows = rows[np.lexsort((rows[:, 4], rows[:, 0]))]  # ends before starts at equal times
        steps = np.cumsum(np.where(rows[:, 4] == 1, 1, -1))
        # waves resident before the trace started end without a start: lift the baseline
        steps -= min(int(steps.min()), 0)
        times = rows[:, 0]
        spans = np.diff(times)
        duration = int(times[-1] - times[0])
        if duration < 0:
            continue
        mean = float((steps[:-1] * spans).sum() / duration) if duration else float(steps.max())
        samples = np.linspace(times[0], times[-1], min(SERIES_POINTS, len(times)))
        sampled = steps[np.maximum(np.searchsorted(times, samples, "right") - 1, 0)]
        per_se.append({"se": se, "cu": cu, "max_waves": int(steps.max()),
                       "mean_waves": round(mean, 3),
                       "series": [[int(t), int(v)] for t, v in zip(samples, sampled, strict=True)]})
    if not per_se:
        return {"available": False, "note": "no occupancy events for the traced CU"}
    return {"available": True, "source": "occupancy.json",
            "max_waves": max(entry["max_waves"] for entry in per_se),
            "mean_waves": round(sum(entry["mean_waves"] for entry in per_se) / len(per_se), 3),
            "per_se": per_se}


class _Rows:
    """The event rows of one SE from the fast path: `rows` is the (n, 6) int64 array event_rows
    gives; `column` one field of every event as ints, without numpy (the non-waves reading)."""

    def __init__(self, values: memoryview, count: int, width: int) -> None:
        self._values, self._count, self._width = values, count, width
        self._rows: np.ndarray | None = None

    @property
    def rows(self) -> np.ndarray:
        if self._rows is None:
            import numpy as np

            self._rows = np.frombuffer(self._values, np.int64).reshape(self._count, self._width)[:, :6]
        return self._rows

    def column(self, index: int) -> list[int]:
        return self._values[index::self._width].tolist()


def _flat(simdjson: Any, value: Any) -> bool:
    """True for a scalar, or an object or array whose values are all scalars."""
    if isinstance(value, simdjson.Object):
        value = list(value.as_dict().values())
    elif isinstance(value, simdjson.Array):
        value = value.as_list()
    else:
        return True
    return not any(isinstance(item, (dict, list)) for item in value)


def cu_usage_document(path: Path, limit: int) -> dict[str, Any] | None:
    """occupancy.json for analysis.cu_usage.observed_usage by the pysimdjson path (each SE's
    events as EventColumns, the other keys' flat values as json.loads gives them), None when
    that path does not vouch for the file or it is over `limit` bytes (the caller then reads
    it with json.loads, which words the refusal).

    No numpy: ~10 ms instead of ~90 for json.loads and the per-event lists on moe_reduce's
    1.2 MB, 65 536 events (a --waves run has the parser loaded already)."""
    from kerneltrace.analysis.cu_usage import EventColumns

    found = _simd_document(path, others=True, limit=limit)
    if found is None:
        return None
    return {key: EventColumns(*(value.column(column) for column in (0, 1, 4, 5)))
            if isinstance(value, _Rows) else value for key, value in found.items()}


def _simd_document(path: Path, others: bool = False,
                   limit: int = JSON_METADATA_LIMIT) -> dict[str, Any] | None:
    """occupancy.json by pysimdjson when every SE holds regular rows of >= 6 plain integers, else None.

    json.loads builds ~7 Python objects per event (moe_reduce: 1.2 MB, ~8 % of `--waves`); here
    each SE's events leave the parser as one int64 buffer. The shape is certified by the file's
    skeleton (digits and whitespace deleted, as in readers/wavefile/simd.py); anything else
    (pysimdjson missing, negative or non-integer values, ragged rows, duplicated keys, an SE key
    after another key, nested values under another key, an unreadable or invalid file) returns
    None and takes the json.loads path, which alone words problems. Other keys after the SEs
    (rocprofv3 writes "dispatches" and "version"; the summary ignores them) are allowed when
    they hold scalars or flat objects and arrays: the skeleton is then certified up to them;
    `others`: their values are in the result too (plain Python).
    """
    from kerneltrace.readers.wavefile.simd import (
        DIGITS_AND_WHITESPACE,
        plain_value,
        rows_skeleton,
        simd_reader,
    )

    reader = simd_reader()
    if reader is None:
        return None
    try:
        data = read_regular(path, "occupancy.json", limit)
        parser = reader.module.Parser()
        document = parser.parse(data)
        if not isinstance(document, reader.module.Object):
            return None
        keys = list(document.keys())
        digit = [key.isascii() and key.isdigit() for key in keys]
        se_keys = digit.count(True)
        # the SEs first, then other keys (rocprofv3's "dispatches" and "version", which the
        # summary ignores) holding scalars or flat objects and arrays of them
        if len(set(keys)) != len(keys) or any(digit[se_keys:]) or not all(
                _flat(reader.module, document.get(key)) for key in keys[se_keys:]):
            return None
        found: dict[str, Any] = {}
        skeleton = [b"{"]
        for key in keys[:se_keys]:
            events = document.get(key)
            if not isinstance(events, reader.module.Array):
                return None
            count = len(events)
            values = memoryview(events.as_buffer(of_type="i")).cast("q")  # int64, flat
            del events
            if count == 0 or len(values) % count or len(values) // count < 6:
                return None
            width = len(values) // count
            skeleton += [b'"":', rows_skeleton(count, width), b","]
            found[key] = _Rows(values, count, width)
        if others:  # flat values (certified above): what json.loads gives for them
            for key in keys[se_keys:]:
                found[key] = plain_value(reader.module, document.get(key))
        skeleton[-1:] = [b"}"] if se_keys else [b"{}"]
        expected = b"".join(skeleton)
        translated = data.translate(None, DIGITS_AND_WHITESPACE)
        if se_keys < len(keys):  # the SEs' part, then the next key's opening quote
            expected = expected[:-1] + b',"' if se_keys else b'{"'
            if not translated.startswith(expected):
                return None
        elif translated != expected:
            return None
        del document
        return found
    except Exception:  # any refusal defers to the authoritative json.loads path
        return None
