"""Fast reader for per-wave ATT files (`se*_sm*_sl*_wv*.json`): public API, integer arrays parsed by numpy.

A wave file is a small JSON object around three big integer arrays (`instructions`, `timeline`,
`waitcnt`). `json.loads` builds one Python object per integer and runs at ~20-45 MB/s here; this
reader parses the digits with numpy's C text parser, one call per batch of files (thousands of
tiny wave files share it). The integer count each array must yield is known from its brackets
beforehand, which validates the shape. The work is split by path:
* simd.py           first choice when pysimdjson is importable: one file at a time, SIMD parse,
                      arrays exported as int64 buffers, shapes certified by the digit-free
                      skeleton; whatever it cannot certify falls through to the paths below
                      (which alone decide errors). Off: simd=False or KERNELTRACE_WAVE_PARSER=numpy
* fast.py           compact V3 files (what rocprofv3 writes): the whole batch at once
* spans.py          everything else: array spans located per file, parsed per batch
* json_fallback.py  json.loads fallback for unusual but valid layouts
* record.py         the WaveFile record, scalar validation, `invalid` errors

Error policy: a file that is not valid JSON (truncated, corrupt) or whose arrays have the wrong
shape raises `InputError` naming the file. Callers that scan a whole directory
(`kerneltrace.analysis.waves.analyze`) catch it, skip the file and record a warning, so one bad file
never hides the others; the skipped file then also shows up in the consistency check.
When the fast path meets an unexpected but valid layout (floats, negative numbers, odd
nesting) it falls back to `json.loads` for that one file instead of guessing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.regular import read_regular
from kerneltrace.readers.wavefile.fast import parse_compact_batch
from kerneltrace.readers.wavefile.record import WAVE_FILE_RE, WaveFile
from kerneltrace.readers.wavefile.simd import Certified, SimdReader, simd_reader
from kerneltrace.readers.wavefile.simd import finish_batch as finish_simd_batch
from kerneltrace.readers.wavefile.spans import finish_batch, prepare

__all__ = [
    "CATEGORY_JUMP", "CATEGORY_NEXT", "INSTRUCTION_FIELDS", "STATE_NAMES", "TIMELINE_FIELDS",
    "WAVE_FILE_GLOB", "WAVE_FILE_RE", "WaveFile", "iter_wave_files", "parse_wave_bytes",
    "read_wave_file", "wave_files",
]

WAVE_FILE_GLOB = "se*_sm*_sl*_wv*.json"

# Column layout of the arrays (rocprof-formats.md §8.9).
INSTRUCTION_FIELDS = ("time", "category", "stall", "duration", "line")
TIMELINE_FIELDS = ("state", "duration")
# Decoder instruction categories and wave states used by the analyses.
CATEGORY_JUMP = 7  # taken branch
CATEGORY_NEXT = 8  # branch not taken
STATE_NAMES = {0: "empty", 1: "idle", 2: "exec", 3: "wait", 4: "stall"}


def wave_files(dispatch_dir: Path) -> list[Path]:
    """The wave files of a dispatch dir, sorted by (se, simd, slot, wv) numerically."""
    directory = Path(dispatch_dir)
    found = []
    try:
        names = os.listdir(directory)
    except OSError:  # not a directory, or unreadable: no wave files (as glob() gave)
        return []
    for name in names:  # one regex per name (Path.glob's own matching costs ~10 µs a file)
        match = WAVE_FILE_RE.match(name)
        if match:
            found.append((tuple(map(int, match.groups())), name))
    found.sort()
    return [directory / name for _, name in found]


def iter_wave_files(paths: list[Path], batch_bytes: int = 4 << 20,
                    simd: bool | None = None) -> Iterator[WaveFile | InputError]:
    """Read files in order, yielding a WaveFile or the InputError of each (never raising).

    With pysimdjson (`simd` None = when importable and not disabled by the environment, False =
    never) each file is first offered to the SIMD path. Files are finished in batches of about
    `batch_bytes` so that thousands of tiny wave files share a few numpy calls (both paths);
    memory stays bounded by max(batch_bytes, largest file).
    """
    reader = _simd(simd)
    batch: list[tuple[Path, bytes | InputError]] = []
    certified: list[Certified | None] = []  # per batch entry: None = the numpy path decides
    batch_size = 0
    for path in paths:
        path = path if isinstance(path, Path) else Path(path)
        data = _read(path)
        batch.append((path, data))
        if isinstance(data, bytes):
            certified.append(reader.certify(data, path) if reader is not None else None)
            batch_size += len(data)
        else:
            certified.append(None)
        if batch_size >= batch_bytes:
            yield from _finish(batch, certified)
            batch, certified, batch_size = [], [], 0
    yield from _finish(batch, certified)


def _finish(batch: list[tuple[Path, bytes | InputError]],
            certified: list[Certified | None]) -> Iterator[WaveFile | InputError]:
    """Results in file order: the certified files by the SIMD batch pass, the rest by numpy."""
    simd_results = iter(finish_simd_batch([item for item in certified if item is not None]))
    declined = [entry for entry, item in zip(batch, certified, strict=True) if item is None]
    numpy_results = _parse_batch(declined)
    for item in certified:
        yield next(simd_results) if item is not None else next(numpy_results)


def _simd(simd: bool | None) -> SimdReader | None:
    return None if simd is False else simd_reader()


def _read(path: Path) -> bytes | InputError:
    try:
        return read_regular(path, "wave file", None, "check the file exists and is readable")
    except InputError as err:
        return err


def _parse_batch(batch: list[tuple[Path, bytes | InputError]]) -> Iterator[WaveFile | InputError]:
    """The whole-batch path for compact V3 files, else the per-file path (same results)."""
    if not batch:
        return
    fast = parse_compact_batch(batch)
    if fast is not None:
        yield from fast
        return
    items = [data if isinstance(data, InputError) else prepare(data, path)
             for path, data in batch]
    yield from finish_batch(items)


def read_wave_file(path: Path, simd: bool | None = None) -> WaveFile:
    """Read and parse one wave file; raises InputError for unreadable or invalid files."""
    result = next(iter_wave_files([Path(path)], simd=simd))
    if isinstance(result, InputError):
        raise result
    return result


def parse_wave_bytes(data: bytes, path: Path, simd: bool | None = None) -> WaveFile:
    """Parse the bytes of one wave file (see module docstring for the method)."""
    reader = _simd(simd)
    wave = reader.parse(data, Path(path)) if reader is not None else None
    if isinstance(wave, InputError):
        raise wave
    if wave is not None:
        return wave
    item = prepare(data, Path(path))
    result = next(finish_batch([item]))
    if isinstance(result, InputError):
        raise result
    return result
