"""Source windows around plan locations, read through the safe snapshot reader (never outside the dir)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.snapshots import SourceIndex, read_snapshots
from kerneltrace.sourceloc import split_location


def load_snippets(
    dispatch_dir: str | Path | None, locations: Iterable[str], context: int = 3
) -> dict[str, dict]:
    """{location: {"path", "first_line", "lines": [text…]}} for the locations whose source is copied.

    A missing dispatch dir, snapshots.json, source copy or line — or a snapshots.json the safe
    reader refuses — yields no snippet for it; the plan is rendered without it, never fails.
    """
    if not dispatch_dir or not Path(dispatch_dir).is_dir():
        return {}
    try:
        sources = read_snapshots(Path(dispatch_dir))
    except InputError:
        return {}
    return snippets_from(sources, locations, context)


def snippets_from(sources: SourceIndex, locations: Iterable[str], context: int = 3) -> dict[str, dict]:
    """load_snippets over an already read snapshot index (a missing copy or line: no snippet)."""
    snippets: dict[str, dict] = {}
    for location in locations:
        path, number = split_location(location or "")
        text = _copied_lines(sources, path) if number is not None else None
        if text is None or not 1 <= number <= len(text):
            continue
        first = max(1, number - context)
        last = min(len(text), number + context)
        snippets[location] = {
            "path": path,
            "first_line": first,
            "lines": [line.rstrip("\r\n") for line in text[first - 1 : last]],
        }
    return snippets


def _copied_lines(sources: SourceIndex, path: str) -> list[str] | None:
    """The lines of a source path's local copy, or None when it has none or it cannot be read."""
    local = sources.resolve(path)
    if local is None:
        return None
    try:
        return sources.lines(local)[0]
    except (OSError, InputError):
        return None


SOURCE_FILE_MAX_LINES = 20_000  # a longer copy is not carried (the plan's source view says so)
SOURCE_FILES_MAX_CHARS = 8 << 20  # all carried files together


def source_files_from(sources: SourceIndex, locations: Iterable[str]) -> dict[str, dict]:
    """{path: {"lines": [text…]}}: the whole copied file of each source path named by
    `locations` (`path:line`), for the plan's source view; a file without a copy, longer than
    SOURCE_FILE_MAX_LINES or past SOURCE_FILES_MAX_CHARS in all is left out."""
    files: dict[str, dict] = {}
    budget = SOURCE_FILES_MAX_CHARS
    for location in locations:
        path, number = split_location(location or "")
        text = _copied_lines(sources, path) if number is not None and path not in files else None
        if text is None:
            continue
        lines = [line.rstrip("\r\n") for line in text]
        size = sum(map(len, lines))
        if len(lines) > SOURCE_FILE_MAX_LINES or size > budget:
            continue
        budget -= size
        files[path] = {"lines": lines}
    return files
