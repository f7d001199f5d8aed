"""Stage documents kept beside a plan (reports/{run}/hotspots, l2): copies of dropped dispatches removed."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kerneltrace.atomic import within_confinement

KEPT_FOLDERS = ("hotspots", "l2")


def stale_copies(out_dir: Path, kept: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """JSON files in ``out_dir``/hotspots and ``out_dir``/l2 that are not among ``kept``.

    A folder that is a symlink, resolves outside ``out_dir`` (or, in a pipeline job, outside the
    working dir) is never cleaned: deleting there
    would delete files that are not this run's copies (only links themselves are ever removed)."""
    wanted = {os.path.realpath(p) for p in kept}
    stale = []
    home = os.path.join(os.path.realpath(out_dir), "")
    for name in KEPT_FOLDERS:
        folder = Path(out_dir) / name
        if (folder.is_symlink() or not folder.is_dir() or not os.path.realpath(folder).startswith(home)
                or not within_confinement(folder)):  # in a pipeline job: never outside its working dir
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
