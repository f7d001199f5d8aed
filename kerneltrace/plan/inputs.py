"""Inputs of the plan stage: hotspot / L2 stage documents loaded and schema-checked, their source snippets."""

from __future__ import annotations

import json
from pathlib import Path

from kerneltrace.errors import InputError


def load_document(path: Path, schema_prefix: str) -> dict:
    """Read one stage JSON document and check its schema family."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise InputError("file not found", str(path), "pass an existing JSON file") from err
    except IsADirectoryError:
        raise InputError("is a directory", str(path), "pass the JSON files in it") from None
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror})", str(path), "check permissions") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"not valid JSON ({err})", str(path), "regenerate the document") from err
    except RecursionError:
        # json's C parser recurses per nesting level: a hostile file must not end in a traceback
        raise InputError("nested too deeply to be a stage document", str(path),
                         "regenerate the document") from None
    schema = doc.get("schema", "") if isinstance(doc, dict) else ""
    if not schema.startswith(schema_prefix):
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
