"""Where the Jinja2 templates live: package data under kerneltrace/templates (installed with the package)."""

from __future__ import annotations

from pathlib import Path

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "templates"
