"""Security properties: snapshot paths stay inside the dispatch dir, HTML escapes what it shows,
YAML only through safe_load, SQLite only read-only, and `cmd` reaches a shell exactly once."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace import synth
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.errors import InputError
from kerneltrace.readers import rocpd, snapshots
from kerneltrace.rocprof import capture, commands, discover, jobfile

REPO = Path(__file__).resolve().parents[1]
DOUBLE_DIR = REPO / "tests" / "rocprofv3_double"
SCRIPT = "<script>alert('owned')</script>"


# ---- snapshots.json may not point outside the dispatch dir ------------------------------------

def _dispatch_with_snapshot(root: Path, entry: str) -> Path:
    dispatch = synth.write_dispatch_dir(root, synth.demo_vec_add())
    tree = json.loads((dispatch / "snapshots.json").read_text())
    tree.setdefault("/", {})["evil.py"] = entry
    (dispatch / "snapshots.json").write_text(json.dumps(tree))
    return dispatch


@pytest.mark.parametrize("entry", ["../secret.py", "a/../../secret.py", "..", "/etc/passwd", "C:\\x\\..\\y",
                                   "\\\\server\\share\\x.py"])
def test_snapshot_entries_with_dotdot_or_absolute_paths_are_refused(tmp_path, entry):
    (tmp_path / "secret.py").write_text("TOP SECRET\n")
    dispatch = _dispatch_with_snapshot(tmp_path, entry)
    with pytest.raises(InputError, match="outside the dispatch dir"):
        snapshots.read_snapshots(dispatch)
    with pytest.raises(InputError):  # the analyzer refuses the dir instead of reading the file
        analyze_dispatch(dispatch)


@pytest.mark.parametrize("link", ["file", "dir"])
def test_snapshot_symlinks_escaping_the_dispatch_dir_are_refused(tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOP SECRET\n")
    dispatch = synth.write_dispatch_dir(tmp_path / "caps", synth.demo_vec_add())
    if link == "file":
        (dispatch / "innocent.py").symlink_to(outside / "secret.py")
        entry = "innocent.py"
    else:
        (dispatch / "sub").symlink_to(outside, target_is_directory=True)
        entry = "sub/secret.py"
    tree = json.loads((dispatch / "snapshots.json").read_text())
    tree.setdefault("/", {})["evil.py"] = entry
    (dispatch / "snapshots.json").write_text(json.dumps(tree))
    with pytest.raises(InputError, match="resolves outside the dispatch dir"):
        snapshots.read_snapshots(dispatch)


def test_snapshot_symlink_inside_the_dispatch_dir_is_fine(tmp_path):
    dispatch = synth.write_dispatch_dir(tmp_path, synth.demo_vec_add())
    index = snapshots.read_snapshots(dispatch)
    virtual, local = next(iter(index.files.items()))
    (dispatch / "alias.py").symlink_to(local.name)
    tree = json.loads((dispatch / "snapshots.json").read_text())
    tree.setdefault("/", {})["alias.py"] = "alias.py"
    (dispatch / "snapshots.json").write_text(json.dumps(tree))
    assert snapshots.read_snapshots(dispatch).files["/alias.py"] == dispatch / "alias.py"


# ---- every HTML output escapes what it shows --------------------------------------------------

@pytest.fixture(scope="module")
def hostile_reports(tmp_path_factory) -> Path:
    """hotspot JSON -> plan.md/plan.html/charts -> reports/index.html, from a kernel whose name,
    source path and source text carry <script>, through the real CLIs."""
    root = tmp_path_factory.mktemp("html")
    spec = synth.demo_vec_add()
    text = "\n".join(f"{line}  # {SCRIPT}" for line in spec.source_text.splitlines())
    spec = dataclasses.replace(spec, demangled=f"vec_add{SCRIPT}(float*)", source_text=text,
                               source_path=spec.source_path.replace(".py", "_<b>x</b>.py"))
    dispatch = synth.write_dispatch_dir(root / "caps", spec)
    hotspots = root / "k000.json"
    reports = root / "reports"
    run = "run<script>x</script>"  # the run name is shown too (title, index row)
    for argv in (["hotspot_analyzer.py", str(dispatch), "--json", str(hotspots)],
                 ["render_plan.py", "--hotspots", str(hotspots), "--out-dir", str(reports / "demo"),
                  "--run", run, "--charts"],
                 ["render_index.py", str(reports)]):
        result = subprocess.run([sys.executable, str(REPO / "scripts" / argv[0]), *argv[1:]],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
    document = json.loads(hotspots.read_text())
    assert SCRIPT in document["kernel"]  # the hostile text really travelled through the analysis
    return reports


def _outputs(reports: Path) -> list[Path]:
    return sorted(p for p in reports.rglob("*") if p.suffix in (".html", ".svg"))


def test_html_outputs_exist(hostile_reports):
    names = {p.name for p in _outputs(hostile_reports)}
    assert {"plan.html", "index.html"} <= names


def test_no_html_output_contains_a_live_script_tag(hostile_reports):
    for path in _outputs(hostile_reports):
        text = path.read_text(encoding="utf-8")
        assert "<script>alert" not in text, path
        assert "<b>x</b>" not in text, path
        assert not re.search(r"<script[\s>]", text, re.IGNORECASE), path  # no script element at all


def test_plan_html_shows_the_hostile_text_escaped(hostile_reports):
    plan = (hostile_reports / "demo" / "plan.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(" in plan  # shown, as text
    index = (hostile_reports / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;" in index or "%3Cscript%3E" in index


# ---- YAML: safe loaders only -------------------------------------------------------------------

UNSAFE_YAML = re.compile(r"yaml\.(load|load_all|unsafe_load|unsafe_load_all|full_load|full_load_all)\s*\("
                         r"|yaml\.(Unsafe|Full)?Loader\b|yaml\.CLoader\b|Loader\s*=")


def _code_files() -> list[Path]:
    roots = [REPO / "kerneltrace", REPO / "scripts", REPO / "workflow", REPO / "tests", REPO / "bench"]
    files = [REPO / "Snakefile"]
    for root in roots:
        files += [p for p in root.rglob("*") if p.is_file() and (p.suffix in (".py", ".smk") or p.parent.name == "rocprofv3_double")]
    return [p for p in files if p.exists() and p.resolve() != Path(__file__).resolve()]


def test_no_unsafe_yaml_loader_anywhere():
    offenders = []
    for path in _code_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if UNSAFE_YAML.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "unsafe YAML loading:\n" + "\n".join(offenders)


def test_unsafe_yaml_pattern_catches_what_it_should():
    for bad in ("yaml.load(text)", "yaml.load(text, Loader=yaml.Loader)", "yaml.full_load(x)",
                "yaml.unsafe_load(x)", "yaml.load_all(x)"):
        assert UNSAFE_YAML.search(bad), bad
    assert not UNSAFE_YAML.search("yaml.safe_load(text)")


def test_job_file_loader_refuses_python_tags(tmp_path):
    marker = tmp_path / "pwned"
    hostile = f"jobs:\n  - pmc: !!python/object/apply:os.system ['touch {marker}']\n"
    with pytest.raises(InputError, match="not valid yaml"):
        jobfile.load_jobs(hostile, ".yaml")
    assert not marker.exists()


# ---- SQLite: read-only connections ------------------------------------------------------------

def _db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE rocpd_kernel_dispatch (id, guid, kernel_id, start, "end");
        CREATE TABLE rocpd_info_kernel_symbol (id, guid, kernel_name, display_name);
        INSERT INTO rocpd_kernel_dispatch VALUES (1, 'g', 3, 0, 100);
        INSERT INTO rocpd_info_kernel_symbol VALUES (3, 'g', '_Z1kv', 'k');
    """)
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("name", ["results.db", "odd?mode=rwc&x#.db", "per%63ent.db"])
def test_rocpd_reader_connection_cannot_write(tmp_path, name):
    db = _db(tmp_path / name)
    before = db.read_bytes()
    conn = rocpd.connect_read_only(db)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("CREATE TABLE intruder (x)")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM rocpd_info_kernel_symbol")
    finally:
        conn.close()
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no stray file from a mangled URI


@pytest.mark.parametrize("name", ["results.db", "odd?mode=rwc&x#.db", "per%63ent.db"])
def test_discovery_rocpd_connection_is_read_only(tmp_path, monkeypatch, name):
    db = _db(tmp_path / name)
    before = db.read_bytes()
    opened = []
    real_connect = sqlite3.connect

    def spy(*args, **kwargs):
        opened.append((args, kwargs))
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", spy)
    rows = discover.read_rocpd_kernel_stats(db)
    assert [row.name for row in rows] == ["k"]
    assert opened
    for args, kwargs in opened:  # the same connection arguments must refuse a write
        conn = real_connect(*args, **kwargs)
        try:
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                conn.execute("CREATE TABLE intruder (x)")
        finally:
            conn.close()
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


# ---- cmd reaches a shell exactly once ---------------------------------------------------------

HOSTILE_CMD = ("printf '%s|' \"$KT_PROBE\" 'single $KT_PROBE' \"a;b\" > out.txt && "
               "echo \"it's\" >> out.txt; echo `echo tick` >> out.txt")


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def test_cmd_reaches_the_shell_exactly_once_in_capture(tmp_path):
    lib = tmp_path / "decoder"
    lib.mkdir()
    (lib / "librocprof-trace-decoder.so").write_text("")
    call_log = tmp_path / "calls.jsonl"
    env = commands.child_env(os.environ, {"ROCPROF_ATT_LIBRARY_PATH": str(lib), "KT_PROBE": "$HOME;x"})
    env["PATH"] = f"{DOUBLE_DIR}{os.pathsep}{env.get('PATH', '')}"
    env["ROCPROF_DOUBLE_CALL_LOG"] = str(call_log)
    for key in ("ROCPROF_DOUBLE_FAIL", "ROCPROF_DOUBLE_TRACE_CU", "ROCPROF_DOUBLE_KERNELS"):
        env.pop(key, None)
    work = tmp_path / "work"
    work.mkdir()
    job = jobfile.att_job(jobfile.exact_name_regex(synth.demo_gemm().display_name), jobfile.AttSettings())
    # run_logged has no cwd parameter in capture_att: run the app from `work` via the cmd itself
    cmd = f"cd {shlex.quote(str(work))} && {HOSTILE_CMD}"
    capture.capture_att(rocprofv3=str(DOUBLE_DIR / "rocprofv3"), job=job, job_format="yaml",
                        app=commands.AppCommand(cmd), env=env, final_dir=tmp_path / "cap",
                        log_path=tmp_path / "att.log", timeout=60, retries=0)
    (argv,) = _calls(call_log)
    assert argv[argv.index("--") + 1:] == ["bash", "-c", cmd]  # one argv element, verbatim
    # bash expanded "$KT_PROBE" once (its value's own `$HOME;x` stays literal); single quotes kept
    assert (work / "out.txt").read_text() == "$HOME;x|single $KT_PROBE|a;b|it's\ntick\n"
