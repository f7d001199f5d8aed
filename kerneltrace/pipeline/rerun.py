"""What decides re-runs: the files a dispatch job reads, cheap (size, mtime) signatures, stable ids.

Snakemake re-runs a job when an input is newer than its outputs, when the set of its inputs
changed, or when a param changed (its default ``--rerun-triggers``). The pipeline declares every
file of a dispatch dir (and the CSVs found for it) as inputs of its hotspots job, and passes a
signature of those files — and, for the dispatch list, of the searched tree — as a param, so that
a file replaced by an OLDER copy (``cp -p``, ``rsync -a``) is noticed too. Signatures only stat
files (no content is read); they change exactly when a size, an mtime or a name changes.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from kerneltrace.model.metadata import (
    AGENT_INFO,
    BUNDLE_LEVELS,
    COUNTERS,
    KERNEL_TRACE,
    bundle_folders,
)
from kerneltrace.model.naming import DISPATCH_RE

# Files whose presence decides which CSVs the dispatch list attaches to a dispatch dir
# (kerneltrace/model/metadata.py looks them up in its capture bundle: up to BUNDLE_LEVELS above).
METADATA_PATTERNS = KERNEL_TRACE + AGENT_INFO + COUNTERS
# the same patterns as one regex over a file's name (inside the searched tree)
METADATA_FILE = re.compile("|".join(fnmatch.translate(pattern.rsplit("/", 1)[-1])
                                    for pattern in METADATA_PATTERNS))
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def dispatch_files(dispatch_dir: Path | str) -> list[str]:
    """Every regular file inside a dispatch dir (recursively, sorted): what its analyses may read."""
    files: list[str] = []
    for dirpath, dirnames, names in os.walk(dispatch_dir):
        dirnames.sort()
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path):
                files.append(path)
    return files


def files_signature(paths: Iterable[str | Path]) -> str:
    """A short hash of (path, size, mtime) of each existing file; missing files count as absent."""
    digest = hashlib.sha1()
    for path in paths:
        try:
            stat = os.stat(path)
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode("utf-8", "replace"))
        except OSError:
            digest.update(f"{path}\0absent\n".encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def _is_dispatch_dir(path: str, names: list[str]) -> bool:
    return bool(DISPATCH_RE.match(os.path.basename(path))) or "code.json" in names


def tree_signature(root: Path | str) -> str:
    """Signature of what the dispatch list of ``root`` depends on (stat only, no file is read).

    Covers: which dispatch dirs exist, the name, size and mtime of each one's code.json (kernel
    name, emptiness), the names of its files (wave-file count), and the names, sizes and mtimes of
    the kernel-trace / agent-info / counter CSVs anywhere in the tree (which ones are attached).
    Changing a wave file or a source copy does not change it: those re-run their dispatch's job
    through its own inputs, not the dispatch list.
    """
    root = os.path.abspath(root)
    lines: list[str] = []
    if not os.path.isdir(root):
        return "absent"
    walk_root = os.path.dirname(root) if _is_dispatch_dir(root, os.listdir(root)) else root
    shallowest = BUNDLE_LEVELS + 1  # depth below walk_root of the highest dispatch dir
    for dirpath, dirnames, names in os.walk(walk_root):
        dirnames.sort()
        if dirpath != walk_root and _is_dispatch_dir(dirpath, names):
            dirnames[:] = []
            if walk_root != root and dirpath != root:
                continue
            depth = os.path.relpath(dirpath, walk_root).count(os.sep) + 1
            shallowest = min(shallowest, depth)
            lines.append(f"D {os.path.relpath(dirpath, walk_root)} {' '.join(sorted(names))}")
            lines.append(_stat_line(os.path.join(dirpath, "code.json"), walk_root))
            continue
        lines += [_stat_line(os.path.join(dirpath, name), walk_root)
                  for name in sorted(names) if METADATA_FILE.search(name)]
    # a dispatch dir `depth` below walk_root looks BUNDLE_LEVELS - depth folders above it
    lines += _above(walk_root, BUNDLE_LEVELS - shallowest)
    return hashlib.sha1("\n".join(lines).encode("utf-8", "replace")).hexdigest()[:16]


def _above(root: str, levels: int) -> list[str]:
    """Metadata CSVs a capture bundle may reach in the ``levels`` folders above ``root``: the
    folders kerneltrace/model/metadata.py searches (``bundle_folders``)."""
    lines: list[str] = []
    came_from = Path(root)
    for folder in list(came_from.parents)[:max(0, levels)]:
        for place in bundle_folders(folder, came_from):
            for pattern in METADATA_PATTERNS:
                lines += [_stat_line(str(path), "/") for path in sorted(place.glob(pattern))]
        came_from = folder
    return lines


def _stat_line(path: str, root: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return f"F {os.path.relpath(path, root)} absent"
    return f"F {os.path.relpath(path, root)} {stat.st_size} {stat.st_mtime_ns}"


def stable_ids(paths: list[Path], root: Path) -> list[str]:
    """Wildcard-safe ids that depend only on each dispatch dir's path under ``root``.

    ``a38430_d44`` for ``ui_output_agent_38430_dispatch_44`` (``_after_loc_fix`` labels kept),
    the folder name otherwise (legacy ``*_ui``); a short hash of the relative path is appended
    when two dirs would share an id. Adding or removing other dirs never renames a dir, so only
    its own jobs re-run (positional ids ``d000``… shifted every later dir).
    """
    root = Path(root).resolve()
    base = []
    relative = []
    for path in paths:
        path = Path(path).resolve()
        rel = path.relative_to(root).as_posix() if root in path.parents else path.name
        relative.append(rel)
        match = DISPATCH_RE.match(path.name)
        short = f"a{match.group(1)}_d{match.group(2)}{match.group(3)}" if match else path.name
        base.append(_ID_UNSAFE.sub("-", short).strip("-") or "dispatch")
    counts: dict[str, int] = {}
    for name in base:
        counts[name] = counts.get(name, 0) + 1
    return [name if counts[name] == 1 else f"{name}-{hashlib.sha1(rel.encode()).hexdigest()[:6]}"
            for name, rel in zip(base, relative, strict=True)]


def capture_state(decode_report: str | Path) -> str:
    """The part of a decode report the hotspot analysis reads (truncated flag, finding codes)."""
    import json

    try:
        with open(decode_report, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        return "unreadable"
    if not isinstance(report, dict):
        return "unreadable"
    codes = sorted({str(f.get("code")) for f in report.get("findings") or [] if isinstance(f, dict)})
    return f"truncated={bool(report.get('truncated'))} codes={','.join(codes)}"
