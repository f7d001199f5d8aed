"""The pipeline's dispatches.tsv manifest: one row per dispatch dir, paths carried as data, never re-parsed."""

from __future__ import annotations

import csv
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.model.dispatchdir import DispatchDir
from kerneltrace.model.naming import unsafe_path_reason
from kerneltrace.safetext import FORMULA_STARTS, tsv_cell

MANIFEST_COLUMNS = ("id", "kernel_id", "kernel", "dispatch_dir", "label", "agent", "dispatch",
                    "kernel_trace_csv", "agent_info_csv", "pmc_files", "source", "wave_files")
PATH_COLUMNS = ("dispatch_dir", "kernel_trace_csv", "agent_info_csv")
TEXT_COLUMNS = ("kernel", "label")  # shown escaped and formula-quoted (safetext.tsv_cell)


def manifest_rows(dirs: list[DispatchDir], *, id_prefix: str = "d", kernel_id: str = "",
                  source: str = "dir") -> list[dict[str, str]]:
    rows = []
    for number, item in enumerate(dirs):
        rows.append({
            "id": f"{id_prefix}{number:03d}", "kernel_id": kernel_id, "kernel": item.kernel,
            "dispatch_dir": str(item.path), "label": item.label,
            "agent": "" if item.agent is None else str(item.agent),
            "dispatch": "" if item.dispatch is None else str(item.dispatch),
            "kernel_trace_csv": str(item.kernel_trace_csv or ""),
            "agent_info_csv": str(item.agent_info_csv or ""),
            "pmc_files": ";".join(str(p) for p in item.pmc_files), "source": source,
            "wave_files": str(item.wave_files)})
    return rows


def _clean(value: str) -> str:
    """A text cell (kernel name, label): escaped and formula-quoted for spreadsheets (tsv_cell)."""
    return tsv_cell(value)


def _unquote(value: str) -> str:
    """A text cell as read back: the formula quote of tsv_cell removed."""
    return value[1:] if value.startswith("'") and value[1:].startswith(FORMULA_STARTS) else value


def _path_value(row: dict[str, str], column: str) -> str:
    value = row.get(column, "")
    paths = value.split(";") if column == "pmc_files" else [value]
    for path in paths:
        why = unsafe_path_reason(path) if path else None
        if why or (column == "pmc_files" and ";" in path):
            # a path rewritten here would name another capture: refuse instead
            raise InputError(f"cannot write {column} into the manifest: {why}", repr(path),
                             "rename the folder (discovery skips such names)")
    return value


def manifest_tsv(rows: list[dict[str, str]]) -> str:
    """The TSV text; text columns are flattened to one line, paths must already be safe."""
    lines = ["\t".join(MANIFEST_COLUMNS)]
    for row in rows:
        lines.append("\t".join(
            _path_value(row, col) if col in PATH_COLUMNS or col == "pmc_files" else _clean(row.get(col, ""))
            for col in MANIFEST_COLUMNS))
    return "\n".join(lines) + "\n"


def read_manifest(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    for number, row in enumerate(rows, start=2):
        if None in row or any(value is None for value in row.values()):
            raise InputError(f"line {number} does not have {len(MANIFEST_COLUMNS)} columns", str(path),
                             "delete the file and re-run (it is regenerated)")
        for column in TEXT_COLUMNS:
            if column in row:
                row[column] = _unquote(row[column])
    return rows
