"""Analyses loaded once per dispatch dir and kept for the session (the pipeline's results reused)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kerneltrace import __version__
from kerneltrace.errors import InputError
from kerneltrace.readers.snapshots import SourceIndex, read_snapshots
from kerneltrace.readers.wavefile.reader import wave_files

# The pipeline's manifests: results/<run>/dispatches.tsv rows name each dir's hotspot document
# results/<run>/hotspots/<id>.json.
MANIFEST_GLOB = "results/*/dispatches.tsv"


@dataclass(frozen=True)
class Signature:
    """What a loaded analysis depends on, cheap to read on every call (a few stats, no listing):
    code.json's size and mtime, the folder's mtime (wave files added or removed) and
    filenames.json's mtime (the decoder's wave index, rewritten with the wave files)."""

    code_size: int
    code_mtime_ns: int
    folder_mtime_ns: int
    index_mtime_ns: int


@dataclass
class Loaded:
    """One dispatch dir's analysis: the hotspot document, its plan entry, its source copies."""

    path: Path
    document: dict
    plan: dict
    sources: SourceIndex
    origin: str  # "analysed" | "results/<run>/hotspots/<id>.json" (reused from the pipeline)


@dataclass
class CacheStats:
    """How often the cache analysed a dir, reused the pipeline's document, or answered from memory."""

    analysed: int = 0
    reused: int = 0
    hits: int = 0


def signature(path: Path) -> Signature:
    try:
        code = (path / "code.json").stat()
        folder = path.stat()
    except OSError:
        raise InputError("no code.json in this directory (not a decoded ATT dispatch dir)", str(path),
                         "call list_dispatches() and pass one of the dirs it lists") from None
    try:
        index = (path / "filenames.json").stat().st_mtime_ns
    except OSError:
        index = 0
    return Signature(code.st_size, code.st_mtime_ns, folder.st_mtime_ns, index)


def results_index(result_roots: tuple[Path, ...]) -> dict[Path, list[Path]]:
    """Resolved dispatch dir -> the pipeline's hotspot documents for it (one per run), from the
    manifests under each root; unreadable manifests are skipped."""
    from kerneltrace.pipeline.manifest import read_manifest

    index: dict[Path, list[Path]] = {}
    for root in result_roots:
        for manifest in sorted(root.glob(MANIFEST_GLOB)):
            try:
                rows = read_manifest(manifest)
            except (OSError, UnicodeDecodeError, InputError):
                continue
            for row in rows:
                try:
                    directory = Path(row.get("dispatch_dir") or "").resolve()
                except (OSError, RuntimeError):
                    continue
                document = manifest.parent / "hotspots" / f"{row.get('id')}.json"
                index.setdefault(directory, []).append(document)
    return index


def fresh_results_document(sig: Signature, has_waves: bool, candidates: list[Path]) -> tuple[dict, Path] | None:
    """The pipeline's hotspot document for a dir when it is newer than the capture's files and was
    written by this version with the same wave analysis (else None: analyse again)."""
    newest = max(sig.code_mtime_ns, sig.folder_mtime_ns, sig.index_mtime_ns)
    for candidate in candidates:
        try:
            if candidate.stat().st_mtime_ns < newest:
                continue
            document = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(document, dict):
            continue
        version = (document.get("tool") or {}).get("version")
        if version == __version__ and bool(document.get("waves")) == has_waves:
            return document, candidate
    return None


@dataclass
class AnalysisCache:
    """Loads each dispatch dir once per session; a changed code.json or wave file reloads it."""

    result_roots: tuple[Path, ...] = ()
    stats: CacheStats = field(default_factory=CacheStats)
    _entries: dict[Path, tuple[Signature, Loaded]] = field(default_factory=dict)
    _results: dict[Path, list[Path]] | None = None

    def load(self, path: Path) -> Loaded:
        sig = signature(path)
        cached = self._entries.get(path)
        if cached and cached[0] == sig:
            self.stats.hits += 1
            return cached[1]
        loaded = self._load(path, sig, bool(wave_files(path)))
        self._entries[path] = (sig, loaded)
        return loaded

    def _load(self, path: Path, sig: Signature, has_waves: bool) -> Loaded:
        from kerneltrace.plan.summary import dispatch_entry

        if self._results is None:
            self._results = results_index(self.result_roots)
        reused = fresh_results_document(sig, has_waves, self._results.get(path, []))
        if reused:
            document, origin = reused[0], str(reused[1])
            try:
                sources = read_snapshots(path)
            except InputError:
                sources = SourceIndex({})
            self.stats.reused += 1
        else:
            from kerneltrace.document.hotspot_report import run_analysis

            analysis = run_analysis(path, waves=has_waves)
            document, sources, origin = analysis.document, analysis.sources, "analysed"
            self.stats.analysed += 1
        return Loaded(path, document, dispatch_entry(document, None), sources, origin)


def result_roots(roots: tuple[Path, ...]) -> tuple[Path, ...]:
    """The roots holding a pipeline's results/ (only under the roots: nothing else is read)."""
    return tuple(root for root in roots if (root / "results").is_dir())
