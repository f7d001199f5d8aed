"""Source location strings ("/path/file.py:123", inline chains "a.py:1 -> b.py:2"): frames and splits."""

from __future__ import annotations

from pathlib import PurePosixPath

# code.json joins an inline chain innermost first, kernel-level call site last (docs/rocprof-outputs.md §8.4).
INLINE_SEPARATOR = " -> "
UNMAPPED = "<unmapped>"


def innermost_location(source: str | None) -> str:
    """Innermost frame of an inline chain "a.py:10 -> b.py:20" ("" and None give "")."""
    if not source:
        return ""
    return source.split(INLINE_SEPARATOR, 1)[0].strip()


def split_location(location: str) -> tuple[str, int | None]:
    """'/path/file.py:123' -> ('/path/file.py', 123) for the innermost frame; no number -> None.

    Splits on the LAST ':' because paths may hold ':' (C:/..., odd dir names).
    """
    frame = innermost_location(location)
    path, sep, line = frame.rpartition(":")
    if sep and line.strip().isdigit():
        return path, int(line.strip())
    return frame, None


def short_location(location: str | None) -> str:
    """`file.py:123` from `/abs/path/file.py:123` (finding ids stay short and path-independent).

    Of an inline chain the innermost frame is used, as everywhere else: the line the instruction
    is on, the one hotspot source_lines aggregate by (so ids and titles name that same line).
    """
    if not location:
        return "unmapped"
    path, line = split_location(location)
    name = PurePosixPath(path).name or path
    return name if line is None else f"{name}:{line}"
