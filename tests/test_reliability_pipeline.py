"""Pipeline-level reliability (issue 14): config values anchored, stale kept copies removed.

Runs the Snakemake CLI on small synthetic dispatch dirs (dir= use)."""

from __future__ import annotations

import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml
from pipeline_helpers import double_env, snakemake

from kerneltrace.errors import InputError
from kerneltrace.pipeline.runs import RUN_NAME_RE
from kerneltrace.synth import spec as synth_spec
from kerneltrace.synth.writers import write_dispatch_dir

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def _valid(config: dict) -> bool:
    try:
        jsonschema.validate(config, SCHEMA)
    except jsonschema.ValidationError:
        return False
    return True


# ---- point 12: names and values anchored with \Z ---------------------------------------------

@pytest.mark.parametrize("name", ["good\n", "a/b", "", "-x"])
def test_run_name_with_trailing_newline_or_unsafe_character_is_refused(name):
    assert not RUN_NAME_RE.match(name)
    assert not _valid({"run": name})
    assert not _valid({"runs": {name: {"dir": "/x"}}})


def test_hex_buffer_size_with_trailing_newline_is_refused():
    assert _valid({"att_buffer_size": "0x100"}) and not _valid({"att_buffer_size": "0x100\n"})


def test_good_run_name_is_accepted():
    assert RUN_NAME_RE.match("gemm_v2.1-rc") and _valid({"run": "gemm_v2.1-rc"})


@pytest.mark.parametrize("spec", ["total_stall=", "total_stall= ", "line_stall=,total_stall=5%"])
def test_fail_on_with_an_empty_value_is_an_error_not_off(spec):
    from kerneltrace.compare.gate import parse_thresholds

    with pytest.raises(InputError, match="has no value"):
        parse_thresholds(spec)


# ---- point 12: stale copied hotspot documents ------------------------------------------------

def _captures(root: Path, ids: list[int]) -> Path:
    kernel = synth_spec.demo_vec_add()
    for dispatch_id in ids:
        write_dispatch_dir(root, kernel, dispatch_id=dispatch_id)
    return root


@pytest.mark.e2e
def test_stale_kept_hotspot_copies_are_removed_when_the_dispatch_set_changes(tmp_path):
    env = double_env(tmp_path)
    captures = _captures(tmp_path / "caps", [1, 2])
    work = tmp_path / "w"
    first = snakemake(work, env, "--config", f"dir={captures}", "run=r")
    assert first.returncode == 0, first.stderr[-3000:]
    kept = work / "reports" / "r" / "hotspots"
    names = sorted(p.name for p in kept.glob("*.json"))
    assert len(names) == 2, names
    dropped = [d for d in captures.iterdir() if d.name.endswith("_dispatch_2")]
    assert len(dropped) == 1
    shutil.rmtree(dropped[0])
    # --forceall: noticing the changed folder is the re-run logic's job, not this test's
    second = snakemake(work, env, "--config", f"dir={captures}", "run=r", "--forceall")
    assert second.returncode == 0, second.stderr[-3000:]
    left = sorted(p.name for p in kept.glob("*.json"))
    assert len(left) == 1 and left[0] in names, (names, left)


# ---- Also: no install noise from our own pyproject.toml ------------------------------------

def test_pyproject_license_is_an_spdx_string_not_a_deprecated_table():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert isinstance(project["project"]["license"], str)  # a table warns on every install
    assert any(req.replace(" ", "").startswith("setuptools>=77") for req in project["build-system"]["requires"])


def test_readme_lists_every_config_key():
    import re

    readme = (REPO / "README.md").read_text()
    start = readme.index("Every config key (")
    listed = re.findall(r"`([a-z0-9_]+)`", readme[start:readme.index(")", start)])
    assert sorted(listed) == sorted(SCHEMA["properties"]), "README config key list out of date"


def test_unlock_after_a_kill_is_documented_where_users_look():
    for doc in ("README.md", "docs/pipeline.md"):
        assert "snakemake --unlock" in (REPO / doc).read_text(), doc


@pytest.mark.e2e
def test_the_analysing_message_appears_once_per_run_not_per_job(tmp_path):
    captures = _captures(tmp_path / "caps", [1, 2])
    result = snakemake(tmp_path / "w", double_env(tmp_path), "--config", f"dir={captures}", "run=r")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (result.stdout + result.stderr).count("kernel-trace-analysis: run 'r': analysing") == 1
    # a job process (cluster jobs, --mode subprocess/remote) parses the Snakefile again: silent there
    job = snakemake(tmp_path / "w", double_env(tmp_path), "--config", f"dir={captures}", "run=r",
                    "--mode", "subprocess", "-n")
    assert "kernel-trace-analysis: run" not in job.stdout + job.stderr


def test_reports_folder_with_its_readme_is_in_the_repository():
    readme = REPO / "reports" / "README.md"
    assert readme.is_file() and "plan.md" in readme.read_text()
    assert "!/reports/README.md" in (REPO / ".gitignore").read_text()
