"""Resolve a compare argument (hotspot JSON, dispatch dir, summary.json, reports/ folder) to documents."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltrace.compare.document import (
    compare,
    compare_sets,
    keyed_dispatches,
    summary_level_doc,
)
from kerneltrace.compare.gate import Thresholds
from kerneltrace.errors import InputError
from kerneltrace.model.naming import is_dispatch_dir
from kerneltrace.readers.regular import read_json as read_regular_json
from kerneltrace.thresholds import DEFAULT_COMPARE, CompareThresholds

HOTSPOT_SCHEMA_PREFIX = "kerneltrace.hotspots/"
SUMMARY_SCHEMA = "kerneltrace.summary/1"
Analyzer = Callable[[Path], dict]


@dataclass
class Side:
    """One side of a comparison: a single dispatch document or several keyed ones."""

    label: str
    single: dict | None = None
    keyed: dict[str, Mapping[str, Any]] | None = None


def read_json(path: Path) -> Any:
    return read_regular_json(path, "JSON document", fix="pass a hotspot JSON, a summary.json, a dispatch "
                             "dir or a reports/ folder")


def analyzer(arch: str | None = None) -> Analyzer:
    """The in-process hotspot analysis of a dispatch dir given to compare (``arch`` overrides)."""
    def analyze(dispatch_dir: Path) -> dict:
        from kerneltrace.document.hotspot_report import (
            analyze_dispatch,  # heavy: only when a dir is given
        )

        # Wave files give the wave lifetimes the time estimate is based on (compare/estimate.py).
        from kerneltrace.readers.wavefile.names import WAVE_FILE_GLOB

        has_waves = next(dispatch_dir.glob(WAVE_FILE_GLOB), None) is not None
        return analyze_dispatch(dispatch_dir, waves=has_waves, arch=arch)

    return analyze


_default_analyzer = analyzer()


def hotspot_docs_beside(summary_path: Path, dispatch_dirs: set[str] | None = None) -> list[dict]:
    """Full hotspot JSONs of the run that wrote ``reports/{run}/summary.json``.

    They sit in ``hotspots/`` beside the summary (a reports/ folder alone is a complete
    baseline). ``dispatch_dirs`` (from the summary) drops stale documents of dispatches no longer
    in the run.
    """
    folder = summary_path.resolve().parent / "hotspots"
    docs = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        doc = read_json(path)
        if not (isinstance(doc, dict) and str(doc.get("schema", "")).startswith(HOTSPOT_SCHEMA_PREFIX)):
            continue
        if dispatch_dirs and str(doc.get("dispatch_dir")) not in dispatch_dirs:
            continue
        docs.append(doc)
    return docs


def summary_dispatch_dirs(summary: Mapping[str, Any]) -> set[str]:
    """Dispatch dirs a summary.json lists (empty when it names none)."""
    dirs = set()
    for kernel in summary.get("kernels") or []:
        for entry in (kernel.get("dispatches") or []) if isinstance(kernel, Mapping) else []:
            if isinstance(entry, Mapping) and entry.get("dispatch_dir"):
                dirs.add(str(entry["dispatch_dir"]))
    return dirs


def attach_l2(docs: list[dict], summary: Mapping[str, Any] | None) -> list[dict]:
    """Copies of hotspot docs carrying the summary's per-dispatch L2 metrics (by dispatch dir)."""
    l2_by_dir = {}
    for kernel in (summary or {}).get("kernels") or []:
        for entry in kernel.get("dispatches") or [] if isinstance(kernel, Mapping) else []:
            if isinstance(entry, Mapping) and entry.get("l2"):
                l2_by_dir[str(entry.get("dispatch_dir"))] = entry["l2"]
    return [dict(doc, l2=l2_by_dir.get(str(doc.get("dispatch_dir")))) for doc in docs]


def docs_from_summary(summary: Mapping[str, Any], summary_path: Path,
                      prefix: str = "") -> dict[str, Mapping[str, Any]]:
    """Keyed dispatch documents of a summary: full hotspot JSONs when kept, else summary level."""
    if not isinstance(summary.get("kernels"), list):
        raise InputError("summary document has no 'kernels' list", str(summary_path),
                         "regenerate it with the plan stage")
    full = hotspot_docs_beside(summary_path, summary_dispatch_dirs(summary))
    if full:
        return keyed_dispatches(attach_l2(full, summary), prefix)
    entries = []
    for kernel in summary["kernels"]:
        if not isinstance(kernel, Mapping):
            continue
        for entry in kernel.get("dispatches") or []:
            if isinstance(entry, Mapping):
                entries.append(summary_level_doc(kernel.get("name"), entry))
    return keyed_dispatches(entries, prefix)


def load_side(path: Path, *, analyze: Analyzer | None = None, run: str | None = None) -> Side:
    """Load BEFORE or AFTER; ``run`` picks one run inside a reports/ folder."""
    path = Path(path)
    if not path.exists():
        raise InputError("does not exist", str(path),
                         "pass a hotspot JSON, a dispatch dir, a summary.json or a reports/ folder")
    if path.is_dir():
        if is_dispatch_dir(path):
            return Side(str(path), single=(analyze or _default_analyzer)(path))
        if (path / "summary.json").is_file():
            return load_side(path / "summary.json")
        runs = sorted(p.parent for p in path.glob("*/summary.json"))
        if run is not None:
            runs = [p for p in runs if p.name == run]
        if not runs:
            raise InputError("no code.json, summary.json or */summary.json found", str(path),
                             "pass a dispatch dir, a run's reports/{run}/ folder or reports/")
        if len(runs) == 1:
            return load_side(runs[0] / "summary.json")
        keyed: dict[str, Mapping[str, Any]] = {}
        for run_dir in runs:
            summary_path = run_dir / "summary.json"
            keyed.update(docs_from_summary(read_json(summary_path), summary_path,
                                           prefix=f"{run_dir.name}:"))
        return Side(str(path), keyed=keyed)
    doc = read_json(path)
    schema = str(doc.get("schema", "")) if isinstance(doc, dict) else ""
    if schema.startswith(HOTSPOT_SCHEMA_PREFIX):
        return Side(str(path), single=doc)
    if schema == SUMMARY_SCHEMA:
        return Side(str(path), keyed=docs_from_summary(doc, path))
    raise InputError(f"unsupported document (schema '{schema or 'none'}')", str(path),
                     f"pass a {HOTSPOT_SCHEMA_PREFIX}N or {SUMMARY_SCHEMA} JSON")


def compare_sides(before: Side, after: Side, thresholds: Thresholds,
                  max_items: int = 50, limits: CompareThresholds = DEFAULT_COMPARE) -> dict[str, Any]:
    """Dispatch vs dispatch, or run vs run (dispatches matched by kernel name and order);
    `thresholds`: the gate's, `limits`: the compare's work checks."""
    if before.single is not None and after.single is not None:
        return compare(before.single, after.single, thresholds, max_items=max_items, limits=limits)
    before_keyed = before.keyed or keyed_dispatches([before.single])
    after_keyed = after.keyed or keyed_dispatches([after.single])
    if (before.single is not None) != (after.single is not None):
        # A dispatch against a run: compare it with the run's only dispatch of that kernel.
        if len(before_keyed) != 1 or len(after_keyed) != 1:
            raise InputError("cannot compare one dispatch with a run of several dispatches",
                             f"{before.label} vs {after.label}",
                             "pass two dispatches, or two runs' summary.json / reports/ folders")
        before_keyed = {"dispatch": next(iter(before_keyed.values()))}
        after_keyed = {"dispatch": next(iter(after_keyed.values()))}
    return compare_sets(before_keyed, after_keyed, thresholds, max_items=max_items, limits=limits)
