"""Clean-up and outputs never follow links out of the working dir; a link another user planted in a
world-writable folder is never followed; a full disk is one `error:` line and the job's log says it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake

from kerneltrace import atomic, synth
from kerneltrace.errors import InputError
from kerneltrace.pipeline.kept import remove_stale_copies

REPO = Path(__file__).resolve().parents[1]
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown, mount)")
OTHER_UID = 47013


def test_clean_up_never_follows_a_symlinked_hotspots_folder(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    unrelated = elsewhere / "precious.json"
    unrelated.write_text("{}")
    out = tmp_path / "reports" / "run"
    out.mkdir(parents=True)
    (out / "hotspots").symlink_to(elsewhere, target_is_directory=True)
    assert remove_stale_copies(out, []) == []
    assert unrelated.read_text() == "{}"


def test_clean_up_and_outputs_in_a_pipeline_job_stay_in_the_working_dir(tmp_path, monkeypatch):
    work = tmp_path / "work"
    outside = tmp_path / "outside"
    (work / "reports").mkdir(parents=True)
    outside.mkdir()
    (outside / "hotspots").mkdir()
    victim = outside / "hotspots" / "other.json"
    victim.write_text("{}")
    (work / "reports" / "run").symlink_to(outside, target_is_directory=True)
    target = outside / "passwd"
    target.write_text("root:x:0:0\n")
    (work / "plan.md").symlink_to(target)
    monkeypatch.chdir(work)
    with atomic.confined_to(work):
        assert remove_stale_copies(Path("reports/run"), []) == []
        with pytest.raises(InputError, match="out of the working directory"):
            atomic.write_text("plan.md", "# plan\n")
    assert victim.exists() and target.read_text() == "root:x:0:0\n"
    atomic.write_text("plan.md", "# plan\n")  # a CLI outside the pipeline follows its link as documented
    assert target.read_text() == "# plan\n"


@ROOT_ONLY
def test_a_link_another_user_planted_in_a_sticky_world_writable_folder_is_not_followed(tmp_path):
    shared = tmp_path / "shared_tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    victim = tmp_path / "victim.conf"
    victim.write_text("keep me\n")
    planted = shared / "out.json"
    planted.symlink_to(victim)
    os.lchown(planted, OTHER_UID, OTHER_UID)
    with pytest.raises(InputError, match="another user owns"):
        atomic.write_json(planted, {"x": 1})
    assert victim.read_text() == "keep me\n"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "render_index.py"), str(tmp_path),
                           "--out", str(planted)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stderr.startswith("error:") and "Traceback" not in done.stderr
    assert victim.read_text() == "keep me\n"
    own = shared / "mine.json"  # our own link there is still followed
    own.symlink_to(tmp_path / "mine_target.json")
    atomic.write_json(own, {"x": 2})
    assert (tmp_path / "mine_target.json").read_text().strip().startswith("{")


def test_a_failed_write_is_one_error_line(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(InputError, match="No space left on device") as caught:
        atomic.write_text(tmp_path / "x.md", "text")
    assert isinstance(caught.value, OSError)  # still an OSError to callers handling those
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def tiny_reports(tmp_path):
    """workdir/reports on a 48 KiB tmpfs (root only): the plan cannot be written there."""
    workdir = tmp_path / "work"
    reports = workdir / "reports"
    reports.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(reports)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    yield workdir
    subprocess.run(["umount", "-l", str(reports)], check=False)


@ROOT_ONLY
@pytest.mark.e2e
def test_a_full_disk_is_one_error_line_and_the_failed_jobs_log_says_it(tmp_path, tiny_reports):
    capture = tmp_path / "capture"
    synth.write_att_run(capture, [synth.demo_gemm(), synth.demo_vec_add()], output_file="att", calls=1)
    done = snakemake(tiny_reports, double_env(tmp_path), "--config", f"dir={capture}", "run=full")
    assert done.returncode != 0
    assert "No space left on device" in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    logs = [path for path in (tiny_reports / "logs").rglob("*.log")
            if "No space left on device" in path.read_text(errors="replace")]
    assert logs, "no job log names the full disk"
    error_lines = [line for line in logs[0].read_text().splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "No space left on device" in error_lines[0]
