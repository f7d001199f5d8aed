"""The per-user cache of kernel_trace lookups by kernel name: one small JSON file per CSV under the user's cache dir.

A discovery run's kernel_trace CSV (~10^4 rows, megabytes) is read again by every hotspot run of
every dispatch of its bundle, to find the rows naming one kernel; that read costs more than the
rest of a run. What a lookup by name returns (the first row's cells, how many rows name the
kernel, whether their resources differ, or that none does) depends only on the file's bytes, the
names asked and the code that reads them, so it is kept here and reused while all of those stay:

* Where: ``$XDG_CACHE_HOME/kerneltrace/kernel-trace-lookups/`` (an absolute XDG_CACHE_HOME only,
  as the XDG spec says), else ``~/.cache/kerneltrace/…``; never beside the input. One file per
  CSV, named by its device and inode; written by `kerneltrace.atomic` (atomic replace, the umask's
  mode, no symlink another user planted followed).
* Valid while: the CSV's real path (links resolved), device, inode, size, mtime_ns and ctime_ns
  are the ones stored (ctime changes on every write and chmod and cannot be set back by a user),
  and the code that computed it is the same (size and mtime_ns of the reader modules, the interpreter version,
  csv.field_size_limit()). Anything else, an unreadable or malformed cache file included, is a miss.
* Only successful reads are stored: a CSV that fails to read is read (and warned about) every run.
  Only CSVs of 256 KiB or more (smaller ones read in about a millisecond), and only once the CSV
  has been left alone for a few seconds (its ctime at least ``SETTLED_NS`` old): file timestamps
  tick coarsely (a jiffy, or seconds on some filesystems), so a file rewritten in place with the
  same size within one tick of its last write keeps its stat; one written that long ago cannot
  change again without a new ctime.
* ``KERNELTRACE_CACHE=off`` turns it off (nothing read, nothing written); any failure to write it
  is silent, as a cache is never a reason for a run to fail.
"""

from __future__ import annotations

import csv
import json
import os
import stat
import sys
import time

from kerneltrace import atomic
from kerneltrace.errors import InputError
from kerneltrace.readers import csvlines, csvs
from kerneltrace.readers.regular import read_regular

FORMAT = 1  # bump when what a stored lookup means changes
_MAX_BYTES = 1 << 20  # a cache file larger than this is not ours: a miss
_MAX_LOOKUPS = 32  # distinct name queries kept per CSV (the newest)
MIN_BYTES = 256 << 10  # smaller CSVs are read every time
SETTLED_NS = 5 * 10**9  # a CSV changed more recently than this is not stored
MISS = object()  # what `find` returns when nothing valid is stored


def cache_dir() -> str | None:
    """The folder lookups are kept in, or None when the cache is off or no home is known."""
    environ = os.environ
    if environ.get("KERNELTRACE_CACHE", "").lower() in ("off", "0", "no", "false"):
        return None
    base = environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "kerneltrace", "kernel-trace-lookups")


def _code_stamp(matcher: str) -> list:
    """What identifies the code a lookup was computed by (a changed reader is a miss); ``matcher``
    is the file of the module whose rules pick the rows (kerneltrace.model.metadata)."""
    stamp: list = [FORMAT, sys.version, csv.field_size_limit()]
    for source in (csvs.__file__, csvlines.__file__, __file__, matcher):
        info = os.stat(source)
        stamp += [info.st_size, info.st_mtime_ns]
    return stamp


def _identity(path: str, info: os.stat_result) -> list:
    return [os.path.realpath(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _file_of(folder: str, info: os.stat_result) -> str:
    return os.path.join(folder, f"{info.st_dev:x}-{info.st_ino:x}.json")


def _stored(folder: str, path: str, info: os.stat_result, code: list) -> dict | None:
    """The lookups stored for this CSV version and this code, or None."""
    try:
        record = json.loads(read_regular(_file_of(folder, info), "cache", _MAX_BYTES))
    except (InputError, ValueError):
        return None
    if (not isinstance(record, dict) or record.get("csv") != _identity(path, info)
            or record.get("code") != code or not isinstance(record.get("lookups"), dict)):
        return None
    return record


def query_key(names: set[str], kernel_filter: str | None) -> str:
    return json.dumps([sorted(names), kernel_filter])


def _valid(result: object) -> bool:
    """A stored lookup: None (no row names the kernel) or [header, cells, rows, mixed]."""
    if result is None:
        return True
    if not (isinstance(result, list) and len(result) == 4):
        return False
    header, cells, rows, mixed = result
    return (isinstance(header, list) and all(isinstance(h, str) for h in header)
            and isinstance(cells, list) and all(isinstance(c, str) for c in cells)
            and type(rows) is int and rows > 0 and isinstance(mixed, bool))


def find(path: str, info: os.stat_result, key: str, matcher: str) -> object:
    """The stored lookup ``key`` of the CSV ``path`` (whose os.stat is ``info``), else MISS."""
    folder = cache_dir() if info.st_size >= MIN_BYTES else None
    if folder is None or not stat.S_ISREG(info.st_mode):
        return MISS
    try:
        record = _stored(folder, path, info, _code_stamp(matcher))
    except OSError:
        return MISS
    if record is None:
        return MISS
    result = record["lookups"].get(key, MISS)
    return result if result is MISS or _valid(result) else MISS


def store(path: str, info: os.stat_result, key: str, result: list | None, matcher: str) -> None:
    """Keep lookup ``key``'s result for this CSV version (with the newest others stored for it)."""
    young = time.time_ns() - info.st_ctime_ns < SETTLED_NS
    folder = cache_dir() if info.st_size >= MIN_BYTES and not young else None
    if folder is None:
        return
    try:
        code = _code_stamp(matcher)
        record = _stored(folder, path, info, code)
        lookups = {} if record is None else record["lookups"]
        lookups.pop(key, None)
        lookups[key] = result  # the newest last
        kept = dict(list(lookups.items())[-_MAX_LOOKUPS:])
        data = json.dumps({"csv": _identity(path, info), "code": code, "lookups": kept})
        atomic.write_bytes(_file_of(folder, info), data.encode("utf-8"))
    except Exception:  # a cache is never a reason for a run to fail
        pass
