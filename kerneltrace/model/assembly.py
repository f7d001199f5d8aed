"""The gfx target a kernel was compiled for, from device assembly in its capture bundle (hipcc --save-temps).

A capture without agent_info (a ThunderKittens build folder holding the dispatch dir next to
`<name>-hip-amdgcn-amd-amdhsa-gfx942.s`) still says which GPU the code ran on: a code object
runs only on the target it was built for, and the device assembly names it in its
`.amdgcn_target` directive. Only files of the bundle (the same bounded, owner-checked search as
the CSVs, kerneltrace/model/metadata.py) whose name says they are device assembly are read, and
one counts only when it defines the traced kernel's symbol; files that disagree decide nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.model.metadata import bundle_levels
from kerneltrace.readers.regular import read_regular

DEVICE_ASSEMBLY = ("*amdgcn*.s",)
ASSEMBLY_LIMIT = 64 * 1024 * 1024  # bytes of one assembly file read at most
_TARGET = re.compile(r'^\s*\.amdgcn_target\s+"[^"]*?(gfx[0-9a-f]+)', re.MULTILINE)


def _defines(text: str, symbols: list[str]) -> bool:
    return any(re.search(rf"^{re.escape(symbol)}:", text, re.MULTILINE) for symbol in symbols)


def assembly_target(dispatch_dir: Path, symbols: list[str]) -> tuple[str, Path] | None:
    """(gfx target, file) from the nearest bundle level whose device assembly defines one of
    ``symbols``; None when none does or the files found name different targets."""
    wanted = [s for s in symbols if s and not s.startswith(";")]
    if not wanted:
        return None
    for level in bundle_levels(dispatch_dir, DEVICE_ASSEMBLY):
        found: dict[str, Path] = {}
        for path in level:
            try:
                text = read_regular(path, "device assembly", ASSEMBLY_LIMIT).decode("utf-8", "replace")
            except (InputError, OSError):
                continue
            target = _TARGET.search(text)
            if target and _defines(text, wanted):
                found.setdefault(target.group(1).lower(), path)
        if len(found) == 1:
            ((target, path),) = found.items()
            return target, path
        if found:
            return None
    return None
