"""Signature of the code one stage script runs: the script, every package module it imports (lazily too), their templates.

Every rule's body is the same ``run_script("NAME.py", …)`` call, so Snakemake's own code trigger
never sees an edit of the script or the package. The analysis, plan and index rules therefore carry
``code_signature(script)`` as a param: a hash of the content of the script and of the package
modules reachable from it through ``import`` statements anywhere in a module (function-level lazy
imports included, ``if TYPE_CHECKING:`` blocks too: harmless), plus the Jinja2 templates when the
template loader is reachable. Editing an analysis module changes the hotspots jobs' signature (and
the plan's, which imports the analyses' data model); editing a renderer or a template changes only
the jobs that render. The package is found where it is imported from, so an installed (non-editable)
copy is signed the same way.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import kerneltrace

PACKAGE = Path(kerneltrace.__file__).resolve().parent
NAME = "kerneltrace"
TEMPLATE_MODULE = "kerneltrace.render.templates"  # loads kerneltrace/templates/*.j2
TEMPLATES = ("templates/*.j2",)
_FROM = re.compile(r"^[ \t]*from[ \t]+(kerneltrace(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]+)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+(kerneltrace[^\n#;]*)", re.M)


def _module_file(name: str) -> Path | None:
    """kerneltrace.a.b → kerneltrace/a/b.py or kerneltrace/a/b/__init__.py (None when neither)."""
    parts = name.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    for candidate in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _imported_names(source: str) -> set[str]:
    """Package module names an import statement in ``source`` may load (names of a ``from`` too).

    A regex over the lines, not the AST (≈ 50× faster); an import-looking line in a docstring can
    only add a file to the signature, never leave one out."""
    names: set[str] = set()
    for module, imported in _FROM.findall(source):
        names.add(module)
        for item in imported.strip("()").replace("\\", " ").split(","):
            word = item.split("#")[0].split()
            if word:
                names.add(f"{module}.{word[0]}")
    for imported in _IMPORT.findall(source):
        names.update(item.split()[0] for item in imported.split(",") if item.split())
    return {name for name in names if name == NAME or name.startswith(NAME + ".")}


@functools.cache
def _imports_of(path: Path) -> frozenset[str]:
    """The package names one module imports, parsed once per process (scripts share modules)."""
    return frozenset(_imported_names(path.read_text(encoding="utf-8")))


def _with_parents(name: str) -> list[str]:
    """Importing a.b.c runs a/__init__, a/b/__init__ and a/b/c."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def reachable_files(script: Path | str) -> list[Path]:
    """The script and every package file it can load, sorted (templates included when used)."""
    script = Path(script).resolve()
    files = {script}
    seen: set[str] = set()
    pending = sorted(_imported_names(script.read_text(encoding="utf-8")))
    while pending:
        name = pending.pop()
        for part in _with_parents(name):
            if part in seen:
                continue
            seen.add(part)
            path = _module_file(part)
            if path is None:  # a name imported from a module, not a module
                continue
            files.add(path)
            pending.extend(_imports_of(path))
    if TEMPLATE_MODULE in seen:
        files.update(path for pattern in TEMPLATES for path in PACKAGE.glob(pattern))
    return sorted(files)


def _label(path: Path) -> str:
    """The name a file is signed under: package-relative, or the script's own name (moving the
    checkout changes nothing)."""
    return path.relative_to(PACKAGE.parent).as_posix() if PACKAGE in path.parents else path.name


@functools.cache
def code_signature(script: Path | str) -> str:
    """A short content hash of ``reachable_files(script)``; computed once per process (one
    Snakemake invocation: the code does not change while it runs)."""
    digest = hashlib.sha1()
    for path in reachable_files(script):
        digest.update(f"{_label(path)}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
