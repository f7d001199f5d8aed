"""Tests mirror the package: every kerneltrace module has a direct test, or an entry below saying
which test covers it and how — and the entry is checked (the test reaches the module).

A *direct test* is a `tests/test_*.py` that imports the module itself. `COVERED_BY` lists the
modules without one: the test that exercises them, and why there is no direct test. The check
follows the package's import graph (tests/test_import_graph.py), the scripts a test runs (named
`scripts/NAME.py` or `NAME.py` in the test), the Snakefile for tests that run Snakemake, and the
plan-rule registry (which imports every `plan/rules/*.py`). An entry for a module that has gained
a direct test, or one the named test cannot reach, fails.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest
from test_import_graph import MODULES, _resolve, imports

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# module → (test file, how it covers the module). Keep it short: a module that grows behaviour of
# its own gets a direct test instead of an entry.
COVERED_BY: dict[str, tuple[str, str]] = {
    "kerneltrace.agent": ("test_agent_server.py", "package docstring only"),
    "kerneltrace.agent.answers": ("test_agent_server.py", "every tool's answer through Session"),
    "kerneltrace.agent.cli": ("test_agent_server.py", "the server started as scripts/mcp_server.py"),
    "kerneltrace.agent.server": ("test_agent_server.py", "the MCP stdio server driven by a client"),
    "kerneltrace.analysis": ("test_hotspots.py", "package docstring only"),
    "kerneltrace.analysis.barrier_stragglers": ("test_stragglers.py",
                                                "straggler causes in hotspot documents built by "
                                                "analyze_dispatch"),
    "kerneltrace.analysis.capture_health": ("test_capture_warnings.py",
                                            "truncated-capture warnings in the hotspot document"),
    "kerneltrace.analysis.dispatch_inputs": ("test_hotspot_cli.py",
                                             "kernel choice and empty-trace errors through run_analysis"),
    "kerneltrace.analysis.l2": ("test_l2_metrics.py", "package docstring only"),
    "kerneltrace.analysis.l2.inputs": ("test_l2_metrics.py", "run matching through l2.document.analyze"),
    "kerneltrace.analysis.l2.metrics": ("test_l2_metrics.py",
                                        "hand-computed formulas through l2.document.analyze"),
    "kerneltrace.analysis.regions": ("test_plan_render.py", "regions ranked by REGION-hotspot"),
    "kerneltrace.analysis.waves.consistency": ("test_waves_analysis.py",
                                               "listed vs present files and code.json = Σ waves"),
    "kerneltrace.analysis.waves.rows": ("test_waves_analysis.py", "row references in the waves object"),
    "kerneltrace.arch": ("test_arch.py", "package docstring only"),
    "kerneltrace.compare": ("test_compare.py", "package docstring only"),
    "kerneltrace.compare.launch": ("test_compare.py", "launch-based kernel time in compare documents"),
    "kerneltrace.compare.lines": ("test_compare.py", "line-level side of compare documents"),
    "kerneltrace.pipeline.capture_cli": ("test_faults_capture.py",
                                         "the capture scripts' options and records"),
    "kerneltrace.pipeline.decode": ("test_pipeline_e2e.py", "scripts/decode.py in the ATT pipeline"),
    "kerneltrace.pipeline.gate": ("test_regression_gate.py", "the Snakefile's onsuccess/onerror gate"),
    "kerneltrace.plan.l2_metrics": ("test_plan_memory_threshold.py", "MEM rules over L2 documents"),
    "kerneltrace.plan.rules.stragglers": ("test_stragglers.py",
                                          "BAR-straggler-waits in the plans build_summary makes"),
    "kerneltrace.plan.rules._util": ("test_plan_rules.py", "instruction predicates of the rules"),
    "kerneltrace.plan.rules.regions": ("test_plan_render.py", "REGION-hotspot through the registry"),
    "kerneltrace.plan.rules.waves_refs": ("test_plan_waves.py", "wave-rule helpers through W1–W3"),
    "kerneltrace.readers.jsonfile": ("test_readers_codejson.py", "broken-JSON errors of code.json"),
    "kerneltrace.readers.wavefile.json_fallback": ("test_wavefile.py",
                                                   "the fallback parser through reader (every layout)"),
    "kerneltrace.readers.wavefile.names": ("test_wavefile.py", "wave file names through reader"),
    "kerneltrace.render.timeline.chrome_json": ("test_timeline.py", "--format json of export_timeline.py"),
    "kerneltrace.render.timeline.counters": ("test_timeline.py", "counter tracks of exported traces"),
    "kerneltrace.render.timeline.tracks": ("test_timeline.py", "track layout of exported traces"),
    "kerneltrace.render.timeline.waves": ("test_timeline.py", "wave/state/instruction slices"),
    "kerneltrace.rocprof.groupguard": ("test_pipeline_rocprof.py", "process groups of captures"),
    "kerneltrace.rocprof.stages": ("test_pipeline_pmc_e2e.py", "the three rocprofv3 runs via the scripts"),
    "kerneltrace.synth.categories": ("test_synth.py", "decoder categories of synthetic wave files"),
    "kerneltrace.synth.runs": ("test_synth.py", "whole synthetic rocprofv3 runs"),
}


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kerneltrace"):
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("kerneltrace"))
    return {name for name in names if name in MODULES}


def _direct() -> dict[str, set[str]]:
    """test file → the package modules it imports itself."""
    return {path.name: _imported(ast.parse(path.read_text())) for path in sorted(TESTS.glob("test_*.py"))}


GRAPH = imports()
RULE_MODULES = {name for name in MODULES if name.startswith("kerneltrace.plan.rules.")}


def _reach(starts: set[str]) -> set[str]:
    seen: set[str] = set()
    stack = list(starts)
    while stack:
        module = stack.pop()
        if module in seen:
            continue
        seen.add(module)
        stack.extend(GRAPH.get(module, ()))
        if module == "kerneltrace.plan.rules":  # the registry imports every rule module
            stack.extend(RULE_MODULES)
        parent = module.rpartition(".")[0]
        if parent in MODULES:  # importing a module runs its package's __init__
            stack.append(parent)
    return seen


@functools.cache
def _source_modules(path: Path) -> frozenset[str]:
    """Package modules one script or Snakemake file names (imports, dotted names)."""
    source = path.read_text()
    found = {m for m in MODULES if re.search(rf"\b{re.escape(m)}\b", source)}
    try:
        found |= _imported(ast.parse(source))
    except SyntaxError:  # Snakemake files: the names found above and the imports below
        pass
    found.update(_resolve(f"kerneltrace.{a}.{b}") or "" for a, b in
                 re.findall(r"from kerneltrace\.(\w+) import (\w+)", source))
    return frozenset(found & set(MODULES))


def _script_modules(text: str) -> set[str]:
    """Package modules the scripts a test names import (and the Snakefile's, when it runs it)."""
    sources = [path for path in (ROOT / "scripts").glob("*.py") if re.search(rf"\b{path.name}\b", text)]
    if "snakemake" in text:
        sources += [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk")),
                    *(ROOT / "scripts").glob("*.py")]
    return set().union(*(_source_modules(path) for path in sources))


def test_every_module_has_a_direct_test_or_a_checked_entry():
    covered = set().union(*_direct().values())
    missing = sorted(set(MODULES) - covered - set(COVERED_BY))
    assert not missing, ("modules with neither a direct test (a tests/test_*.py importing them) "
                         "nor an entry in COVERED_BY:\n" + "\n".join(missing))


def test_entries_are_needed():
    covered = set().union(*_direct().values())
    stale = sorted(set(COVERED_BY) & covered)
    assert not stale, f"these modules have a direct test now: remove their COVERED_BY entries: {stale}"
    gone = sorted(set(COVERED_BY) - set(MODULES))
    assert not gone, f"COVERED_BY names modules that do not exist: {gone}"


@pytest.mark.parametrize("module", sorted(COVERED_BY))
def test_the_named_test_reaches_the_module(module: str):
    test_file, how = COVERED_BY[module]
    path = TESTS / test_file
    assert path.is_file(), f"{module}: {test_file} does not exist"
    assert how.strip(), f"{module}: say how {test_file} covers it"
    text = path.read_text()
    reached = _reach(_imported(ast.parse(text)) | _script_modules(text))
    assert module in reached, f"{test_file} neither imports nor runs anything reaching {module}"
