"""Dispatch dir names and paths: the one name pattern, its parts, and whether a path can travel as data."""

from __future__ import annotations

import os
import re
from pathlib import Path

from kerneltrace.records import record
from kerneltrace.safetext import has_unsafe, one_line

DISPATCH_RE = re.compile(r"^ui_output_agent_(\d+)_dispatch_(\d+)(.*)$", re.DOTALL)
_LOOSE_ID = re.compile(r"dispatch_(\d+)")


@record(frozen=True)
class DispatchName:
    """What a dispatch dir's name says: agent handle, dispatch id, and the suffix after the id."""

    agent: int | None   # opaque agent handle from the name (not "Agent N")
    id: int | None      # Dispatch_Id of the same run
    label: str          # suffix after the id kept verbatim, e.g. "_after_loc_fix", or ""


def parse_dispatch_name(directory: Path | str) -> DispatchName:
    """ui_output_agent_<h>_dispatch_<d>[suffix] -> (h, d, suffix); other names -> the id if any."""
    name = Path(directory).name
    match = DISPATCH_RE.match(name)
    if match:
        return DispatchName(int(match.group(1)), int(match.group(2)), match.group(3))
    loose = _LOOSE_ID.search(name)
    return DispatchName(None, int(loose.group(1)) if loose else None, "")


def is_dispatch_dir(path: Path) -> bool:
    """A dispatch dir by name, or any folder holding a code.json."""
    return bool(DISPATCH_RE.match(path.name)) or (path / "code.json").is_file()


def display_path(path: Path | str) -> str:
    """The path on one printable line: control characters and undecodable bytes escaped."""
    return one_line(os.fsencode(str(path)).decode("utf-8", "backslashreplace"))


def unsafe_path_reason(path: Path | str) -> str | None:
    """Why a path cannot be carried as data through the manifest and rule commands (None = fine)."""
    text = str(path)
    if has_unsafe(text):
        return ("its name holds a tab, newline, other control character, or a bidi or zero-width "
                "character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8"
    return None
