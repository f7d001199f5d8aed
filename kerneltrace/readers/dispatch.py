"""Dispatch directories: find them, parse their names, locate the run's sibling CSVs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_DISPATCH_NAME = re.compile(r"^ui_output_agent_(\d+)_dispatch_(\d+)(.*)$")
_DISPATCH_ID = re.compile(r"dispatch_(\d+)")
# discover_* CSVs come from the discovery run: their Dispatch_Id numbers a different run.
_OTHER_RUN_PREFIXES = ("discover_",)


@dataclass(frozen=True)
class DispatchName:
    agent: int | None        # opaque agent handle from the dir name (not "Agent N")
    id: int | None           # Dispatch_Id of the same run
    label: str               # suffix after the id, e.g. "_after_loc_fix", or ""


@dataclass(frozen=True)
class SiblingCsvs:
    kernel_trace: list[Path]         # same run first (usable for the Dispatch_Id join)
    other_run_kernel_trace: list[Path]
    agent_info: list[Path]           # same run first, then discover_* (agent facts do not change)


def parse_dispatch_name(directory: Path | str) -> DispatchName:
    """ui_output_agent_<h>_dispatch_<d>[suffix] -> (h, d, suffix); other names -> unknowns."""
    name = Path(directory).name
    match = _DISPATCH_NAME.match(name)
    if match:
        return DispatchName(int(match.group(1)), int(match.group(2)), match.group(3))
    loose = _DISPATCH_ID.search(name)
    return DispatchName(None, int(loose.group(1)) if loose else None, "")


def find_dispatch_dirs(root: Path) -> list[Path]:
    """Every directory under root (root included) that holds a code.json, sorted."""
    root = Path(root)
    return sorted({path.parent for path in root.rglob("code.json")})


def _is_other_run(path: Path) -> bool:
    return path.name.startswith(_OTHER_RUN_PREFIXES)


def sibling_csvs(dispatch_dir: Path) -> SiblingCsvs:
    """kernel_trace / agent_info CSVs in the dispatch dir and its parent, sorted, same run first."""
    dispatch_dir = Path(dispatch_dir)
    places = [dispatch_dir, dispatch_dir.parent]
    traces: list[Path] = []
    agents: list[Path] = []
    for place in places:
        if not place.is_dir():
            continue
        traces.extend(sorted(place.glob("*kernel_trace*.csv")))
        agents.extend(sorted(place.glob("*agent_info*.csv")))
    same_run = [path for path in traces if not _is_other_run(path)]
    other_run = [path for path in traces if _is_other_run(path)]
    agents.sort(key=_is_other_run)
    return SiblingCsvs(same_run, other_run, agents)
