"""Stage documents kept beside a plan (reports/{run}/hotspots, l2): copies of dropped dispatches removed."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

KEPT_FOLDERS = ("hotspots", "l2")


def stale_copies(out_dir: Path, kept: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """JSON files in ``out_dir``/hotspots and ``out_dir``/l2 that are not among ``kept``."""
    wanted = {os.path.realpath(p) for p in kept}
    stale = []
    for name in KEPT_FOLDERS:
        folder = Path(out_dir) / name
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            if os.path.realpath(path) not in wanted and (path.is_file() or path.is_symlink()):
                stale.append(path)
    return stale


def remove_stale_copies(out_dir: Path, kept: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Delete the stale copies (a baseline made of reports/{run} must not compare dropped dispatches)."""
    removed = stale_copies(out_dir, kept)
    for path in removed:
        path.unlink(missing_ok=True)
    return removed
