"""filenames.json: gfxip/gfxv, PC-sampling flags and the wave-file index of a dispatch dir."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.jsonfile import load_json_file
from kerneltrace.readers.regular import JSON_METADATA_LIMIT


@dataclass(frozen=True)
class WaveFileEntry:
    name: str
    se: str
    simd: str
    slot: str
    begin: int | None
    end: int | None


@dataclass(frozen=True)
class FilenamesInfo:
    gfxip: int | None            # 9 for gfx90a, gfx942 and gfx950 alike: cannot tell them apart
    gfxv: str | None             # "vega" (gfxip <= 9) or "navi"
    version: str | None
    pc_sampling: bool
    counter_names: list[str]
    wave_files: list[WaveFileEntry]
    path: Path


def _entries(tree: object) -> list[WaveFileEntry]:
    entries: list[WaveFileEntry] = []
    if not isinstance(tree, dict):
        return entries
    for se, simds in tree.items():
        for simd, slots in (simds or {}).items() if isinstance(simds, dict) else ():
            for slot, waves in (slots or {}).items() if isinstance(slots, dict) else ():
                for _wave, item in (waves or {}).items() if isinstance(waves, dict) else ():
                    if isinstance(item, list) and item and isinstance(item[0], str):
                        begin = item[1] if len(item) > 1 and isinstance(item[1], int) else None
                        end = item[2] if len(item) > 2 and isinstance(item[2], int) else None
                        entries.append(WaveFileEntry(item[0], str(se), str(simd), str(slot), begin, end))
    return entries


def read_filenames(path: Path) -> FilenamesInfo:
    """Parse filenames.json (v3, PC-sampling and legacy layouts)."""
    path = Path(path)
    document = load_json_file(path, "filenames.json", JSON_METADATA_LIMIT)
    if not isinstance(document, dict):
        raise InputError("filenames.json is not a JSON object", str(path), "re-run the decoder")
    gfxip = document.get("gfxip")
    counters = document.get("counter_names") or []
    return FilenamesInfo(
        gfxip=gfxip if isinstance(gfxip, int) else None,
        gfxv=document.get("gfxv") if isinstance(document.get("gfxv"), str) else None,
        version=document.get("version") if isinstance(document.get("version"), str) else None,
        pc_sampling=bool(document.get("pc_sampling")),
        counter_names=[str(name) for name in counters] if isinstance(counters, list) else [],
        wave_files=_entries(document.get("wave_filenames")),
        path=path,
    )
