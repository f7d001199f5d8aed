"""A code change re-runs what it affects: the pipeline runs from a copy of the repository, then one
module of the copy is edited at a time (an analysis module, a plan module, a template, the index
renderer) and the re-run's executed jobs are read from Snakemake's log."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pipeline_helpers import REPO_ROOT, double_env, snakemake
from test_pipeline_rerun import executed, hotspot_jobs, rules

from kerneltrace import synth

pytestmark = pytest.mark.e2e
COPIED = ("Snakefile", "workflow", "kerneltrace", "scripts", "config", "profiles")


def _repo_copy(target: Path) -> Path:
    target.mkdir()
    for name in COPIED:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    return target


def _edit(path: Path, comment: str) -> None:
    path.write_text(path.read_text() + comment)


def test_code_signature_follows_the_imports_of_each_script():
    from kerneltrace.pipeline import codesig

    hotspots = {p.relative_to(REPO_ROOT).as_posix() for p in codesig.reachable_files(
        REPO_ROOT / "scripts" / "hotspot_analyzer.py")}
    plan = {p.relative_to(REPO_ROOT).as_posix() for p in codesig.reachable_files(
        REPO_ROOT / "scripts" / "render_plan.py")}
    assert "kerneltrace/analysis/hotspots.py" in hotspots and "kerneltrace/analysis/hotspots.py" in plan
    assert "kerneltrace/document/hotspot_report.py" in hotspots
    # lazy imports inside functions count (render_plan imports plan.inputs inside main)
    assert {"kerneltrace/plan/verdict.py", "kerneltrace/render/plan.py",
            "kerneltrace/templates/plan.md.j2"} <= plan
    assert not {"kerneltrace/plan/verdict.py", "kerneltrace/render/plan.py",
                "kerneltrace/templates/plan.md.j2"} & hotspots


def test_editing_code_reruns_exactly_the_jobs_that_run_it(tmp_path):
    repo = _repo_copy(tmp_path / "repo")
    capture = tmp_path / "capture"
    synth.write_att_run(capture, [synth.demo_vec_add(), synth.demo_gemm()], output_file="att", calls=1)
    env = double_env(tmp_path)
    workdir = tmp_path / "work"
    config = ["--config", f"dir={capture}", "run=code"]

    def run() -> str:
        done = snakemake(workdir, env, *config, snakefile=repo / "Snakefile")
        assert done.returncode == 0, done.stderr[-4000:]
        return done.stderr

    first = run()
    dispatches = hotspot_jobs(first)
    assert len(dispatches) >= 2
    assert executed(run()) == []  # unchanged code: nothing

    # an analysis module: every hotspots job and the plan (and the index, whose input changed)
    _edit(repo / "kerneltrace" / "analysis" / "hotspots.py", "\n# edited analysis\n")
    log = run()
    assert hotspot_jobs(log) == dispatches and {"plan", "batch_index"} <= rules(log)

    # a plan module (kerneltrace/plan/verdict.py): the plan only, no analysis
    _edit(repo / "kerneltrace" / "plan" / "verdict.py", "\n# edited plan logic\n")
    log = run()
    assert "plan" in rules(log) and hotspot_jobs(log) == set()

    # a template: re-rendered, never re-analysed
    _edit(repo / "kerneltrace" / "templates" / "plan.md.j2", "{# edited template #}\n")
    log = run()
    assert "plan" in rules(log) and hotspot_jobs(log) == set()

    # the index renderer: the index only
    _edit(repo / "kerneltrace" / "render" / "index.py", "\n# edited index\n")
    log = run()
    assert rules(log) - {"all"} == {"batch_index"}

    # the analyzer script itself
    _edit(repo / "scripts" / "hotspot_analyzer.py", "\n# edited script\n")
    log = run()
    assert hotspot_jobs(log) == dispatches

    assert executed(run()) == []
