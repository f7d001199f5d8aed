"""Wave-file reader (`se*_sm*_sl*_wv*.json`): public API, two fast paths and one fallback.

A wave file is a small JSON object around three big integer arrays (`instructions`, `timeline`,
`waitcnt`); `json.loads` builds one Python object per integer and runs at ~20-55 MB/s here.
Each file takes one of three paths, and all give identical WaveFile records on a valid file:
* batch path (batch.py): the compact files the decoders write, a batch at a time: each file is
  cut into its arrays and a small head (json.loads), and one simdjson parse exports the arrays
  of the whole batch; it never decides an error either.
* fast path (simd.py): pysimdjson parses the file and exports the arrays as int64 buffers; the
  shapes are certified by the file's digit-free skeleton, and the waitcnt lists of a whole batch
  of files (~4 MB) are split by a few numpy calls. It vouches for the layouts the decoders write
  (rocprofv3 V3 and rocprofv2 legacy, compact or pretty-printed, extra keys) and never decides
  an error: whatever it cannot certify goes to the fallback.
* fallback (json_fallback.py): json.loads + numpy for everything else (pysimdjson missing,
  negative numbers, integral floats, null arrays, escaped or duplicated keys...), and the only
  judge of bad files. `KERNELTRACE_WAVE_PARSER=json` (or `simd=False`) forces it for every file.
record.py holds the WaveFile record, scalar validation and the `invalid` errors.

Error policy: a file that is not valid JSON (truncated, corrupt) or whose arrays have the wrong
shape or non-integer values raises `InputError` naming the file. Callers that scan a whole
directory (`kerneltrace.analysis.waves.analyze`) catch it, skip the file and record a warning,
so one bad file never hides the others; the skipped file then also shows up in the consistency
check.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.regular import read_regular
from kerneltrace.readers.wavefile.batch import read_batch
from kerneltrace.readers.wavefile.json_fallback import parse_or_error
from kerneltrace.readers.wavefile.names import WAVE_FILE_GLOB, WAVE_FILE_RE
from kerneltrace.readers.wavefile.record import WaveFile
from kerneltrace.readers.wavefile.simd import Certified, SimdReader, finish_batch, simd_reader

__all__ = [
    "CATEGORY_JUMP", "CATEGORY_NEXT", "INSTRUCTION_FIELDS", "STATE_NAMES", "TIMELINE_FIELDS",
    "PARSER_ENV", "WAVE_FILE_GLOB", "WAVE_FILE_RE", "WaveFile", "iter_wave_files",
    "parse_wave_bytes", "read_wave_file", "wave_files",
]

# Environment switch for the whole process (tests, benchmarks, a platform with a broken wheel).
PARSER_ENV = "KERNELTRACE_WAVE_PARSER"  # "json": every file takes the fallback
BATCH_FILE_BYTES = 64 << 10  # files up to this size go to the batch path (batch.py)


# Column layout of the arrays (docs/rocprof-outputs.md §8.9).
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

    Files are read in batches of about `batch_bytes` (memory stays bounded by
    max(batch_bytes, largest file)). With the fast paths on (`simd` None = when pysimdjson is
    importable and PARSER_ENV is not "json", False = never), a batch's files of up to
    BATCH_FILE_BYTES go first to the batch path (batch.py: one parse for all their arrays);
    each file it does not vouch
    for is offered to the per-file fast path (simd.py), and what that does not certify, or
    refuses late, is parsed by the fallback (json_fallback.py), which alone words errors.
    """
    reader = _simd(simd)
    pending: list[tuple[Path, bytes] | InputError] = []
    pending_bytes = 0
    for path in paths:
        path = path if isinstance(path, Path) else Path(path)
        data = _read(path)
        if isinstance(data, InputError):
            pending.append(data)
            continue
        pending.append((path, data))
        pending_bytes += len(data)
        if pending_bytes >= batch_bytes:
            yield from _finish(pending, reader)
            pending, pending_bytes = [], 0
    yield from _finish(pending, reader)


def _finish(pending: list[tuple[Path, bytes] | InputError],
            reader: SimdReader | None) -> Iterator[WaveFile | InputError]:
    """Results in file order: the batch path, then per file the simd path, then the fallback."""
    files = [item for item in pending if not isinstance(item, InputError)]
    if reader is None:
        waves: list[WaveFile | InputError | None] = [parse_or_error(data, path)
                                                     for path, data in files]
    else:
        # large files gain nothing from sharing a parse (their per-file Python work is small
        # beside the parse) and would be cut and copied once more: the per-file path reads them
        small = [index for index, (_, data) in enumerate(files) if len(data) <= BATCH_FILE_BYTES]
        waves = [None] * len(files)
        for index, wave in zip(small, read_batch([files[i] for i in small], reader), strict=True):
            waves[index] = wave
        left = [index for index, wave in enumerate(waves) if wave is None]
        certified: list[tuple[int, Certified]] = []
        for index in left:
            path, data = files[index]
            one = reader.certify(data, path)
            if one is None:
                waves[index] = parse_or_error(data, path)
            else:
                certified.append((index, one))
        finished = finish_batch([one for _, one in certified])
        for (index, one), wave in zip(certified, finished, strict=True):
            waves[index] = wave if wave is not None else parse_or_error(one.data, one.path)
    results = iter(waves)
    for item in pending:
        yield item if isinstance(item, InputError) else next(results)


def _simd(simd: bool | None) -> SimdReader | None:
    if simd is False or os.environ.get(PARSER_ENV, "").strip().lower() == "json":
        return None
    return simd_reader()


def _read(path: Path) -> bytes | InputError:
    try:
        return read_regular(path, "wave file", None, "check the file exists and is readable")
    except InputError as err:
        return err


def read_wave_file(path: Path, simd: bool | None = None) -> WaveFile:
    """Read and parse one wave file; raises InputError for unreadable or invalid files."""
    result = next(iter_wave_files([Path(path)], simd=simd))
    if isinstance(result, InputError):
        raise result
    return result


def parse_wave_bytes(data: bytes, path: Path, simd: bool | None = None) -> WaveFile:
    """Parse the bytes of one wave file: the fast path, else the fallback (module docstring)."""
    reader = _simd(simd)
    result = reader.parse(data, Path(path)) if reader is not None else None
    if result is None:
        result = parse_or_error(data, Path(path))
    if isinstance(result, InputError):
        raise result
    return result
