"""Whether csv.reader reads every line of a CSV text as a record of its own, and which lines can hold a given cell.

csv.reader (excel dialect, not strict) carries a record over to the next line only when a line
ends inside a quoted cell, and its only error on lines without line breaks is a cell longer than
``csv.field_size_limit()``. When neither can happen, each line parses alone exactly as it does
within the whole text, so a caller may parse only the lines that can matter. A cell's value is
its line's characters in order with some double quotes dropped (never another character added or
dropped), so a line whose record has a cell VALUE holds VALUE once both have their quotes removed.
The checks cost a few string scans, against the character-at-a-time parse of every line they spare.
"""

from __future__ import annotations

import csv

_OTHER_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # str.splitlines breaks at these and "\n"


def line_starts(text: str) -> list[int] | None:
    """Where each line of ``text`` (as str.splitlines cuts it) starts, when csv.reader over those
    lines reads each as one record that depends on that line alone, raising no csv.Error; else None.

    Vouched for: lines ended by "\\n" only (no other character splitlines breaks at), none longer
    than the field limit, and on each line the last run of double quotes odd in length, not first
    on the line and not after a comma. Only a quote at a cell's start (the line start, after a
    comma) opens a quoted cell; within it a run of quotes odd in length closes it, and elsewhere
    quotes are text. So the line's last run closes the cell it is in (or is text) and opens none:
    the line ends outside quotes. Anything else is None: the caller parses the whole text. (One
    scan of the text, no line copied: the caller slices the few lines it parses.)"""
    if any(other in text for other in _OTHER_LINE_BREAKS):
        return None
    limit = csv.field_size_limit()
    starts: list[int] = []
    find, rfind, size, start = text.find, text.rfind, len(text), 0
    while start < size:
        end = find("\n", start)
        if end == -1:
            end = size
        if end - start > limit:
            return None
        last = rfind('"', start, end)
        if last != -1:
            first = last  # of the run of quotes ending the line's quotes
            while first > start and text[first - 1] == '"':
                first -= 1
            if (last + 1 - first) % 2 == 0 or first == start or text[first - 1] == ",":
                return None
        starts.append(start)
        start = end + 1
    return starts


def line_at(text: str, starts: list[int], number: int) -> str:
    """Line ``number`` of ``text`` (its starts from line_starts), without its line break."""
    end = text.find("\n", starts[number])
    return text[starts[number]:] if end == -1 else text[starts[number]:end]


def lines_holding(text: str, needles: set[str], lower: bool = False) -> list[int]:
    """The numbers of the lines of ``text`` (one record each, see line_starts) whose
    record can have a cell equal to one of ``needles`` (with ``lower``: a cell whose lower case
    holds one of them, which must then be ASCII), in order. Quotes aside, such a line holds it."""
    plain = text.replace('"', "")
    if lower:
        plain = plain.lower()  # ASCII lowers the same in any context, and no line break moves
    found = {needle.replace('"', "") for needle in needles}
    # a line holding a longer needle also holds any needle it contains: the shorter one suffices
    shortest = [n for n in found if not any(other != n and other in n for other in found)]
    if "" in shortest:
        return list(range(plain.count("\n") + 1))
    numbers: set[int] = set()
    for needle in shortest:
        line, counted = 0, 0
        at = plain.find(needle)
        while at != -1:
            line += plain.count("\n", counted, at)
            counted = at
            numbers.add(line)
            end = plain.find("\n", at)  # one match per line is enough
            at = -1 if end == -1 else plain.find(needle, end + 1)
    return sorted(numbers)
