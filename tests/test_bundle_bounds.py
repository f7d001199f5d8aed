"""The capture bundle stays inside the capture: captures near `/`, decoys in /opt and in other users'
folders, unreadable folders of other users, and the arch's source file named in the outputs.

Tests that place files outside the temp dir (`/kt_test_…`, `/opt`) or change owners need root and
are skipped otherwise; they remove what they create.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from kerneltrace import synth
from kerneltrace.model import metadata
from kerneltrace.model.dispatchdir import find_dispatch_dirs

REPO = Path(__file__).resolve().parents[1]
ANALYZER = REPO / "scripts" / "hotspot_analyzer.py"
COMPARE = REPO / "scripts" / "compare.py"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (files outside the temp dir, chown)")
OTHER_UID, DECOY_UID = 47011, 47012  # uids no account uses
AGENT_HEADER = "Logical_Node_Id,Agent_Type,Name,Cu_Count,Simd_Per_Cu,Max_Waves_Per_Simd,Wave_Front_Size\n"


def _agent_csv(path: Path, gfx: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(AGENT_HEADER + f"0,CPU,cpu,0,0,0,0\n1,GPU,{gfx},304,4,8,64\n")
    return path


def _capture(parent: Path, suffix: str = "") -> Path:
    """A small synthetic dispatch dir without any CSV of its own (no stats CSV beside it)."""
    name = synth.dispatch_dir_name(20001, 1) + suffix
    return synth.write_dispatch_dir(parent, synth.demo_vec_add(), with_stats_csv=False, dir_name=name)


def _run(script: Path, *args: str, user: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          check=False, env=env, user=user, cwd="/")


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]


class ListedFolders:
    """Every folder listed through os.scandir / os.listdir while active (absolute, resolved)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[str] = []
        real_scandir, real_listdir = os.scandir, os.listdir

        def scandir(path=".", *rest):
            self.seen.append(os.path.realpath(os.fsdecode(path)) if not isinstance(path, int) else "<fd>")
            return real_scandir(path, *rest)

        def listdir(path=".", *rest):
            self.seen.append(os.path.realpath(os.fsdecode(path)) if not isinstance(path, int) else "<fd>")
            return real_listdir(path, *rest)

        monkeypatch.setattr(os, "scandir", scandir)
        monkeypatch.setattr(os, "listdir", listdir)


@pytest.fixture
def near_root():
    """Folders created at 1, 2 and 3 levels below `/` (removed afterwards)."""
    made: list[Path] = []
    tag = f"kt_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"

    def make(depth: int) -> Path:
        if depth == 1:  # the dispatch dir itself sits in `/`
            return _capture(Path("/"), suffix=f"_{tag}")
        top = Path("/") / tag if depth == 2 else Path("/tmp") / tag
        made.append(top)
        return _capture(top)

    yield make
    for path in made:
        shutil.rmtree(path, ignore_errors=True)
    for path in Path("/").glob(f"ui_output_agent_20001_dispatch_1_{tag}"):
        shutil.rmtree(path, ignore_errors=True)


@ROOT_ONLY
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_capture_one_two_or_three_folders_below_root_is_analysed(near_root, depth):
    dispatch = near_root(depth)
    assert len(dispatch.parts) - 1 == depth
    done = _run(ANALYZER, str(dispatch), "--json", "-")
    _no_traceback(done)
    compared = _run(COMPARE, str(dispatch), str(dispatch))
    _no_traceback(compared)
    found = find_dispatch_dirs(dispatch.parent if depth > 1 else dispatch)
    assert [item.path for item in found.kept] == [dispatch.resolve()]


@ROOT_ONLY
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_the_search_never_lists_root_proc_sys_or_dev(near_root, depth, monkeypatch):
    dispatch = near_root(depth)
    listed = ListedFolders(monkeypatch)
    for patterns in (metadata.AGENT_INFO, metadata.KERNEL_TRACE, metadata.COUNTERS):
        metadata.bundle_levels(dispatch, patterns)
    forbidden = {"/", "/proc", "/sys", "/dev"}
    assert not forbidden & set(listed.seen), sorted(set(listed.seen))
    assert not [path for path in listed.seen if path.startswith(("/proc/", "/sys/"))]


@ROOT_ONLY
def test_a_decoy_agent_info_in_opt_is_never_read(tmp_path):
    opt = Path("/opt")
    created_opt = not opt.exists()
    opt.mkdir(exist_ok=True)
    decoy = _agent_csv(opt / f"kt_decoy_{os.getpid()}_agent_info.csv", "gfx90a")
    top = Path("/tmp") / f"kt_opt_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        dispatch = _capture(top)  # /tmp/kt_…/ui_output…: the search used to reach `/` and /opt
        found = metadata.find_metadata(dispatch, 1, [])
        assert found.agent_csv is None and found.agents == []
        done = _run(ANALYZER, str(dispatch), "--json", "-")
        _no_traceback(done)
        document = json.loads(done.stdout)
        assert document["metadata"]["agent_info_csv"] is None and document["metadata"]["agent"] is None
        assert str(decoy) not in done.stdout and document["arch"]["name"] is None
    finally:
        decoy.unlink(missing_ok=True)
        shutil.rmtree(top, ignore_errors=True)
        if created_opt:
            opt.rmdir()


def _homes(tmp_path: Path) -> tuple[Path, Path, Path]:
    """home/u1/caps/ui_output… (uid OTHER_UID) beside home/u2/ (uid DECOY_UID) holding a decoy CSV."""
    home = tmp_path / "home"
    dispatch = _capture(home / "u1" / "caps")
    decoy = _agent_csv(home / "u2" / "gpu_agent_info.csv", "gfx90a")
    for path in [home / "u1", *(home / "u1").rglob("*")]:
        os.lchown(path, OTHER_UID, OTHER_UID)
    for path in [home / "u2", *(home / "u2").rglob("*")]:
        os.lchown(path, DECOY_UID, DECOY_UID)
    return home, dispatch, decoy


@ROOT_ONLY
def test_another_users_agent_info_is_never_read(tmp_path):
    home, dispatch, decoy = _homes(tmp_path)
    # planted beside the capture by someone else: same folder, other owner
    planted = _agent_csv(dispatch.parent / "planted_agent_info.csv", "gfx1100")
    os.chown(planted, DECOY_UID, DECOY_UID)
    found = metadata.find_metadata(dispatch, 1, [])
    assert found.agent_csv is None, found.agent_csv
    listed = [path for level in metadata.bundle_levels(dispatch, metadata.AGENT_INFO) for path in level]
    assert decoy not in listed and planted not in listed
    # the capture's own CSV (same owner) is still found
    own = _agent_csv(dispatch.parent / "run_agent_info.csv", "gfx950")
    os.chown(own, OTHER_UID, OTHER_UID)
    found = metadata.find_metadata(dispatch, 1, [])
    assert found.agent_csv == own and [agent.name for agent in found.agents] == ["gfx950"]


def _as_user(uid: int, action) -> tuple[int, str]:
    """Run ``action()`` in a forked child with effective uid ``uid``: (exit code, traceback text).

    A fork, not a new interpreter: the interpreter under /root is not executable by another uid.
    Exit 0: done; 2: an InputError; 1: any other exception (its traceback is returned)."""
    import traceback

    from kerneltrace.errors import InputError

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's outcome is the exit code
        os.close(read)
        code = 0
        try:
            os.setegid(uid)
            os.seteuid(uid)
            action()
        except InputError:
            code = 2
        except BaseException:
            os.write(write, traceback.format_exc().encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        text = handle.read().decode()
    _pid, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status), text


@ROOT_ONLY
def test_another_users_private_folder_is_a_skip_for_a_non_root_user(tmp_path):
    from kerneltrace.compare.inputs import load_side
    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.render.text import render_text

    home, dispatch, _decoy = _homes(tmp_path)
    private = home / "u2" / "private"
    (private / "deeper").mkdir(parents=True)
    os.chown(private, DECOY_UID, DECOY_UID)
    private.chmod(0o700)
    # pytest's temp root (and, under xdist, each worker's folder) is 0700: open the way to the capture
    for path in [*reversed([p for p in tmp_path.parents if p.is_relative_to(Path(tempfile.gettempdir()))
                            and p != Path(tempfile.gettempdir())]), tmp_path, home]:
        path.chmod(0o755)
    document = analyze_dispatch(dispatch)  # as root: every module imported before the fork
    render_text(document)
    load_side(dispatch)

    def as_user1() -> None:
        doc = analyze_dispatch(dispatch)
        render_text(doc)
        load_side(dispatch)  # what compare.py does with a dispatch dir
        find_dispatch_dirs(dispatch.parent)

    code, trace = _as_user(OTHER_UID, as_user1)
    assert code == 0, trace


def test_unreadable_folders_in_the_bundle_are_skips_not_tracebacks(tmp_path, monkeypatch):
    dispatch = _capture(tmp_path / "kernel" / "att_viewer" / "big")
    own = _agent_csv(tmp_path / "kernel" / "compute_viewer" / "big_agent_info.csv", "gfx950")
    (tmp_path / "kernel" / "locked" / "inner").mkdir(parents=True)
    real_scandir = os.scandir

    def refusing(path=".", *rest):
        if "locked" in os.fsdecode(path):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_scandir(path, *rest)

    monkeypatch.setattr(os, "scandir", refusing)
    real_is_file = Path.is_file

    def is_file(self):
        if "locked" in str(self):
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    found = metadata.find_metadata(dispatch, 5, [])
    assert found.agent_csv == own


def test_the_arch_source_file_is_named_in_the_text_report_and_the_plan(tmp_path):
    dispatch = _capture(tmp_path / "kernel" / "att_viewer" / "big")
    _agent_csv(tmp_path / "kernel" / "compute_viewer" / "big_agent_info.csv", "gfx950")
    out = tmp_path / "out"
    done = _run(ANALYZER, str(dispatch), "--json", str(out / "h.json"), "--text", str(out / "h.txt"))
    _no_traceback(done)
    text = (out / "h.txt").read_text()
    assert "gfx950" in text and "from compute_viewer/big_agent_info.csv" in text, text[:800]
    plan = _run(REPO / "scripts" / "render_plan.py", "--hotspots", str(out / "h.json"), "--out-dir",
                str(out / "plan"))
    _no_traceback(plan)
    for name in ("plan.md", "plan.html"):
        rendered = (out / "plan" / name).read_text()
        assert "compute_viewer/big_agent_info.csv" in rendered, name
