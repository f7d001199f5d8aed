"""File-name patterns of literal text and `*` (the bundle's CSV kinds, wave files) matched by str methods, as fnmatch.fnmatchcase matches them.

fnmatch translates each pattern into a regular expression and compiles it (≈ 0.1 ms a pattern,
paid by every CLI run for the three patterns of a bundle search); a pattern of literal parts and
stars needs only a prefix, a suffix and the middle parts found in order, leftmost first (a star
matches any run of characters, so the earliest place of each part leaves the most room to the
rest). Patterns with `?` or `[` go to fnmatch.
"""

from __future__ import annotations


def name_matches(name: str, pattern: str) -> bool:
    """fnmatch.fnmatchcase(name, pattern)."""
    if "?" in pattern or "[" in pattern:
        import fnmatch

        return fnmatch.fnmatchcase(name, pattern)
    first, *middle = pattern.split("*")
    if not middle:
        return name == pattern
    last = middle.pop()
    end = len(name) - len(last)
    if end < len(first) or not name.startswith(first) or not name.endswith(last):
        return False
    at = len(first)
    for part in middle:
        at = name.find(part, at, end)
        if at == -1:
            return False
        at += len(part)
    return True


def names_matching(names: list[str], pattern: str) -> list[str]:
    """fnmatch.filter(names, pattern) on POSIX (no case folding): the matching names, in order."""
    return [name for name in names if name_matches(name, pattern)]
