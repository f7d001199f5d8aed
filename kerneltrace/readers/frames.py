"""CSV files as pandas frames of text cells (dtype=str, nothing guessed) and their cells as numbers, with the row named on error."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kerneltrace.errors import InputError, require_all
from kerneltrace.readers.regular import CSV_LIMIT, read_regular

BOM = "\ufeff"


@dataclass(frozen=True)
class CsvSource:
    """What a CSV is called in messages and how the user gets a good one."""

    path: Path
    what: str  # "counter file", "pmc_perf.csv", "kernel_stats CSV"
    fix: str  # advice for a malformed file

    def where(self, row: int) -> str:
        """`path:line` of the frame row (line 1 is the header; blank lines are not counted)."""
        return f"{self.path}:{row + 2}"


def read_text(source: CsvSource) -> str:
    """The file as text (a regular file, bounded; undecodable bytes replaced; a leading BOM dropped)."""
    text = read_regular(source.path, source.what, CSV_LIMIT).decode("utf-8", errors="replace")
    return text[len(BOM):] if text.startswith(BOM) else text


def text_frame(source: CsvSource, text: str, required: Sequence[str], missing: str,
               missing_fix: str = "") -> pd.DataFrame:
    """Every cell as text ('' for an empty or absent cell), columns by header name.

    Nothing is guessed: a kernel named "nan", "NA" or "1e5" stays that string. As csv.DictReader
    read these files: blank lines are skipped, a short row's missing cells are empty, cells beyond
    the header are ignored, and a duplicated header name keeps its last column, except a required
    one, which is ambiguous and refused. ``missing`` words the missing-columns error (a
    ``{missing}`` placeholder); ``missing_fix`` its advice (default: ``source.fix``).
    """
    header = _cells(source, text, nrows=1)
    names = [str(name) for name in header.iloc[0]] if len(header) else []
    require_all(required, names, missing, str(source.path), missing_fix or source.fix)
    for name in required:
        if names.count(name) > 1:
            raise InputError(f"column {name} appears {names.count(name)} times in the header", str(source.path),
                             missing_fix or source.fix)
    if not names:
        return pd.DataFrame()
    cells = _cells(source, text, usecols=range(len(names)))
    last = {name: at for at, name in enumerate(names)}
    body = cells.iloc[1:, list(last.values())]
    body.columns = list(last)
    return body.reset_index(drop=True)


def _cells(source: CsvSource, text: str, **options: object) -> pd.DataFrame:
    try:
        cells = pd.read_csv(io.StringIO(text), header=None, dtype=str, keep_default_na=False, na_filter=False,
                            skip_blank_lines=True, index_col=False, engine="c", **options)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except (pd.errors.ParserError, ValueError) as err:
        raise InputError(f"malformed CSV: {_first_line(err)}", str(source.path), source.fix) from None
    return cells.fillna("")  # a short row's cells: '' on every pandas version (2.x may give NaN)


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def floats(column: pd.Series, source: CsvSource, what: str | Callable[[int], str], fix: str) -> pd.Series:
    """The column as finite floats (float() of each cell: numpy casts object cells with it); the first
    cell that is not one is an InputError naming its line (``what``: the value's name, or a function of the row)."""
    try:
        values = column.astype(object).astype("float64")
    except (TypeError, ValueError):
        values = None
    if values is None or not np.isfinite(values.to_numpy()).all():
        for row, text in column.items():
            try:
                value = float(text)
            except (TypeError, ValueError):
                value = math.nan
            if not math.isfinite(value):
                name = what(int(row)) if callable(what) else what
                raise InputError(f"{name} {text!r} is not a finite number", source.where(int(row)), fix)
    return values if values is not None else pd.Series([float(text) for text in column], index=column.index)


def integer(text: str) -> int | None:
    """An integer cell exactly (int() first: a 19-digit timestamp keeps every digit, which
    int(float(text)) lost above 2**53), else float() truncated when finite; None otherwise."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) else None


def integers(column: pd.Series) -> pd.Series:
    """`integer` of every non-empty cell as Python ints (object dtype: no int64 overflow, no float
    NaN rounding of 19-digit values); None for empty or unparsable cells."""
    return pd.Series([integer(text) if text.strip() else None for text in column], index=column.index, dtype=object)
