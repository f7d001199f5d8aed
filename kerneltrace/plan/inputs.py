"""Inputs of the plan stage: hotspot / L2 stage documents loaded and schema-checked, their source snippets."""

from __future__ import annotations

from pathlib import Path

from kerneltrace.errors import InputError
from kerneltrace.readers.regular import read_json


def load_document(path: Path, schema_prefix: str) -> dict:
    """Read one stage JSON document and check its schema family."""
    doc = read_json(path, "stage document", fix="pass an existing JSON file written by this tool")
    schema = doc.get("schema", "") if isinstance(doc, dict) else ""
    if not isinstance(schema, str) or not schema.startswith(schema_prefix):
        raise InputError(
            f"schema is {schema!r}, expected {schema_prefix}*",
            str(path),
            "pass hotspot JSON to --hotspots and L2 JSON to --l2",
        )
    return doc


def load_plan_documents(hotspots: list[Path], l2: list[Path]) -> tuple[list[dict], list[dict]]:
    """(hotspot documents, L2 documents); at least one hotspot document is required."""
    if not hotspots:
        raise InputError("no hotspot documents given", "--hotspots", "pass at least one JSON file")
    hotspot_docs = [load_document(path, "kerneltrace.hotspots/") for path in hotspots]
    l2_docs = [load_document(path, "kerneltrace.l2/") for path in l2]
    return hotspot_docs, l2_docs


def plan_snippets(hotspot_docs: list[dict]) -> dict[str, dict[str, dict]]:
    """{dispatch_dir: {location: snippet}}: the source windows each hotspot document carries.

    The documents carry them (hotspot_report reads the sources once), so the plan renders from
    reports/ alone, without the capture.
    """
    return {doc.get("dispatch_dir"): doc.get("snippets") or {} for doc in hotspot_docs}
