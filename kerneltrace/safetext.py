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
_UNSAFE_IN_PAGE = re.compile(f"[{_UNSAFE}]")  # keeps tab and newline: the page's own layout
_UNSAFE_IN_LINE = re.compile(f"[{_UNSAFE}\t\n]")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_page(text: str) -> str:
    """A whole rendered text/Markdown page with every unsafe character shown as ``\\xNN``/``\\uNNNN``.

    Tabs and newlines stay (the page's layout); the page's own text holds no other control
    character, so everything escaped came from user data."""
    return _UNSAFE_IN_PAGE.sub(_escape, text)


def one_line(value: object) -> str:
    """User text on one line: tab, newline and every unsafe character escaped."""
    return _UNSAFE_IN_LINE.sub(_escape, str(value))


def has_unsafe(text: str) -> bool:
    """True if ``text`` holds a tab, newline or any character ``one_line`` would escape."""
    return _UNSAFE_IN_LINE.search(text) is not None


def tsv_cell(value: object) -> str:
    """A TSV cell for a spreadsheet: one line, escaped, and quoted with ``'`` if it would start a formula."""
    text = one_line(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
