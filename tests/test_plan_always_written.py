"""No lost plan: `dir=` on each capture kind alone writes the plan (optional outputs are optional), and
one capture that fails its analysis is one dropped capture, listed with its reason, never a lost run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake

from kerneltrace import synth

pytestmark = pytest.mark.e2e
PLAN_FILES = ("plan.md", "plan.html", "summary.json")


def _plan(workdir: Path, run: str) -> dict[str, str]:
    folder = workdir / "reports" / run
    missing = [name for name in PLAN_FILES if not (folder / name).is_file()]
    assert not missing, f"missing {missing} in {folder}"
    return {name: (folder / name).read_text() for name in (*PLAN_FILES, "dispatches.md")}


@pytest.mark.parametrize("variant", ["v3", "legacy", "pcsampling", "empty"])
def test_dir_run_on_one_capture_kind_alone_writes_the_plan(tmp_path, variant):
    capture = tmp_path / "capture"
    synth.write_dispatch_dir(capture, synth.demo_gemm(), variant=variant)
    workdir = tmp_path / "work"
    done = snakemake(workdir, double_env(tmp_path), "--config", f"dir={capture}", f"run={variant}")
    assert done.returncode == 0, done.stderr[-4000:]
    plan = _plan(workdir, variant)
    assert (workdir / "reports" / variant / "charts").is_dir()
    summary = json.loads(plan["summary.json"])
    if variant == "empty":
        assert summary["kernels"] == [] and "No dispatch could be analysed" in plan["plan.md"]
        assert [item["stage"] for item in summary["dropped"]] == ["discovery"]
        assert "code: null" in plan["plan.md"] and "code: null" in plan["dispatches.md"]
    else:
        assert len(summary["kernels"]) == 1 and summary["dropped"] == []


def _escaping_snapshot(dispatch: Path) -> None:
    tree = json.loads((dispatch / "snapshots.json").read_text())
    tree.setdefault("/", {})["evil.py"] = "../../secret.py"
    (dispatch / "snapshots.json").write_text(json.dumps(tree))


def _huge_integer(dispatch: Path) -> None:
    """A 401-digit Latency in one row (this crashed the text report with an OverflowError)."""
    code = json.loads((dispatch / "code.json").read_text())
    columns = [name.strip() for name in code["header"].split(",")]
    code["code"][1][columns.index("Latency")] = "@@BIG@@"
    (dispatch / "code.json").write_text(json.dumps(code).replace('"@@BIG@@"', "9" * 401))


def test_one_capture_failing_its_analysis_is_one_dropped_capture(tmp_path):
    capture = tmp_path / "capture"
    good = synth.write_dispatch_dir(capture, synth.demo_vec_add(), dispatch_id=1)
    escaping = synth.write_dispatch_dir(capture, synth.demo_vec_add(), dispatch_id=2)
    huge = synth.write_dispatch_dir(capture, synth.demo_gemm(), dispatch_id=3)
    _escaping_snapshot(escaping)
    _huge_integer(huge)
    workdir = tmp_path / "work"
    done = snakemake(workdir, double_env(tmp_path), "--config", f"dir={capture}", "run=mixed")  # no -k
    assert done.returncode == 0, done.stderr[-4000:]
    plan = _plan(workdir, "mixed")
    summary = json.loads(plan["summary.json"])
    analysed = {Path(d["dispatch_dir"]).name for k in summary["kernels"] for d in k["dispatches"]}
    assert analysed == {good.name}
    dropped = {Path(item["dispatch_dir"]).name: item for item in summary["dropped"]}
    assert set(dropped) == {escaping.name, huge.name}, summary["dropped"]
    assert "outside the dispatch dir" in dropped[escaping.name]["reason"]
    for name in dropped:
        assert name in plan["plan.md"] and name in plan["plan.html"]
        assert name in plan["dispatches.md"].replace("\\", "")  # Markdown-escaped underscores
    assert "outside the dispatch dir" in plan["dispatches.md"]
    assert "Traceback" not in done.stderr
