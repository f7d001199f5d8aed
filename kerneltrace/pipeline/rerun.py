"""What decides re-runs: the files a dispatch job reads, cheap content signatures, the code a job runs, stable ids.

Snakemake re-runs a job when an input is newer than its outputs, when the set of its inputs
changed, or when a param changed (its default ``--rerun-triggers``). The pipeline declares every
file of a dispatch dir (and the CSVs found for it) as inputs of its hotspots job, and passes a
signature of those files — and, for the dispatch list, of the searched tree — as a param, so that
a file replaced by an OLDER copy (``cp -p``, ``rsync -a``) is noticed too. A file's signature is
its resolved path, size, mtime and a hash of its content (the whole file up to 2 × BLOCK bytes,
else its first and last BLOCK bytes), so an edit that keeps size and mtime (``touch -r``) is seen;
a symlinked dispatch dir is signed with its target. ``code_signature`` signs the code a script
runs (kerneltrace/pipeline/codesig.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from kerneltrace.model.metadata import AGENT_INFO, COUNTERS, KERNEL_TRACE, bundle_levels
from kerneltrace.model.naming import DISPATCH_RE

# Files whose presence decides which CSVs the dispatch list attaches to a dispatch dir
# (kerneltrace/model/metadata.py looks them up in its capture bundle).
METADATA_PATTERNS = KERNEL_TRACE + AGENT_INFO + COUNTERS
# the same patterns as one regex over a file's name (inside the searched tree)
METADATA_FILE = re.compile("|".join(fnmatch.translate(pattern.rsplit("/", 1)[-1])
                                    for pattern in METADATA_PATTERNS))
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
BLOCK = 64 * 1024  # bytes hashed at each end of a large file


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


def content_stamp(path: str | Path) -> str:
    """size, mtime and a content hash of one file (whole up to 2 × BLOCK, else both ends);
    "absent" when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            digest = hashlib.blake2b(digest_size=8)
            if info.st_size <= 2 * BLOCK:
                digest.update(handle.read(2 * BLOCK + 1))
            else:
                digest.update(handle.read(BLOCK))
                handle.seek(-BLOCK, os.SEEK_END)
                digest.update(handle.read(BLOCK))
    except (OSError, ValueError):
        return "absent"
    return f"{info.st_size} {info.st_mtime_ns} {digest.hexdigest()}"


def _resolved(path: str | Path) -> str:
    """`` -> target`` when the path goes through a symlink (retargeting it changes the signature)."""
    text = os.fspath(path)
    real = os.path.realpath(text)
    return "" if real == os.path.abspath(text) else f" -> {real}"


def files_signature(paths: Iterable[str | Path]) -> str:
    """A short hash of (path, resolved target, size, mtime, content hash) of each file; missing
    files count as absent."""
    digest = hashlib.sha1()
    for path in paths:
        digest.update(f"{path}{_resolved(path)}\0{content_stamp(path)}\n".encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def _is_dispatch_dir(path: str, names: list[str]) -> bool:
    return bool(DISPATCH_RE.match(os.path.basename(path))) or "code.json" in names


def _listing(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def tree_signature(root: Path | str) -> str:
    """Signature of what the dispatch list of ``root`` depends on.

    Covers: which dispatch dirs exist (a symlinked one with its target), the stamp of each one's
    code.json (kernel name, emptiness), the names of its files (wave-file count), and the stamps of
    the kernel-trace / agent-info / counter CSVs anywhere in the tree and in the capture bundle
    above it (which ones are attached). Changing a wave file or a source copy does not change it:
    those re-run their dispatch's job through its own inputs, not the dispatch list.
    """
    root = os.path.abspath(root)
    lines: list[str] = []
    if not os.path.isdir(root):
        return "absent"
    walk_root = os.path.dirname(root) if _is_dispatch_dir(root, _listing(root)) else root
    shallowest: tuple[int, str] | None = None  # (depth below walk_root, path) of the highest dispatch dir

    def dispatch_lines(path: str, names: list[str]) -> None:
        nonlocal shallowest
        depth = os.path.relpath(path, walk_root).count(os.sep) + 1
        if shallowest is None or depth < shallowest[0]:
            shallowest = (depth, path)
        lines.append(f"D {os.path.relpath(path, walk_root)}{_resolved(path)} {' '.join(names)}")
        lines.append(_stat_line(os.path.join(path, "code.json"), walk_root))

    for dirpath, dirnames, names in os.walk(walk_root):
        dirnames.sort()
        if dirpath != walk_root and _is_dispatch_dir(dirpath, names):
            dirnames[:] = []
            if walk_root == root or dirpath == root:
                dispatch_lines(dirpath, sorted(names))
            continue
        for name in dirnames:  # a symlinked dispatch dir is found, never walked into
            link = os.path.join(dirpath, name)
            if walk_root == root and os.path.islink(link):
                listed = _listing(link)
                if _is_dispatch_dir(link, listed):
                    dispatch_lines(link, listed)
        lines += [_stat_line(os.path.join(dirpath, name), walk_root)
                  for name in sorted(names) if METADATA_FILE.search(name)]
    if shallowest is not None:
        lines += _above(walk_root, Path(shallowest[1]))
    return hashlib.sha1("\n".join(lines).encode("utf-8", "replace")).hexdigest()[:16]


def _above(walk_root: str, dispatch_dir: Path) -> list[str]:
    """Metadata CSVs the capture bundle of ``dispatch_dir`` reaches outside ``walk_root``: the
    files kerneltrace/model/metadata.py would look at (``bundle_levels``), one definition."""
    inside = os.path.join(walk_root, "")
    found = {path for kind in (KERNEL_TRACE, AGENT_INFO, COUNTERS)  # each kind has its own bounds
             for level in bundle_levels(dispatch_dir, kind)[1:] for path in level
             if not os.path.abspath(path).startswith(inside)}
    return [_stat_line(str(path), "/") for path in sorted(found)]


def _stat_line(path: str, root: str) -> str:
    return f"F {os.path.relpath(path, root)}{_resolved(path)} {content_stamp(path)}"


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
