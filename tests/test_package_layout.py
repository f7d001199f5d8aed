"""The package layout: templates are package data, so an installed package can render."""

import tomllib
from pathlib import Path

import kerneltrace
from kerneltrace.render.templates import TEMPLATE_DIR

REPO = Path(__file__).resolve().parents[1]


def test_templates_are_package_data_inside_the_package():
    package = Path(kerneltrace.__file__).resolve().parent
    assert TEMPLATE_DIR.parent == package
    names = {p.name for p in TEMPLATE_DIR.glob("*.j2")}
    assert {"plan.md.j2", "plan.html.j2", "index.html.j2"} <= names
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = declared["kerneltrace"]
    assert all(any(p.relative_to(package).match(pat) for pat in patterns) for p in TEMPLATE_DIR.glob("*.j2"))
