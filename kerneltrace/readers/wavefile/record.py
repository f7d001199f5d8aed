"""The WaveFile record and its validation: scalar checks, `invalid` errors, shared empty arrays."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.errors import InputError
from kerneltrace.readers.codejson import CodeFormat
from kerneltrace.readers.wavefile.names import WAVE_FILE_RE
from kerneltrace.records import field, record

if TYPE_CHECKING:  # numpy is imported lazily at run time (import-time budget of the CLI)
    import numpy as np


# A slot record, not a frozen dataclass: one is built per file (moe_reduce: 4112), and the
# dataclass's 17 object.__setattr__ calls were ~10 % of reading such a capture.
@record(frozen=True, slots=True)
class WaveFile:
    """One traced wave: scalars plus the three integer arrays as int64 numpy arrays."""

    path: Path
    layout: str  # CodeFormat.V3 | CodeFormat.LEGACY (rocprofv2: no `cu`, `line` = code-array position)
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
    parser: str  # which path read it: "simd" (fast path) | "json" (fallback)
    extra: dict[str, Any] = field(default_factory=dict)  # other keys (wave.info, dispatcher…)

    @property
    def duration(self) -> int:
        return self.end - self.begin


def invalid(path: Path, what: str) -> InputError:
    """The InputError of a damaged wave file (the file is skipped and reported by callers)."""
    return InputError(f"invalid wave file: {what}", str(path),
                      "re-run the ATT decode, or delete the damaged wave file "
                      "(it will be reported as missing)")


def _int_field(wave: dict[str, Any], key: str, path: Path, default: int | None = None) -> int:
    value = wave.get(key, default)
    if type(value) is int:  # what json gives; the general test below for anything else
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(path, f"`wave.{key}` must be an integer (got {value!r})")
    return value


_EMPTY: dict[str, Any] = {}


def empty_arrays() -> dict[str, Any]:
    """Shared read-only empty arrays for absent keys (saves allocations on tiny files)."""
    if not _EMPTY:
        import numpy as np

        arrays = {"instructions": np.zeros((0, 5), np.int64), "timeline": np.zeros((0, 2), np.int64),
                  "waitcnt": (np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, 2), np.int64))}
        for value in (arrays["instructions"], arrays["timeline"], *arrays["waitcnt"]):
            value.flags.writeable = False
        _EMPTY.update(arrays)
    return _EMPTY


def build_wave(document: Any, arrays: dict[str, Any], path: Path, nbytes: int,
               parser: str) -> WaveFile:
    """A WaveFile from the parsed document (scalars validated) and its parsed arrays."""
    wave = document.get("wave") if isinstance(document, dict) else None
    if not isinstance(wave, dict):
        raise invalid(path, "no `wave` object")
    legacy = "cu" not in wave or "loop_count" in document or document.get("name") == "SE"
    match = WAVE_FILE_RE.match(path.name)
    empty = empty_arrays()
    lines, offsets, producers = arrays.get("waitcnt") or empty["waitcnt"]
    extra = {key: value for key, value in wave.items() if key not in _NOT_EXTRA}
    if match:
        se, simd, slot = int(match.group(1)), int(match.group(2)), int(match.group(3))
    else:
        se = simd = slot = None
    return WaveFile(
        path,
        CodeFormat.LEGACY if legacy else CodeFormat.V3,
        se,
        _int_field(wave, "simd", path, simd),
        _int_field(wave, "slot", path, slot),
        _int_field(wave, "id", path, 0),
        _int_field(wave, "cu", path) if "cu" in wave else None,
        _int_field(wave, "begin", path),
        _int_field(wave, "end", path),
        arrays.get("instructions", empty["instructions"]),
        arrays.get("timeline", empty["timeline"]),
        lines,
        offsets,
        producers,
        nbytes,
        parser,
        extra,
    )


# keys of `wave` that are not `extra`: the scalars above and the three arrays
_NOT_EXTRA = frozenset(("begin", "end", "cu", "id", "simd", "slot", "instructions", "timeline",
                        "waitcnt"))
