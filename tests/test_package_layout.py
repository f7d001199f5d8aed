"""The package layout: templates are package data, so an installed package can render; every script
meets Snakemake one way (main(argv) through `script:` and run_rule); the rules' conda env is complete."""

import ast
import re
import sys
import tomllib
from pathlib import Path

import yaml

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


# ---- one way for scripts to meet Snakemake ------------------------------------------------------

SCRIPTS = sorted((REPO / "scripts").glob("*.py"))
RULE_FILES = sorted((REPO / "workflow" / "rules").glob("*.smk"))
FOOTER = '''if "snakemake" in globals():
    run_rule(snakemake, main, snakemake_argv)  # noqa: F821
elif __name__ == "__main__":
    sys.exit(run_cli(main))
'''
# import name -> conda package (only where they differ)
CONDA_NAMES = {"yaml": "pyyaml", "simdjson": "pysimdjson"}


def _functions(path: Path) -> set[str]:
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}


def test_every_script_has_main_and_rule_scripts_end_the_same_way():
    used_by_rules = {match for rule in RULE_FILES
                     for match in re.findall(r'"\.\./\.\./scripts/(\w+\.py)"', rule.read_text())}
    assert used_by_rules, "no rule names a script"
    for script in SCRIPTS:
        assert "main" in _functions(script), script.name
        if script.name in used_by_rules:
            assert "snakemake_argv" in _functions(script), script.name
            assert script.read_text().endswith(FOOTER), script.name
            # Snakemake puts its preamble before the script body: a __future__ import then fails
            assert "from __future__" not in script.read_text(), script.name


def test_rules_run_scripts_only_through_script_directives():
    for rule in RULE_FILES:
        text = rule.read_text()
        assert "shell:" not in text, f"{rule.name}: a shell: rule bypasses the rule's conda env"
        for block in re.split(r"\n(?=\s*(?:rule|checkpoint) )", text):
            if "\n    run:" in block or "\n        run:" in block:
                assert "conda:" not in block, f"{block.splitlines()[0]}: conda: has no effect on run:"
            if "script:" in block:
                assert 'conda:\n        "../envs/analysis.yaml"' in block or \
                       'conda:\n            "../envs/analysis.yaml"' in block, block.splitlines()[0]


def test_conda_env_lists_every_third_party_import():
    imported: set[str] = set()
    for path in [*(REPO / "kerneltrace").rglob("*.py"), *SCRIPTS]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {name for name in imported if name not in sys.stdlib_module_names} - {"kerneltrace"}
    env = yaml.safe_load((REPO / "workflow" / "envs" / "analysis.yaml").read_text())
    listed = {str(dep).split()[0].split("=")[0] for dep in env["dependencies"] if isinstance(dep, str)}
    missing = {name for name in third_party if CONDA_NAMES.get(name, name) not in listed}
    assert not missing, f"imported but not in workflow/envs/analysis.yaml: {sorted(missing)}"
    assert "snakemake-minimal" in listed  # script: jobs unpickle the snakemake object
