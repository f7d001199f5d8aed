"""Loading one decoder JSON file (code.json, filenames.json, snapshots.json) with one-line InputErrors."""

from __future__ import annotations

import json
from pathlib import Path

from kerneltrace.errors import InputError

DECODER_FIX = "re-run the decoder (rocprofv3 --att) to regenerate code.json"


def load_json_file(path: Path, what: str = "file") -> object:
    """json.loads a file with one-line errors for missing, unreadable, truncated or non-JSON content."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found", str(path), "pass a decoded ui_output_agent_*_dispatch_* directory") from None
    except IsADirectoryError:
        raise InputError(f"{what} is a directory", str(path), "pass the file's parent directory") from None
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror}", str(path), "check permissions") from None
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8 JSON", str(path), DECODER_FIX) from None
    except json.JSONDecodeError as err:
        problem = "is empty" if not raw.strip() else f"is not valid JSON (truncated?): {err.msg} at line {err.lineno} column {err.colno}"
        raise InputError(f"{what} {problem}", str(path), DECODER_FIX) from None
    except RecursionError:
        # json's C parser recurses per nesting level: a hostile file must not end in a traceback
        raise InputError(f"{what} is nested too deeply to be a decoder output", str(path), DECODER_FIX) from None
