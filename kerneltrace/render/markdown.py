"""Markdown escaping for every Markdown output (CommonMark + GFM tables): user text can never become markup."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def md_text(value: object) -> str:
    """Plain text safe inside Markdown (and inline HTML): specials escaped, one line."""
    text = re.sub(r"\s+", " ", str(value))
    return _MD_SPECIAL.sub(r"\\\1", text).replace("&", "&amp;")


def md_code(value: object) -> str:
    """An inline code span whose fence is longer than any backtick run inside (no breakout)."""
    text = " ".join(str(value).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""


def md_prose(value: object) -> str:
    """Prose with `code spans` kept as code (sanitised) and everything else escaped as text."""
    parts = re.split(r"`([^`]*)`", " ".join(str(value).split()))
    return "".join(
        md_code(part) if odd else md_text(part)
        for odd, part in ((i % 2 == 1, p) for i, p in enumerate(parts))
    )


def md_cell(value: object) -> str:
    """Text for a Markdown table cell (pipes escaped even inside code; GFM unescapes them first)."""
    return " ".join(str(value).split()).replace("|", "\\|")


def md_text_cell(value: object) -> str:
    """Escaped text for a table cell."""
    return md_cell(md_text(value))


def md_code_cell(value: object) -> str:
    """A code span for a table cell."""
    return md_cell(md_code(value))


def md_url(value: object) -> str:
    """A relative link target: percent-encoded, so no character ends the link or starts markup."""
    from urllib.parse import quote

    return quote(" ".join(str(value).split()), safe="/")


def md_fence(value: object) -> str:
    """A fence for a fenced code block holding ``value``: longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`{3,}", str(value))), default=0)
    return "`" * max(3, longest + 1)


def html_comment(value: object) -> str:
    """Text safe inside an HTML comment (no ``--``, no ``>``, one line)."""
    text = " ".join(str(value).split())
    return text.replace("--", "- -").replace(">", "&gt;").replace("<", "&lt;")
