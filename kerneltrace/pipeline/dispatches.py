"""The dispatches checkpoint: a run's dispatch dirs (searched in a folder, or from the decode manifests) and dispatches.md."""

from __future__ import annotations

import re
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.model import dispatchdir
from kerneltrace.pipeline import manifest, rerun


def from_folder(search_dir: Path, kernel: str | None = None, *,
                allow_empty: bool = False) -> tuple[list[dict[str, str]], list[str]]:
    """dir= runs: manifest rows of the usable dispatch dirs under a folder (kernel regex applied), notes.

    ``allow_empty``: dispatch dirs found but every one dropped (empty traces, broken code.json) is
    an empty list with the notes, so the plan can say why (nothing found at all stays an error)."""
    found = dispatchdir.find_dispatch_dirs(search_dir)
    if not found.kept:
        if allow_empty and any(note.startswith("dropped ") for note in found.notes):
            return [], found.notes
        raise dispatchdir.no_dispatch_dirs_error(search_dir, found.notes)
    kept = found.kept
    if kernel:
        pattern = re.compile(kernel)
        kept = [item for item in found.kept if pattern.search(item.kernel)]
        if not kept:
            names = "; ".join(sorted({item.kernel or "?" for item in found.kept})[:10])
            raise InputError(f"no dispatch dir's kernel matches kernel={kernel!r}; kernels found: {names}",
                             str(search_dir), "set kernel to a regex matching one of these names, or drop it")
    rows = manifest.manifest_rows(kept)
    # ids from each dir's own path, so adding or removing a dir never renames (re-runs) another
    for row, stable in zip(rows, rerun.stable_ids([item.path for item in kept], search_dir), strict=True):
        row["id"] = stable
    return rows, found.notes


def from_manifests(manifests: list[Path]) -> list[dict[str, str]]:
    """cmd= runs: the rows of the per-kernel decode manifests."""
    rows: list[dict[str, str]] = []
    for path in manifests:
        rows += manifest.read_manifest(path)
    if not rows:
        raise InputError("no decoded dispatch dir in any capture", ", ".join(map(str, manifests)) or "-",
                         "see the decode logs under logs/<run>/decode/")
    return rows


def notes_markdown(rows: list[dict[str, str]], notes: list[str], searched: str) -> str:
    """dispatches.md: the kept dispatch dirs and every skipped entry with its reason (escaped)."""
    from kerneltrace.render.markdown import md_code_cell, md_text, md_text_cell
    from kerneltrace.safetext import terminal_page

    lines = [f"# Dispatch dirs ({md_text(searched)})", "", "| id | kernel | dispatch dir | label |",
             "|---|---|---|---|"]
    lines += [f"| {md_text_cell(r['id'])} | {md_code_cell(r['kernel'] or '?')} | {md_code_cell(r['dispatch_dir'])} "
              f"| {md_text_cell(r['label'])} |" for r in rows]
    if notes:
        lines += ["", "Dropped:", ""] + [f"- {md_text(note)}" for note in notes]
    return terminal_page("\n".join(lines) + "\n")
