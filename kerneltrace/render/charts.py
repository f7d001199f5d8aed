"""Charts for plan.html: horizontal bar charts written directly as small self-contained SVG strings.

No plotting library: a chart is a handful of ``<rect>`` and ``<text>`` elements (≈ 0.1 ms each
instead of ≈ 100 ms through matplotlib), every piece of text XML-escaped, characters XML cannot
hold replaced by U+FFFD, no external reference of any kind (fonts are the viewer's sans-serif).
"""

from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape, quoteattr

from kerneltrace.render.fmt import tail

COLOR = "#3b6ea8"
HIGHLIGHT = "#c0504d"
WIDTH = 700
ROW = 22
TOP = 34
BOTTOM = 40
CHAR_PX = 6.2  # average width of an 11 px sans-serif character, for the label column
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(value: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", value))


def _value_text(value: float, percent: bool) -> str:
    return f"{value:.1%}" if percent else f"{value:,.0f}"


def hbar_chart(
    labels: list[str],
    values: list[float],
    title: str,
    xlabel: str,
    highlight: set[int] | None = None,
    percent: bool = False,
) -> str:
    """Horizontal bars, first label on top; `highlight` indexes drawn in the accent colour."""
    if not labels:
        return ""
    shown = [tail(label, 48) for label in labels]
    values = [float(v) if math.isfinite(v) else 0.0 for v in values]
    left = int(min(340, 12 + CHAR_PX * max(len(label) for label in shown)))
    right = 64
    span = WIDTH - left - right
    top_value = max((v for v in values if v > 0), default=1.0)
    height = TOP + ROW * len(labels) + BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label={quoteattr(_NOT_XML.sub("", title))} '
        'font-family="sans-serif" font-size="11">',
        f"<title>{_text(title)}</title>",
        f'<text x="{WIDTH / 2:.0f}" y="18" text-anchor="middle" font-size="13">{_text(title)}</text>',
    ]
    for i, (label, value) in enumerate(zip(shown, values, strict=True)):
        y = TOP + ROW * i
        length = max(0.0, value) / top_value * span
        color = HIGHLIGHT if highlight and i in highlight else COLOR
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{length:.1f}" height="{ROW - 6}" '
                     f'fill="{color}"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{_text(label)}</text>')
        parts.append(f'<text x="{left + length + 4:.1f}" y="{y + 15}" font-size="10">'
                     f"{_text(_value_text(value, percent))}</text>")
    axis_y = TOP + ROW * len(labels) + 2
    parts.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + span}" y2="{axis_y}" '
                 'stroke="#555" stroke-width="1"/>')
    for fraction in (0.0, 0.5, 1.0):
        x = left + fraction * span
        parts.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="#555"/>')
        parts.append(f'<text x="{x:.1f}" y="{axis_y + 15}" text-anchor="middle" font-size="10">'
                     f"{_text(_value_text(fraction * top_value, percent))}</text>")
    parts.append(f'<text x="{left + span / 2:.0f}" y="{axis_y + 32}" text-anchor="middle">'
                 f"{_text(xlabel)}</text>")
    parts.append("</svg>")
    return "\n".join(parts)


def stall_by_type_chart(stall_by_type: list[dict]) -> str:
    rows = [row for row in stall_by_type if row.get("stall_cycles")]
    return hbar_chart(
        [r["type"] for r in rows],
        [r.get("share") or 0.0 for r in rows],
        "Stall cycles by instruction type",
        "share of all stall cycles",
        percent=True,
    )


def top_lines_chart(source_lines: list[dict], limit: int = 10) -> str:
    rows = [line for line in source_lines if line.get("stall_cycles")][:limit]
    artifacts = {i for i, line in enumerate(rows) if line.get("artifact")}
    labels = [line["location"] + (" [glue]" if line.get("artifact") else "") for line in rows]
    return hbar_chart(
        labels,
        [line.get("share") or 0.0 for line in rows],
        "Top source lines (red = entry/unmapped glue, not ranked)",
        "share of all stall cycles",
        highlight=artifacts,
        percent=True,
    )


def occupancy_chart(occupancy: dict) -> str:
    limits = {
        k: v for k, v in (occupancy.get("limits") or {}).items() if isinstance(v, int | float)
    }
    if not limits:
        return ""
    names = list(limits)
    limiter = (occupancy.get("limited_by") or "").lower()
    return hbar_chart(
        names,
        [float(limits[n]) for n in names],
        "Waves per SIMD allowed by each resource (red = limiter)",
        "waves per SIMD",
        highlight={i for i, n in enumerate(names) if n == limiter},
    )


def l2_chart(metrics: dict) -> str:
    """Fractions from the L2 document (hit rate, 32-byte fraction, % of peak) as bars in [0, 1]."""
    rows = [
        (k.replace("_", " "), float(v))
        for k, v in metrics.items()
        if isinstance(v, int | float)
        and not isinstance(v, bool)
        and 0.0 <= v <= 1.0
        and any(word in k for word in ("rate", "frac", "pct", "fraction", "share"))
    ]
    if not rows:
        return ""
    return hbar_chart(
        [r[0] for r in rows], [r[1] for r in rows], "L2 / HBM metrics", "fraction", percent=True
    )
