"""The package's imports point one way (base → facts → readers → model → analyses → hotspot document →
comparison → plan → renderers → rocprofv3/pipeline/synth) and form no cycle. Lazy imports inside
functions count; imports under `if TYPE_CHECKING:` do not (they never run)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kerneltrace"

# Lowest first. A module belongs to the longest prefix listed; it may import its own layer and
# the layers below it, never one above. Where a newcomer's module goes: docs/architecture.md.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("kerneltrace", "kerneltrace.errors", "kerneltrace.atomic", "kerneltrace.sourceloc",
              "kerneltrace.records", "kerneltrace.numfmt", "kerneltrace.filecache")),
    ("facts", ("kerneltrace.isa", "kerneltrace.arch", "kerneltrace.counters", "kerneltrace.thresholds")),
    ("readers", ("kerneltrace.readers",)),
    ("model", ("kerneltrace.model",)),
    ("analyses", ("kerneltrace.analysis", "kerneltrace.counters.planner")),
    ("document", ("kerneltrace.document",)),
    ("comparison", ("kerneltrace.compare",)),
    ("plan", ("kerneltrace.plan",)),
    ("renderers", ("kerneltrace.render",)),
    ("integration", ("kerneltrace.rocprof", "kerneltrace.pipeline", "kerneltrace.synth", "kerneltrace.agent")),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> int:
    best, length = None, -1
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = number, len(prefix)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    return skipped


def imports() -> dict[str, set[str]]:
    """module -> the package modules it imports (at any depth of the file)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [f"{node.module}.{alias.name}" for alias in node.names]
            for target in targets:
                if target.split(".")[0] != "kerneltrace":
                    continue
                resolved = _resolve(target)
                if resolved and resolved != module:
                    graph[module].add(resolved)
    return graph


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_import_points_up():
    upward = []
    for module, targets in imports().items():
        for target in targets:
            if layer_of(target) > layer_of(module):
                upward.append(f"{module} ({LAYERS[layer_of(module)][0]}) -> {target} "
                              f"({LAYERS[layer_of(target)][0]})")
    assert not upward, "imports pointing up:\n" + "\n".join(sorted(upward))


def test_no_import_cycles():
    graph = imports()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("edge, upward", [
    (("kerneltrace.readers.csvs", "kerneltrace.model.metadata"), True),
    (("kerneltrace.render.plan", "kerneltrace.analysis.hotspots"), False),
    (("kerneltrace.compare.inputs", "kerneltrace.document.hotspot_report"), False),
    (("kerneltrace.plan.inputs", "kerneltrace.render.plan"), True),
])
def test_the_layer_order_itself(edge, upward):
    source, target = edge
    assert (layer_of(target) > layer_of(source)) is upward


def test_every_module_is_in_the_architecture_module_index():
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    index = text[text.index("## Module index"):]
    missing = [str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.py"))
               if f"\n{path.relative_to(PACKAGE)} " not in index]
    assert not missing, f"add to docs/architecture.md (Module index): {missing}"


# ---- one home per name ---------------------------------------------------------------------------

def _top_level_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names a module defines, names it lists in __all__)."""
    defined: set[str] = set()
    public: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
            defined |= names
            if "__all__" in names and isinstance(node.value, ast.List | ast.Tuple):
                public |= {elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)}
    return defined, public


def test_names_are_imported_from_the_module_that_defines_them():
    """No re-export shims: `from kerneltrace.X import name` needs `name` defined in X (or X a
    package holding a module `name`), unless X declares it in __all__ as its public API (the
    synthetic generator's facade, the wave-file reader)."""
    homes = {name: _top_level_names(ast.parse(path.read_text())) for name, path in MODULES.items()}
    sources = [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "scripts").glob("*.py"),
               *(PACKAGE.parent / "tests").glob("*.py"), *(PACKAGE.parent / "bench").glob("*.py")]
    misplaced = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in homes):
                continue
            defined, public = homes[node.module]
            for alias in node.names:
                if alias.name not in defined | public and f"{node.module}.{alias.name}" not in MODULES:
                    misplaced.append(f"{path.name}: from {node.module} import {alias.name}")
    assert not misplaced, "import these from where they are defined:\n" + "\n".join(misplaced)
    facades = sorted(name for name, (_, public) in homes.items() if public)
    assert facades == ["kerneltrace.readers.wavefile.reader", "kerneltrace.synth"], facades
