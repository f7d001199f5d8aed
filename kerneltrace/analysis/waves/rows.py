"""References to code.json rows inside the `waves` object: {index, asm, source} of one row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerneltrace.readers.codejson import CodeRow


def row_ref(rows: dict[int, CodeRow], index: int) -> dict[str, Any]:
    """The row's index, asm and source (asm/source None when the row is not in code.json)."""
    row = rows.get(index)
    return {"index": index, "asm": row.asm if row else None, "source": row.source if row else None}
