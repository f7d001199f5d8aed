"""The per-user cache of a dispatch dir's `waves` object: a repeat `--waves` run stats the files it was computed from instead of reading them.

The `waves` object (analyze.analyze_waves) is a pure function of the files it reads: the wave files
(`se*_sm*_sl*_wv*.json`), code.json (the rows the sums are checked against), filenames.json,
occupancy.json and realtime.json, plus the structure thresholds and the code. The second and every
later run on the same capture (an agent calling the CLI again) finds it here: a directory listing
and one os.stat per file, no numpy or pysimdjson import, not a byte of the wave files read.

* Entries: ``$XDG_CACHE_HOME/kerneltrace/wave-summaries/<hash of the dir's real path and the
  options>.json`` (kerneltrace.filecache: where, the files' identity, atomic writes, the
  settled-ctime rule, ``KERNELTRACE_CACHE=off``); the MAX_ENTRIES most recently stored are kept.
* Valid while: the same wave files are present (one added or removed is a miss), each of them and
  each of the four other files has the identity stored (or is still absent), the thresholds and
  ``KERNELTRACE_WAVE_PARSER`` are the same, and so is the code: the interpreter, the size and
  mtime_ns of every module of the package, of numpy's and of pysimdjson's.
* Stored only when every input is a regular file and had settled (and so had every module of
  the code) before the analysis started, and the object survives a JSON round trip unchanged
  (types included: a tuple or an int key would come back otherwise). Anything else is computed
  every run, as without the cache.
"""

from __future__ import annotations

import json
import os
import stat
import zlib

from kerneltrace import filecache
from kerneltrace.readers.wavefile.names import WAVE_FILE_RE

TYPE_CHECKING = False  # typing's flag without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

FORMAT = 1  # bump when what a stored summary means changes
KIND = "wave-summaries"
OTHER_INPUTS = ("code.json", "filenames.json", "occupancy.json", "realtime.json")
PARSER_ENV = "KERNELTRACE_WAVE_PARSER"  # kerneltrace.readers.wavefile.reader's switch
LIBRARIES = ("numpy", "simdjson")
_MAX_BYTES = 64 << 20  # a larger entry is not ours: a miss
MAX_ENTRIES = 256  # dispatch dirs kept (the most recently stored; entries are 30-500 KB)
PACKAGE = os.path.dirname(os.path.realpath(filecache.__file__))


class Uncacheable(Exception):
    """An input the cache cannot vouch for (not a regular file, unlistable dir)."""


def _inputs(directory: Path) -> tuple[list, list[os.stat_result]]:
    """(identity of every input, their stats); raises Uncacheable or OSError.

    4112 wave files (moe_reduce) cost ~15 ms of os.stat: the loop does little else."""
    real = os.path.realpath(directory)
    match = WAVE_FILE_RE.match
    with os.scandir(directory) as entries:
        waves = sorted((entry.name, entry.is_symlink()) for entry in entries if match(entry.name))
    identities: list = [real]
    infos: list[os.stat_result] = []
    base = os.path.join(directory, "")
    regular, version = stat.S_ISREG, filecache.version
    for name, link in waves:
        path = base + name
        info = os.stat(path)
        if not regular(info.st_mode):
            raise Uncacheable(path)
        # the real path is the dir's + name unless the entry is a link
        identities.append([name, os.path.realpath(path) if link else None, *version(info)])
        infos.append(info)
    for name in OTHER_INPUTS:
        path = base + name
        try:
            info = os.stat(path)
        except FileNotFoundError:
            identities.append([name, None])  # absent: a file appearing there is a miss
            continue
        if not regular(info.st_mode):
            raise Uncacheable(path)
        identities.append([name, os.path.realpath(path) if os.path.islink(path) else None, *version(info)])
        infos.append(info)
    return identities, infos


def _package_files() -> list[str]:
    found = []
    pending = [PACKAGE]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    found.append(entry.path)
    return sorted(found)


def _library_files() -> list[str | None]:
    """numpy's and pysimdjson's package files, found without importing them (None: absent)."""
    from importlib.machinery import PathFinder

    files: list[str | None] = []
    for name in LIBRARIES:
        spec = PathFinder.find_spec(name)
        files.append(spec.origin if spec is not None else None)
    return files


def code_stamp(infos: list | None = None) -> list:
    """What identifies the code a summary was computed by (raises OSError when a file is gone);
    the files' stats are appended to ``infos`` when given."""
    libraries = _library_files()
    return filecache.code_stamp([*_package_files(), *(path for path in libraries if path)], FORMAT,
                                libraries, infos=infos)


def _same(a: object, b: object) -> bool:
    """Equal with the same types throughout (a JSON round trip keeps only lists, str keys...)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and type(k) is str and _same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _entry(folder: str, directory: Path, options: object) -> tuple[str, list]:
    key = [os.path.realpath(directory), options, os.environ.get(PARSER_ENV, "")]
    # a name, not a proof: the entry holds the key itself (hashlib's import costs ~8 ms a run)
    text = json.dumps(key).encode("utf-8")
    return os.path.join(folder, f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}.json"), key


def cached_summary(directory: Path, compute: Callable[[], dict], options: object = None) -> dict:
    """The `waves` object of ``directory``: the stored one when valid, else ``compute()`` (stored
    when it may be); ``options``: JSON values of the settings it depends on (the thresholds)."""
    folder = filecache.cache_dir(KIND)
    if folder is None:
        return compute()
    try:
        entry, key = _entry(folder, directory, options)
        identities, infos = _inputs(directory)
        code = code_stamp(infos)
    except (OSError, Uncacheable, TypeError, ValueError):
        return compute()
    record = filecache.load(entry, _MAX_BYTES)
    if (record is not None and record.get("key") == key and record.get("code") == code
            and record.get("inputs") == identities and isinstance(record.get("waves"), dict)):
        return record["waves"]
    waves = compute()
    # Stats taken before the analysis and settled then: a file written during it has a new
    # ctime by now, so the entry (keyed by the old one) is never served for it; no second stat.
    if not filecache.settled(infos):
        return waves
    try:
        kept = _same(json.loads(json.dumps(waves, allow_nan=False)), waves)
    except (TypeError, ValueError, RecursionError):
        return waves
    if kept:
        filecache.save(entry, {"key": key, "code": code, "inputs": identities, "waves": waves})
        filecache.prune(folder, MAX_ENTRIES)
    return waves
