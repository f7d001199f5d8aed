"""rocprofv3 *_kernel_stats.csv (discovery's per-kernel totals) as KernelStat rows, read with pandas, names kept as text."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kerneltrace.readers.frames import CsvSource, integers, read_text, text_frame

WHAT = "kernel_stats CSV"


@dataclass(frozen=True)
class KernelStat:
    """One kernel_stats.csv row (None: the cell is empty or not a number)."""

    name: str
    calls: int | None
    total_duration_ns: int | None
    average_ns: float | None
    percentage: float | None


def _optional_floats(frame: pd.DataFrame, column: str) -> list[float | None]:
    if column not in frame:
        return [None] * len(frame)
    return [_float(text) for text in frame[column]]


def _float(text: str) -> float | None:
    try:
        return float(text) if text.strip() else None
    except ValueError:
        return None


def _optional_integers(frame: pd.DataFrame, column: str) -> list[int | None]:
    return integers(frame[column]).tolist() if column in frame else [None] * len(frame)


def read_kernel_stats(path: Path) -> list[KernelStat]:
    """Rows of a *kernel_stats.csv (sorted by total duration by rocprofv3); columns by header name.

    Every cell is read as text first, so a kernel named "nan", "NA" or "1e5" keeps its name and a
    19-digit total keeps every digit."""
    source = CsvSource(Path(path), WHAT, f"regenerate the {WHAT}")
    frame = text_frame(source, read_text(source), ("Name",),
                       f"not a rocprofv3 {WHAT}: missing column(s) {{missing}}",
                       f"pass the {WHAT} written by rocprofv3 (-f csv)")
    return [KernelStat(*cells) for cells in zip(
        frame["Name"].tolist(), _optional_integers(frame, "Calls"), _optional_integers(frame, "TotalDurationNs"),
        _optional_floats(frame, "AverageNs"), _optional_floats(frame, "Percentage"), strict=True)]
