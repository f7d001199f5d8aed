"""Inputs of the plan stage: hotspot / L2 stage documents loaded and schema-checked, their source snippets."""

from __future__ import annotations

from pathlib import Path

from kerneltrace.document.hotspot_report import (
    DROPPED_SCHEMA,  # a dispatch not analysed (--drop-on-error)
)
from kerneltrace.errors import InputError
from kerneltrace.readers.regular import read_json


def load_document(path: Path, schema_prefix: str | tuple[str, ...]) -> dict:
    """Read one stage JSON document and check its schema family."""
    doc = read_json(path, "stage document", fix="pass an existing JSON file written by this tool")
    schema = doc.get("schema", "") if isinstance(doc, dict) else ""
    prefixes = (schema_prefix,) if isinstance(schema_prefix, str) else schema_prefix
    if not isinstance(schema, str) or not schema.startswith(prefixes):
        raise InputError(
            f"schema is {schema!r}, expected {' or '.join(f'{prefix}*' for prefix in prefixes)}",
            str(path),
            "pass hotspot JSON to --hotspots and L2 JSON to --l2",
        )
    return doc




def load_plan_documents(hotspots: list[Path], l2: list[Path], dropped: list[dict] | None = None
                        ) -> tuple[list[dict], list[dict], list[dict], list[Path]]:
    """(hotspot documents, L2 documents, dropped dispatches, the paths of those hotspot documents).
    A ``kerneltrace.dropped/1`` document given as a hotspot document is a dropped dispatch;
    ``dropped`` adds those of discovery. At least one hotspot document, or one dropped dispatch to
    explain why there is none, is required."""
    documents = [load_document(path, ("kerneltrace.hotspots/", DROPPED_SCHEMA)) for path in hotspots]
    hotspot_docs = [doc for doc in documents if doc["schema"] != DROPPED_SCHEMA]
    kept_paths = [path for path, doc in zip(hotspots, documents, strict=True) if doc["schema"] != DROPPED_SCHEMA]
    dropped = list(dropped or []) + [
        {"dispatch_dir": doc.get("dispatch_dir"), "stage": "analysis", "reason": str(doc.get("reason") or "?")}
        for doc in documents if doc["schema"] == DROPPED_SCHEMA]
    if not hotspot_docs and not dropped:
        raise InputError("no hotspot documents given", "--hotspots", "pass at least one JSON file")
    l2_docs = [load_document(path, "kerneltrace.l2/") for path in l2]
    return hotspot_docs, l2_docs, dropped, kept_paths


def discovery_dropped(notes: list[str]) -> list[dict]:
    """Dropped entries of the discovery notes ("dropped PATH: reason", "skipped PATH: reason")."""
    entries = []
    for note in notes:
        verb, _, rest = note.partition(" ")
        if verb in ("dropped", "skipped"):
            path, _, reason = rest.partition(": ")
            entries.append({"dispatch_dir": path, "stage": "discovery", "reason": reason or verb})
    return entries


def plan_snippets(hotspot_docs: list[dict]) -> dict[str, dict[str, dict]]:
    """{dispatch_dir: {location: snippet}}: the source windows each hotspot document carries.

    The documents carry them (hotspot_report reads the sources once), so the plan renders from
    reports/ alone, without the capture.
    """
    return {doc.get("dispatch_dir"): doc.get("snippets") or {} for doc in hotspot_docs}
