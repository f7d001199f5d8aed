"""The per-user cache of kernel_trace lookups by kernel name: one small JSON file per CSV under the user's cache dir.

A discovery run's kernel_trace CSV (~10^4 rows, megabytes) is read again by every hotspot run of
every dispatch of its bundle, to find the rows naming one kernel; that read costs more than the
rest of a run. What a lookup by name returns (the first row's cells, how many rows name the
kernel, whether their resources differ, or that none does) depends only on the file's bytes, the
names asked and the code that reads them, so it is kept here and reused while all of those stay.
Where entries live, what a file's and the code's identity are, the settled-ctime rule and
``KERNELTRACE_CACHE=off``: kerneltrace.filecache (shared with the wave-summary cache). Here:

* ``$XDG_CACHE_HOME/kerneltrace/kernel-trace-lookups/``: one file per CSV, named by its device
  and inode, holding the newest lookups of that CSV version.
* The code: the reader modules (csvs, csvlines, this one, the matcher that picks the rows) and
  csv.field_size_limit().
* Only successful reads are stored: a CSV that fails to read is read (and warned about) every run.
  Only CSVs of 256 KiB or more (smaller ones read in about a millisecond), and only settled ones.
"""

from __future__ import annotations

import csv
import json
import os
import stat

from kerneltrace import filecache
from kerneltrace.readers import csvlines, csvs

FORMAT = 1  # bump when what a stored lookup means changes
_MAX_BYTES = 1 << 20  # a cache file larger than this is not ours: a miss
_MAX_LOOKUPS = 32  # distinct name queries kept per CSV (the newest)
MIN_BYTES = 256 << 10  # smaller CSVs are read every time
MISS = object()  # what `find` returns when nothing valid is stored
KIND = "kernel-trace-lookups"  # the cache folder's name (kerneltrace.filecache)


def cache_dir() -> str | None:
    """The folder lookups are kept in, or None when the cache is off or no home is known."""
    return filecache.cache_dir(KIND)


def _code_stamp(matcher: str) -> list:
    """What identifies the code a lookup was computed by (a changed reader is a miss); ``matcher``
    is the file of the module whose rules pick the rows (kerneltrace.model.metadata)."""
    return filecache.code_stamp([csvs.__file__, csvlines.__file__, __file__, matcher], FORMAT,
                                csv.field_size_limit())


def _identity(path: str, info: os.stat_result) -> list:
    return filecache.identity(path, info)


def _file_of(folder: str, info: os.stat_result) -> str:
    return os.path.join(folder, f"{info.st_dev:x}-{info.st_ino:x}.json")


def _stored(folder: str, path: str, info: os.stat_result, code: list) -> dict | None:
    """The lookups stored for this CSV version and this code, or None."""
    record = filecache.load(_file_of(folder, info), _MAX_BYTES)
    if (record is None or record.get("csv") != _identity(path, info)
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
    folder = cache_dir() if info.st_size >= MIN_BYTES and filecache.settled([info]) else None
    if folder is None:
        return
    try:
        code = _code_stamp(matcher)
        record = _stored(folder, path, info, code)
        lookups = {} if record is None else record["lookups"]
        lookups.pop(key, None)
        lookups[key] = result  # the newest last
        kept = dict(list(lookups.items())[-_MAX_LOOKUPS:])
    except Exception:  # a cache is never a reason for a run to fail
        return
    filecache.save(_file_of(folder, info), {"csv": _identity(path, info), "code": code, "lookups": kept})
