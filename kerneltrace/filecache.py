"""The per-user cache of results that are pure functions of some files: where entries live, what makes one valid, how they are read and written.

A result kept here is reused while every file it was computed from and the code that computed it
stay the same (kerneltrace.model.lookupcache: kernel_trace lookups by name;
kerneltrace.analysis.waves.summary_cache: the wave-file summary of a dispatch dir):

* Where: ``$XDG_CACHE_HOME/kerneltrace/KIND/`` (an absolute XDG_CACHE_HOME only, as the XDG spec
  says), else ``~/.cache/kerneltrace/KIND/``; never beside the inputs. Written by
  `kerneltrace.atomic` (atomic replace, the umask's mode, no symlink another user planted
  followed); read only when a regular file of at most the caller's limit.
* A file's identity: its real path (links resolved), device, inode, size, mtime_ns and ctime_ns
  (ctime changes on every write and chmod and cannot be set back by a user). The code's: the
  interpreter version plus size and mtime_ns of the source files the caller names.
* Settled: a result is stored only when each input's ctime is at least ``SETTLED_NS`` old. File
  timestamps tick coarsely (a jiffy, or seconds on some filesystems), so a file rewritten in place
  with the same size within one tick of its last write keeps its stat; one written that long ago
  cannot change again without a new ctime.
* ``KERNELTRACE_CACHE=off`` (or 0, no, false) turns every such cache off (nothing read, nothing
  written); an unreadable or malformed entry is a miss, and any failure to write one is silent:
  a cache is never a reason for a run to fail.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time

from kerneltrace import atomic

SETTLED_NS = 5 * 10**9  # an input changed more recently than this: the result is not stored
OFF_VALUES = ("off", "0", "no", "false")


def cache_dir(kind: str) -> str | None:
    """The folder entries of ``kind`` are kept in, or None when caching is off or no home is known."""
    environ = os.environ
    if environ.get("KERNELTRACE_CACHE", "").lower() in OFF_VALUES:
        return None
    base = environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "kerneltrace", kind)


def version(info: os.stat_result) -> list:
    """What identifies one version of a file (its os.stat is ``info``), its path aside."""
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def identity(path: str, info: os.stat_result) -> list:
    """What identifies one version of the file ``path`` (its os.stat is ``info``)."""
    return [os.path.realpath(path), *version(info)]


def code_stamp(sources: list[str], *extra: object, infos: list | None = None) -> list:
    """What identifies the code a result was computed by: the interpreter, ``extra`` and the size
    and mtime_ns of each source file (raises OSError when one is gone); each file's os.stat is
    appended to ``infos`` when given (for `settled`: a module edited during a run)."""
    stamp: list = [sys.version, *extra]
    for source in sources:
        info = os.stat(source)
        stamp += [info.st_size, info.st_mtime_ns]
        if infos is not None:
            infos.append(info)
    return stamp


def settled(infos: list[os.stat_result]) -> bool:
    """True when no file of ``infos`` changed in the last SETTLED_NS (module docstring)."""
    now = time.time_ns()
    return all(now - info.st_ctime_ns >= SETTLED_NS for info in infos)


def load(path: str, max_bytes: int) -> dict | None:
    """The JSON object stored at ``path``, or None (absent, not a regular file, larger than
    ``max_bytes``, unreadable, not a JSON object)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            return None
        record = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return record if isinstance(record, dict) else None


def save(path: str, record: dict) -> None:
    """Write ``record`` to ``path`` as JSON (atomic replace); any failure is silent."""
    try:
        atomic.write_bytes(path, json.dumps(record).encode("utf-8"))
    except Exception:  # a cache is never a reason for a run to fail
        pass


def prune(folder: str, keep: int, suffix: str = ".json") -> None:
    """Delete all but the ``keep`` most recently written ``*suffix`` entries of ``folder``
    (a cache with one entry per input, such as one per dispatch dir, would otherwise only grow);
    any failure is silent."""
    try:
        with os.scandir(folder) as entries:
            found = [(entry.stat(follow_symlinks=False).st_mtime_ns, entry.path) for entry in entries
                     if entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False)]
        if len(found) <= keep:
            return
        found.sort()
        for _, path in found[:len(found) - keep]:
            os.unlink(path)
    except OSError:
        pass
