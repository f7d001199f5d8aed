"""Plain-text formatting shared by the renderers: cycle counts, percentages, bars, truncation."""

from __future__ import annotations

from kerneltrace.numfmt import percent

BAR_CELLS = 30


def cycles(value: int | float | None) -> str:
    """1234567 -> '1.23M', 12345 -> '12.3K', None -> 'n/a'; a number no float holds -> '~2^N'."""
    if value is None:
        return "n/a"
    if isinstance(value, int) and abs(value) >= 1 << 1000:
        # float(value) would raise OverflowError (a sum of hostile 64-bit counts is far below this)
        return f"{'-' if value < 0 else ''}~2^{abs(value).bit_length() - 1}"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.2f}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.1f}K"
    return str(int(value))


def bar(fraction: float | None) -> str:
    filled = 0 if fraction is None else max(0, min(BAR_CELLS, round(fraction * BAR_CELLS)))
    return "█" * filled + "░" * (BAR_CELLS - filled) + f" {percent(fraction, width=5)}"


def tail(text: str, width: int) -> str:
    """The last `width` characters, '…' marking the cut (paths: the file name stays visible)."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def head(text: str, width: int) -> str:
    """The first `width` characters, '…' marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"
