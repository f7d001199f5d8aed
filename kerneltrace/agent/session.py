"""One agent session: the roots it may read, the analyses it loaded, and each tool's answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kerneltrace.agent import answers
from kerneltrace.agent.cache import AnalysisCache, Loaded, result_roots
from kerneltrace.agent.roots import Roots
from kerneltrace.errors import InputError

HOTSPOT_KINDS = ("line", "instruction", "region")
MAX_TOP = 50
LIST_LIMIT = 60  # dispatch dirs listed per call


@dataclass
class Session:
    """Answers the agent tools for dispatch dirs under ``roots``; every error is an InputError."""

    roots: Roots
    cache: AnalysisCache = field(init=False)

    def __post_init__(self) -> None:
        self.cache = AnalysisCache(result_roots(self.roots.folders))

    def _dispatch(self, directory: str) -> tuple[str, Loaded]:
        path = self.roots.resolve(directory)
        if path.is_file() and path.name == "code.json":
            path = path.parent
        if not (path / "code.json").is_file():
            raise InputError("not a dispatch dir (no code.json)", self.roots.name(path),
                             "call list_dispatches() and pass one of the dirs it lists")
        return self.roots.name(path), self.cache.load(path)

    def summary(self, directory: str) -> dict:
        name, loaded = self._dispatch(directory)
        return answers.summary(name, loaded.document, loaded.plan)

    def hotspots(self, directory: str, by: str = "line", top: int = 10) -> dict:
        if by not in HOTSPOT_KINDS:
            raise InputError(f"unknown hotspot kind {by!r}", "by", f"use one of {', '.join(HOTSPOT_KINDS)}")
        if not isinstance(top, int) or isinstance(top, bool) or not 1 <= top <= MAX_TOP:
            raise InputError(f"top must be an integer from 1 to {MAX_TOP}", "top", "pass e.g. top=10")
        name, loaded = self._dispatch(directory)
        return answers.hotspots(name, loaded.document, by, top)

    def explain(self, directory: str, ident: str) -> dict:
        name, loaded = self._dispatch(directory)
        found = answers.explain(name, loaded.document, loaded.plan, loaded.sources, ident)
        if found is None:
            raise InputError(f"no finding, instruction or source line {ident!r} in this dispatch", name,
                             "use an id from summary() (finding), '#N' (instruction row), '#A-#B' (region) or "
                             "'file.py:LINE' from hotspots()")
        return found

    def next_capture(self, directory: str) -> dict:
        name, loaded = self._dispatch(directory)
        return answers.next_capture(name, loaded.document, loaded.plan)

    def compare(self, before: str, after: str) -> dict:
        from kerneltrace.compare.gate import DEFAULT_THRESHOLDS
        from kerneltrace.compare.inputs import compare_sides, load_side

        sides = []
        for given in (before, after):
            path = self.roots.resolve(given)
            sides.append(load_side(path, analyze=lambda directory: self.cache.load(Path(directory).resolve()).document))
        result = compare_sides(sides[0], sides[1], DEFAULT_THRESHOLDS, max_items=10)
        return answers.comparison(self.roots.name(self.roots.resolve(before)),
                                  self.roots.name(self.roots.resolve(after)), result)

    def list_dispatches(self, directory: str | None = None) -> dict:
        from kerneltrace.model.dispatchdir import find_dispatch_dirs

        folders = [self.roots.resolve(directory)] if directory else list(self.roots.folders)
        rows: list[dict] = []
        notes: list[str] = []
        for folder in folders:
            found = find_dispatch_dirs(folder, metadata=False)
            notes.extend(found.notes)
            rows.extend({"dir": self.roots.name(item.path.resolve()), "kernel": answers.clip(item.kernel, 100),
                         "format": item.format, "wave_files": item.wave_files} for item in found.kept)
        answer = {"dispatches": rows[:LIST_LIMIT], "count": len(rows),
                  "skipped": [answers.clip(note, 200) for note in notes[:10]],
                  "next": [f"summary(dir={rows[0]['dir']!r})"] if rows else []}
        if len(rows) > LIST_LIMIT:
            answer["more"] = f"{len(rows) - LIST_LIMIT} more: call list_dispatches(dir=SUBFOLDER)"
        return answers.bounded(answer, answers.DRILL_LIMIT, ("dispatches", "skipped"))
