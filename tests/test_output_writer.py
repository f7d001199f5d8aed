"""The one output writer (kerneltrace.atomic): what each kind of output path gets, through the real CLIs.

Regular files and new paths are replaced atomically; character devices and FIFOs are written to
(never replaced); a symlink's target is replaced and the link stays; sockets and directories are
refused with one error line; outputs honour the umask; nothing else renames outputs into place."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hotspot_fixtures import make_dispatch_dir

from kerneltrace import atomic
from kerneltrace.errors import InputError

REPO = Path(__file__).resolve().parents[1]
ANALYZER = REPO / "scripts" / "hotspot_analyzer.py"


def analyze(directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ANALYZER), str(directory), "--arch", "gfx942", *extra],
                          capture_output=True, text=True, check=False)


@pytest.fixture
def dispatch(tmp_path: Path) -> Path:
    return make_dispatch_dir(tmp_path / "in")


def _char_device(path: Path) -> None:
    """A /dev/null twin (major 1, minor 3) created in a temp dir; skip when not possible here."""
    if os.geteuid() != 0:
        pytest.skip("creating a character device needs root")
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with open(path, "wb") as handle:  # nodev mounts refuse to open device nodes
            handle.write(b"")
    except OSError as err:
        pytest.skip(f"cannot create or open a character device here: {err}")


def test_json_to_a_character_device_writes_through_it_and_keeps_the_device(dispatch, tmp_path):
    device = tmp_path / "null"
    _char_device(device)
    before = os.stat(device)
    proc = analyze(dispatch, "--json", str(device))
    assert proc.returncode == 0, proc.stderr
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert after.st_mode == before.st_mode
    assert [p.name for p in tmp_path.iterdir() if p.name != "in"] == ["null"]  # no temp file left


def _through_fifo(fifo: Path, run) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """Run ``run()`` while a reader drains ``fifo``; the data read. A test-held writer end keeps the
    reader from seeing end-of-file before the CLI opens the FIFO (and lets it finish if it never does)."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keepalive = os.open(fifo, os.O_WRONLY)
    os.set_blocking(reader, True)
    chunks: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(reader, 65536):
            chunks.append(chunk)
    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        proc = run()
    finally:
        os.close(keepalive)
        thread.join()
        os.close(reader)
    return proc, b"".join(chunks)


def test_json_to_a_fifo_reaches_the_reader_and_the_fifo_stays(dispatch, tmp_path):
    fifo = tmp_path / "doc.fifo"
    os.mkfifo(fifo)
    proc, got = _through_fifo(fifo, lambda: analyze(dispatch, "--json", str(fifo)))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got)["schema"].startswith("kerneltrace.hotspots/")


def test_text_report_to_a_fifo_reaches_the_reader(dispatch, tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    proc, got = _through_fifo(fifo, lambda: analyze(dispatch, "--text", str(fifo)))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and b"demo_kernel_0" in got


@pytest.mark.parametrize("dangling", [False, True], ids=["existing-target", "dangling-link"])
def test_json_through_a_symlink_replaces_the_target_and_keeps_the_link(dispatch, tmp_path, dangling):
    target = tmp_path / "real" / "doc.json"
    target.parent.mkdir()
    if not dangling:
        target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(Path("real") / "doc.json")
    proc = analyze(dispatch, "--json", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "doc.json")
    assert json.loads(target.read_text())["kernel"] == "demo_kernel_0"
    assert sorted(p.name for p in target.parent.iterdir()) == ["doc.json"]


def test_symlink_loop_as_output_is_one_error_line(dispatch, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    proc = analyze(dispatch, "--json", str(a))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("error:")


def test_json_to_a_socket_is_refused_with_one_line(dispatch, tmp_path):
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        proc = analyze(dispatch, "--json", str(path))
    finally:
        server.close()
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1 and "socket" in proc.stderr
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_json_to_a_directory_is_refused_with_one_line(dispatch, tmp_path):
    out = tmp_path / "outdir"
    out.mkdir()
    proc = analyze(dispatch, "--json", str(out))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1 and "directory" in proc.stderr
    assert out.is_dir() and not any(out.iterdir())


def test_dash_is_stdout(dispatch):
    proc = analyze(dispatch, "--json", "-")
    assert proc.returncode == 0 and json.loads(proc.stdout)["kernel"] == "demo_kernel_0"


# ---- umask (issue 14 point 11) --------------------------------------------------------------

@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_honour_the_umask_also_when_replacing(tmp_path, mask, mode):
    fresh = tmp_path / "fresh.json"
    old = tmp_path / "old.json"
    old.write_text("{}")
    os.chmod(old, 0o600)
    previous = os.umask(mask)
    try:
        atomic.write_json(fresh, {"a": 1})
        atomic.write_json(old, {"a": 2})
        atomic.write_many({tmp_path / "m1.txt": "x", tmp_path / "m2.txt": b"y"})
    finally:
        os.umask(previous)
    for path in (fresh, old, tmp_path / "m1.txt", tmp_path / "m2.txt"):
        assert stat.S_IMODE(os.stat(path).st_mode) == mode, path


def test_cli_output_is_0644_under_umask_022(dispatch, tmp_path):
    out = tmp_path / "doc.json"
    proc = subprocess.run(["sh", "-c", 'umask 022 && exec "$0" "$@"', sys.executable, str(ANALYZER),
                           str(dispatch), "--arch", "gfx942", "--json", str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644


# ---- write_many: all staged before any rename (issue 14 point 5) ----------------------------

def test_write_many_leaves_every_old_output_whole_when_one_cannot_be_written(tmp_path):
    first, second = tmp_path / "plan.md", tmp_path / "plan.html"
    first.write_text("old md")
    second.write_text("old html")
    (tmp_path / "charts").mkdir()
    with pytest.raises(InputError):
        atomic.write_many({first: "new md", second: "new html", tmp_path / "charts": "x"})
    assert first.read_text() == "old md" and second.read_text() == "old html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["charts", "plan.html", "plan.md"]


def test_write_many_leaves_no_temp_file_when_a_rename_fails(tmp_path, monkeypatch):
    outputs = {tmp_path / f"f{i}.txt": f"new {i}" for i in range(3)}
    real_replace = os.replace
    calls = []

    def failing_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_second)
    with pytest.raises(OSError):
        atomic.write_many(outputs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f0.txt"]  # the one rename done, no temp


# ---- one writer: nothing else renames outputs (issue 15 point 2) ----------------------------

RENAMES = re.compile(r"\bos\.(replace|rename|renames)\(|\.rename\(|\.replace\(\s*[\w.]*(tmp|staging|target)|"
                     r"shutil\.move\(")


def test_no_module_or_script_renames_outputs_outside_the_writer():
    offenders = []
    files = [*(REPO / "kerneltrace").rglob("*.py"), *(REPO / "scripts").glob("*.py"),
             *(REPO / "workflow").rglob("*.smk"), REPO / "Snakefile"]
    for path in files:
        if path == REPO / "kerneltrace" / "atomic.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if RENAMES.search(line.split("#", 1)[0]):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "outputs renamed outside kerneltrace.atomic:\n" + "\n".join(offenders)


def test_the_rename_pattern_catches_what_it_should():
    for line in ("os.replace(tmp, final)", "os.rename(a, b)", "path.rename(other)", "shutil.move(a, b)"):
        assert RENAMES.search(line), line
    assert not RENAMES.search('text.replace(",[[", " -1 [")')


def test_hotspots_rule_writes_its_text_report_through_the_writer():
    rules = (REPO / "workflow" / "rules" / "analysis.smk").read_text(encoding="utf-8")
    script = (REPO / "scripts" / "hotspot_analyzer.py").read_text(encoding="utf-8")
    assert "> {output.text" not in rules and '"--text", smk.output.text' in script


# ---- no CLI writes over one of its inputs (issue 14 point 6) --------------------------------

def _script(name: str, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "scripts" / name), *map(str, args)],
                          capture_output=True, text=True, check=False)


def _overwrite_cases(tmp_path: Path, dispatch: Path):
    """(script argv, the input that must survive) per CLI; the output names that input directly,
    through a symlink, through a hard link or inside an input directory."""
    doc = tmp_path / "before.json"
    doc.write_text('{"schema": "kerneltrace.hotspots/1"}\n')
    other = tmp_path / "after.json"
    other.write_text('{"schema": "kerneltrace.hotspots/1"}\n')
    link = tmp_path / "link.json"
    link.symlink_to(doc)
    hard = tmp_path / "hard.json"
    os.link(other, hard)
    csv = tmp_path / "pass_1.csv"
    csv.write_text("Counter_Name,Counter_Value\n")
    code = dispatch / "code.json"
    return {
        "hotspot-json-into-dir": (["hotspot_analyzer.py", dispatch, "--json", code], code),
        "hotspot-text-symlink": (["hotspot_analyzer.py", dispatch, "--text", _link_to(tmp_path, code)], code),
        "compare-json-same": (["compare.py", doc, other, "--json", doc], doc),
        "compare-json-symlink": (["compare.py", doc, other, "--json", link], doc),
        "compare-markdown-hardlink": (["compare.py", doc, other, "--markdown", hard], other),
        "l2-json": (["pmc_l2_analyzer.py", csv, "--json", csv], csv),
        "render-plan": (["render_plan.py", "--hotspots", tmp_path / "summary.json", "--out-dir", tmp_path],
                        _touch(tmp_path / "summary.json")),
        "regression-gate": (["regression_gate.py", doc, link], doc),
        "find-dispatch-dirs": (["find_dispatch_dirs.py", dispatch, "-o", dispatch / "m.tsv"], code),
        "render-index": (["render_index.py", "--out", tmp_path / "run" / "summary.json", tmp_path, "run"],
                         _touch(tmp_path / "run" / "summary.json")),
        "regression-report": (["regression_report.py", "--baseline", tmp_path, "--run", "run", "--json", doc,
                               "--markdown", tmp_path / "r.md", doc], doc),
    }


def _link_to(tmp_path: Path, target: Path) -> Path:
    link = tmp_path / "code-link.json"
    link.symlink_to(target)
    return link


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"schema": "kerneltrace.hotspots/1"}\n')
    return path


CASES = ["hotspot-json-into-dir", "hotspot-text-symlink", "compare-json-same", "compare-json-symlink",
         "compare-markdown-hardlink", "l2-json", "render-plan", "regression-gate", "find-dispatch-dirs", "render-index", "regression-report"]


@pytest.mark.parametrize("case", CASES)
def test_no_cli_writes_over_one_of_its_inputs(tmp_path, dispatch, case):
    argv, protected = _overwrite_cases(tmp_path, dispatch)[case]
    before = protected.read_bytes()
    listing = sorted(p.name for p in dispatch.iterdir())
    proc = _script(*argv)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr
    assert "input" in proc.stderr
    assert protected.read_bytes() == before and not protected.is_symlink()
    assert sorted(p.name for p in dispatch.iterdir()) == listing
