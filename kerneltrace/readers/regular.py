"""Reading input files safely: regular files only (no FIFO/device/socket hang), bounded sizes, one-line errors."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from kerneltrace.errors import InputError

MIB = 1 << 20
JSON_METADATA_LIMIT = 256 * MIB  # filenames.json, snapshots.json, occupancy.json, stage documents
CSV_LIMIT = 1024 * MIB  # kernel_trace / agent_info / kernel_stats / counter CSVs
SOURCE_LIMIT = 64 * MIB  # one source snapshot

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _read_to_end(fd: int, size: int, limit: int | None) -> bytes:
    """Read until EOF (at most limit + 1 bytes) with os.read: no file object per file, which
    costs about as much as the read itself on the small wave files (thousands per capture)."""
    chunks = []
    remaining = -1 if limit is None else limit + 1
    step = size + 1  # one read for a file that did not grow since fstat, then the EOF read
    while remaining:
        chunk = os.read(fd, step if remaining < 0 else min(step, remaining))
        if not chunk:
            break
        chunks.append(chunk)
        if remaining > 0:
            remaining -= len(chunk)
        step = max(step, 1 << 20)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # b"" for an empty file


class NotRegularFile(InputError):
    """The path is a FIFO, device, socket or directory: an optional input is skipped with a warning."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str | os.PathLike[str], what: str = "file", limit: int | None = None,
                 fix: str = "check the path") -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; InputError otherwise.

    Opened non-blocking, so a FIFO without a writer is refused instead of hanging; a device is
    refused before a byte is read (``/dev/zero`` never ends)."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise InputError(f"{what} not found", where, fix) from None
    except OSError as err:  # a socket cannot be opened (ENXIO); permissions
        raise InputError(f"cannot read {what}: {err.strerror}", where, fix) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{what} is {_kind(info.st_mode)}, not a regular file; refusing to read it",
                                 where, "pass a regular file")
        if limit is not None and info.st_size > limit:
            raise InputError(f"{what} is {info.st_size / MIB:.0f} MiB, more than such a file can "
                             f"legitimately hold ({limit // MIB} MiB)", where, fix)
        os.set_blocking(fd, True)
        data = _read_to_end(fd, info.st_size, limit)
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror}", where, fix) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if limit is not None and len(data) > limit:
        raise InputError(f"{what} grew beyond {limit // MIB} MiB while being read", where, fix)
    return data


def parse_json(raw: bytes, what: str, where: str, fix: str) -> object:
    """json.loads with one-line errors: not UTF-8, empty, invalid, nested too deeply, huge integers."""
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8 JSON", where, fix) from None
    except json.JSONDecodeError as err:
        problem = ("is empty" if not raw.strip()
                   else f"is not valid JSON (truncated?): {err.msg} at line {err.lineno} column {err.colno}")
        raise InputError(f"{what} {problem}", where, fix) from None
    except RecursionError:
        # json's C parser recurses per nesting level: a hostile file must not end in a traceback
        raise InputError(f"{what} is nested too deeply", where, fix) from None
    except ValueError as err:  # e.g. an integer literal over Python's 4300-digit limit
        raise InputError(f"{what} is not usable JSON: {str(err).splitlines()[0]}", where, fix) from None


def read_json(path: str | os.PathLike[str], what: str = "file", limit: int | None = JSON_METADATA_LIMIT,
              fix: str = "check the path") -> object:
    """A regular JSON file, bounded, parsed, with one-line errors for every failure."""
    return parse_json(read_regular(path, what, limit, fix), what, str(path), fix)


def optional_json(path: Path, what: str) -> tuple[object | None, str]:
    """An optional JSON file: (document, "") or (None, "<what> not present" / "<what> unreadable: why")."""
    try:
        return read_json(path, what), ""
    except InputError as err:
        if not os.path.lexists(path):
            return None, f"{what} not present"
        return None, f"{what} unreadable: {err.what}"
