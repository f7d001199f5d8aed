"""Kernel discovery: rocprofv3 kernel stats (CSV or rocpd results.db) → ranked table + selection."""

from __future__ import annotations

import csv
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kerneltrace.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

TSV_COLUMNS = ("rank", "name", "calls", "total_us", "avg_us", "pct_gpu_time", "id", "selected")


@dataclass(frozen=True)
class KernelRow:
    """One kernel of the discovery run, ranked by total GPU time."""

    rank: int
    name: str
    calls: int
    total_us: float
    avg_us: float
    pct_gpu_time: float
    id: str  # safe wildcard value (k000, k001, ...) — the real name stays in `name`
    selected: bool = False


def _ranked(raw: list[tuple[str, int, float]]) -> list[KernelRow]:
    """(name, calls, total_ns) → KernelRows sorted by total time, with shares and safe ids."""
    raw = sorted(raw, key=lambda item: (-item[2], item[0]))
    total_ns = sum(item[2] for item in raw) or 1.0
    return [KernelRow(rank=i + 1, name=name, calls=calls, total_us=total_ns_k / 1000.0,
                      avg_us=(total_ns_k / calls / 1000.0) if calls else 0.0,
                      pct_gpu_time=100.0 * total_ns_k / total_ns, id=f"k{i:03d}")
            for i, (name, calls, total_ns_k) in enumerate(raw)]


def read_kernel_stats_csv(path: Path) -> list[KernelRow]:
    """``*_kernel_stats.csv`` (read by kerneltrace.readers.kernel_stats: Name, Calls, TotalDurationNs) ranked."""
    # lazy: pandas, off the Snakefile's parse (common.smk imports this module)
    from kerneltrace.readers.kernel_stats import read_kernel_stats

    raw = []
    for stat in read_kernel_stats(Path(path)):
        if not stat.name:
            continue
        if stat.calls is None or stat.total_duration_ns is None:
            raise InputError(f"non-numeric Calls or TotalDurationNs for kernel {stat.name!r}", str(path),
                             "regenerate the stats CSV")
        raw.append((stat.name, stat.calls, float(stat.total_duration_ns)))
    return _ranked(raw)


KERNELS_VIEW = 'SELECT name, COUNT(*) AS calls, SUM("end" - start) AS total_ns FROM kernels GROUP BY name'
KERNEL_TABLES = ('SELECT S.display_name AS name, COUNT(*) AS calls, SUM(K."end" - K.start) AS total_ns '
                 "FROM rocpd_kernel_dispatch K "
                 "JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid GROUP BY S.display_name")


def read_rocpd_kernel_stats(path: Path) -> list[KernelRow]:
    """rocpd ``results.db`` (read-only): the ``kernels`` view, else the real tables (§7), as a pandas frame."""
    import pandas as pd  # lazy: common.smk imports this module when the Snakefile is parsed

    # as_uri() percent-encodes '?', '#' and '%': a raw path would let a file name inject URI parameters
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as err:
        raise InputError(f"cannot open rocpd database: {err}", str(path), "check the file") from err
    try:
        try:
            frame = pd.read_sql(KERNELS_VIEW, conn, coerce_float=False)
        except (sqlite3.Error, pd.errors.DatabaseError):
            frame = pd.read_sql(KERNEL_TABLES, conn, coerce_float=False)
    except (sqlite3.Error, pd.errors.DatabaseError) as err:
        raise InputError(f"not a rocpd database ({_cause(err)})", str(path),
                         "pass a rocprofv3 *_results.db (rocpd output, ROCm >= 7.0)") from err
    finally:
        conn.close()
    return _ranked(_kernel_totals(frame.astype(object), str(path)))


def _cause(err: Exception) -> object:
    """The sqlite3 error under pandas' DatabaseError (pandas words it "Execution failed on sql ...")."""
    return err.__cause__ if isinstance(err.__cause__, sqlite3.Error) else err


def _kernel_totals(frame: pd.DataFrame, where: str) -> list[tuple[str, int, float]]:
    """(name, calls, total ns) per row; SQLite is dynamically typed, so a total that is not a number is refused."""
    import pandas as pd

    totals = []
    for name, calls, total in zip(frame["name"], frame["calls"], frame["total_ns"], strict=True):
        # pandas reads NULL as None, or as NaN in a column it made numeric: no finished dispatch
        total = 0 if total is None or pd.isna(total) else total
        name = None if name is None or pd.isna(name) else name  # str(None), as sqlite3 rows gave it
        if isinstance(total, bool) or not isinstance(total, int | float):
            raise InputError(f"kernel {str(name)!r}: total time (end - start) is {total!r}, not a number", where,
                             "pass an unmodified rocprofv3 rocpd database")
        totals.append((str(name), int(calls), float(total)))
    return totals


def find_stats_file(out_dir: Path) -> Path | None:
    """The discovery result in a rocprofv3 output dir: kernel stats CSV first, then results.db."""
    for pattern in ("*kernel_stats.csv", "*results.db"):
        found = sorted(out_dir.rglob(pattern))
        if found:
            return found[0]
    return None


def read_discovery(path: Path) -> list[KernelRow]:
    return read_rocpd_kernel_stats(path) if path.suffix == ".db" else read_kernel_stats_csv(path)


def select_kernels(rows: list[KernelRow], kernel_regex: str | None, top_kernels: int) -> list[KernelRow]:
    """Mark the chosen kernels: regex (Python search on the name) if given, else the top N by time."""
    if not rows:
        raise InputError("the discovery run recorded no kernel dispatches", "discovery",
                         "check that the command launches GPU kernels (and runs on a visible GPU)")
    if kernel_regex:
        try:
            pattern = re.compile(kernel_regex)
        except re.error as err:
            raise InputError(f"invalid kernel regex {kernel_regex!r}: {err}", "config kernel",
                             "use a valid regular expression") from err
        chosen = {row.id for row in rows if pattern.search(row.name)}
        if not chosen:
            top = "; ".join(f"{row.rank}. {row.name} ({row.pct_gpu_time:.1f}%)" for row in rows[:10])
            raise InputError(f"no kernel matches kernel={kernel_regex!r}; top kernels found: {top}",
                             "config kernel", "set kernel to a regex matching one of these names, "
                             "or drop it to take the top_kernels by GPU time")
    else:
        chosen = {row.id for row in rows[: max(top_kernels, 1)]}
    return [KernelRow(**{**row.__dict__, "selected": row.id in chosen}) for row in rows]


def to_tsv(rows: list[KernelRow]) -> str:
    lines = ["\t".join(TSV_COLUMNS)]
    for row in rows:
        name = row.name.replace("\t", " ").replace("\n", " ")
        lines.append(f"{row.rank}\t{name}\t{row.calls}\t{row.total_us:.3f}\t{row.avg_us:.3f}\t"
                     f"{row.pct_gpu_time:.2f}\t{row.id}\t{'yes' if row.selected else 'no'}")
    return "\n".join(lines) + "\n"


def read_tsv(path: Path) -> list[KernelRow]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [KernelRow(rank=int(r["rank"]), name=r["name"], calls=int(r["calls"]),
                          total_us=float(r["total_us"]), avg_us=float(r["avg_us"]),
                          pct_gpu_time=float(r["pct_gpu_time"]), id=r["id"],
                          selected=r["selected"] == "yes") for r in reader]


def to_markdown(rows: list[KernelRow]) -> str:
    from kerneltrace.render.markdown import md_code_cell as cell
    from kerneltrace.render.markdown import md_text_cell

    lines = ["| rank | id | kernel | calls | total µs | avg µs | % GPU time | traced |",
             "|---:|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        lines.append(f"| {row.rank} | {md_text_cell(row.id)} | {cell(row.name)} | {row.calls} | {row.total_us:.1f} | "
                     f"{row.avg_us:.2f} | {row.pct_gpu_time:.1f} | {'yes' if row.selected else ''} |")
    return "\n".join(lines) + "\n"
