"""The package layout: templates are package data, so an installed package can render; every rule
runs its script one way (main(argv) through run_script); environment.yml lists every dependency."""

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
FOOTER = '''if __name__ == "__main__":
    sys.exit(run_cli(main))
'''
# the hotspot CLI ends without the interpreter's teardown (kerneltrace.errors.exit_cli)
FAST_FOOTERS = {"hotspot_analyzer.py": '''if __name__ == "__main__":
    exit_cli(run_cli(main))  # sys.exit without the teardown (40-60 ms after --waves)
'''}
# import name -> conda package (only where they differ)
CONDA_NAMES = {"yaml": "pyyaml", "simdjson": "pysimdjson"}


def _functions(path: Path) -> set[str]:
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}


def _own_process(path: Path) -> bool:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "OWN_PROCESS" for t in node.targets):
            return node.value.value is True
    return False


def _rule_blocks() -> list[str]:
    return [block for rule in RULE_FILES
            for block in re.split(r"\n(?=\s*(?:rule|checkpoint) \w+:)", rule.read_text())
            if re.match(r"\s*(?:rule|checkpoint) \w+:", block)]


def test_every_script_has_main_and_the_cli_footer_only():
    for script in SCRIPTS:
        text = script.read_text()
        assert "main" in _functions(script), script.name
        assert text.endswith(FAST_FOOTERS.get(script.name, FOOTER)), script.name
        assert "globals()" not in text, f"{script.name}: a second entry point besides main(argv)"


def test_every_rule_runs_its_script_through_run_script():
    blocks = _rule_blocks()
    assert len(blocks) >= 10
    run_by_rules = set()
    for block in blocks:
        name = block.split(":")[0].strip()
        for directive in ("script:", "shell:", "conda:", "notebook:", "wrapper:", "cwl:"):
            assert f"\n    {directive}" not in block and f"\n        {directive}" not in block, \
                f"{name}: {directive} (every rule's body is run: run_script(...))"
        assert "run:" in block, name
        scripts = re.findall(r'run_script\("(\w+\.py)", input, output, params, wildcards, log\)', block)
        assert len(scripts) <= 1, name
        run_by_rules.update(scripts)
        if not scripts:  # only file copies run without a script
            body = block.split("run:", 1)[1].strip()
            assert body.startswith("copy_atomically("), name
        # a rule holding the GPU runs a capture script, and those run as their own process
        if "gpu=1" in block:
            assert scripts and _own_process(REPO / "scripts" / scripts[0]), name
    assert run_by_rules, "no rule runs a script"
    for name in run_by_rules:
        assert (REPO / "scripts" / name).is_file(), name
        assert "snakemake_argv" in _functions(REPO / "scripts" / name), name
    own = {script.name for script in SCRIPTS if _own_process(script)}
    assert own == {"att_capture.py", "pmc_capture.py", "discover_kernels.py"}


def test_environment_lists_every_third_party_import():
    imported: set[str] = set()
    for path in [*(REPO / "kerneltrace").rglob("*.py"), *SCRIPTS]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {name for name in imported if name not in sys.stdlib_module_names} - {"kerneltrace"}
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    listed = {str(dep).split()[0].split("=")[0] for dep in env["dependencies"] if isinstance(dep, str)}
    # packages published on PyPI only come through the environment's pip section
    listed |= {str(dep).split()[0].split("=")[0] for dep in env["dependencies"] if isinstance(dep, dict)
               for dep in dep.get("pip", []) if not str(dep).startswith("-")}
    missing = {name for name in third_party if CONDA_NAMES.get(name, name) not in listed}
    assert not missing, f"imported but not in environment.yml: {sorted(missing)}"
    assert "snakemake-minimal" in listed
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    declared_names = {re.split(r"[<>=!~ ;\[]", dep)[0].lower() for dep in declared}
    missing_pip = {name for name in third_party if CONDA_NAMES.get(name, name) not in declared_names}
    assert not missing_pip, f"imported but not in pyproject.toml dependencies: {sorted(missing_pip)}"
