"""Charts for plan.html: matplotlib (Agg) figures returned as self-contained inline SVG strings."""

from __future__ import annotations

import io
import re

from kerneltrace.render.fmt import tail

_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.S)  # XML declaration + DOCTYPE (external DTD URL)
_COMMENT = re.compile(r"<!--.*?-->", re.S)  # matplotlib echoes text (kernel names) in comments
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)
COLOR = "#3b6ea8"
HIGHLIGHT = "#c0504d"


def _figure(height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "kerneltrace"  # stable element ids → reproducible output
    plt.rcParams["svg.fonttype"] = "path"
    fig, ax = plt.subplots(figsize=(7.0, height), dpi=100)
    return plt, fig, ax


def _to_svg(plt, fig) -> str:
    buffer = io.StringIO()
    fig.tight_layout()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = _PROLOGUE.sub("", buffer.getvalue(), count=1)
    return _METADATA.sub("", _COMMENT.sub("", svg)).strip()


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
    plt, fig, ax = _figure(0.6 + 0.32 * len(labels))
    positions = list(range(len(labels)))[::-1]
    colors = [HIGHLIGHT if highlight and i in highlight else COLOR for i in range(len(labels))]
    ax.barh(positions, values, color=colors)
    ax.set_yticks(positions, [tail(label, 48) for label in labels], fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    for pos, value in zip(positions, values, strict=True):
        ax.text(
            value, pos, f" {value:.1%}" if percent else f" {value:,.0f}", va="center", fontsize=7
        )
    ax.margins(x=0.15)
    ax.spines[["top", "right"]].set_visible(False)
    return _to_svg(plt, fig)


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
