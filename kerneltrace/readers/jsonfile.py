"""Loading one decoder JSON file (code.json, filenames.json, snapshots.json) with one-line InputErrors."""

from __future__ import annotations

from pathlib import Path

from kerneltrace.readers.regular import parse_json, read_regular

DECODER_FIX = "re-run the decoder (rocprofv3 --att) to regenerate code.json"


def load_json_file(path: Path, what: str = "file", limit: int | None = None) -> object:
    """Parse a regular JSON file (at most ``limit`` bytes) with one-line errors for a missing,
    unreadable, non-regular (FIFO, device), oversized, truncated or non-JSON file."""
    raw = read_regular(path, what, limit, "pass a decoded ui_output_agent_*_dispatch_* directory")
    return parse_json(raw, what, str(path), DECODER_FIX)
