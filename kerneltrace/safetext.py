"""Text safe for terminals and spreadsheets: control, bidi and zero-width characters escaped; formula cells quoted.

Kernel names, paths, asm and source text are user data. In a terminal an ESC starts a control
sequence (clear the screen, set the window title, OSC-8 links that hide their target); bidi
overrides and zero-width characters make text read differently from what it is; a TSV cell
starting with ``=``, ``+``, ``-`` or ``@`` is a formula in a spreadsheet. Every text, TSV and
Markdown output passes its user text (or the whole rendered page) through this module, one
linear-time regular expression, so no output has its own variant.
"""

from __future__ import annotations

import re

# C0 controls (tab and newline handled by the caller's choice), DEL, C1 controls (0x9b is CSI),
# bidi embeddings/overrides/isolates and marks, zero-width characters, the BOM, line/paragraph
# separators, and unpaired surrogates (from undecodable file names).
_UNSAFE = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
           "\ud800-\udfff")
_PATTERNS = {"page": f"[{_UNSAFE}]", "line": f"[{_UNSAFE}\t\n]"}  # the page keeps tab and newline: its layout
_compiled: dict[str, re.Pattern[str]] = {}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unsafe(kind: str) -> re.Pattern[str]:
    """The pattern, compiled when first needed: most text is printable, and compiling the class
    (surrogates and all) costs a millisecond a process."""
    found = _compiled.get(kind)
    if found is None:
        found = _compiled[kind] = re.compile(_PATTERNS[kind])
    return found


def _printable(text: str) -> bool:
    """Nothing to escape in ``text`` as one line: every unsafe character (and tab and newline)
    is unprintable to str.isprintable (categories Cc, Cf, Cs, Zl, Zp, or unassigned)."""
    return text.isprintable()


def terminal_page(text: str) -> str:
    """A whole rendered text/Markdown page with every unsafe character shown as ``\\xNN``/``\\uNNNN``.

    Tabs and newlines stay (the page's layout); the page's own text holds no other control
    character, so everything escaped came from user data."""
    if _printable(text.replace("\n", " ").replace("\t", " ")):
        return text
    return _unsafe("page").sub(_escape, text)


def one_line(value: object) -> str:
    """User text on one line: tab, newline and every unsafe character escaped."""
    text = str(value)
    return text if _printable(text) else _unsafe("line").sub(_escape, text)


def has_unsafe(text: str) -> bool:
    """True if ``text`` holds a tab, newline or any character ``one_line`` would escape."""
    return not _printable(text) and _unsafe("line").search(text) is not None


def tsv_cell(value: object) -> str:
    """A TSV cell for a spreadsheet: one line, escaped, and quoted with ``'`` if it would start a formula."""
    text = one_line(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
