"""Hostile files in place of inputs (issue 14 points 5, 7, 10): FIFOs, devices, sockets, directories,
oversized files, malformed occupancy.json, 4300+-digit integers, wrong schemas, a failing renderer.

A FIFO is opened non-blocking, so these tests return at once with the protection in place; with it
removed they hang on the FIFO (that is the failure they guard against)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.errors import InputError
from kerneltrace.readers import regular
from kerneltrace.synth import spec as synth_spec
from kerneltrace.synth.writers import write_dispatch_dir

REPO = Path(__file__).resolve().parents[1]
HUGE_INT = "1" + "0" * 5000  # over Python's 4300-digit int parsing limit


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return write_dispatch_dir(tmp_path_factory.mktemp("syn"), synth_spec.demo_vec_add())


@pytest.fixture
def dispatch(pristine, tmp_path) -> Path:
    copy = tmp_path / pristine.name
    shutil.copytree(pristine, copy)
    return copy


def _replace_with(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "symlink-to-dev-zero":
        path.symlink_to("/dev/zero")
    else:
        raise AssertionError(kind)


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, check=False)


# ---- point 7: only regular files are read -------------------------------------------------

@pytest.mark.parametrize("kind, expected", [("fifo", "a FIFO"), ("symlink-to-dev-zero", "a character device"),
                                            ("dir", "a directory")])
def test_read_regular_refuses_what_is_not_a_regular_file(tmp_path, kind, expected):
    path = tmp_path / "x.json"
    path.write_text("{}")
    _replace_with(path, kind)
    with pytest.raises(InputError, match=expected):
        regular.read_regular(path, "x.json")


def test_read_regular_refuses_a_socket(tmp_path):
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(InputError, match="cannot read|socket"):
            regular.read_regular(path, "x")
    finally:
        server.close()


def test_reads_are_bounded(tmp_path, monkeypatch):
    path = tmp_path / "agent_info.csv"
    path.write_bytes(b"x" * 4096)
    with pytest.raises(InputError, match="more than such a file can legitimately hold"):
        regular.read_regular(path, "agent_info.csv", limit=1024)
    assert regular.read_regular(path, "agent_info.csv", limit=4096) == b"x" * 4096


@pytest.mark.parametrize("name", ["occupancy.json", "filenames.json", "snapshots.json", "se0_sm0_sl0_wv0.json"])
@pytest.mark.parametrize("kind", ["fifo", "symlink-to-dev-zero"])
def test_optional_input_replaced_by_a_fifo_or_device_is_skipped_with_a_warning(dispatch, name, kind):
    _replace_with(dispatch / name, kind)
    doc = analyze_dispatch(dispatch, arch="gfx942", waves=True)
    text = json.dumps(doc)
    what = "a FIFO" if kind == "fifo" else "a character device"
    assert what in text, f"no warning naming {what} for {name}"
    if name == "filenames.json":
        assert doc["waves"]["consistency"]["ok"] is False
    if name == "occupancy.json":
        assert doc["waves"]["occupancy"]["available"] is False
        assert "unreadable" in doc["waves"]["occupancy"]["note"]


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-dev-zero"])
def test_code_json_replaced_by_a_fifo_or_device_is_one_error_line(dispatch, kind):
    _replace_with(dispatch / "code.json", kind)
    proc = _cli(REPO / "scripts" / "hotspot_analyzer.py", dispatch, "--arch", "gfx942")
    assert proc.returncode == 2 and proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr
    assert "not a regular file" in proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-dev-zero"])
def test_csv_given_as_a_fifo_or_device_is_skipped_with_a_warning(dispatch, tmp_path, kind):
    csv = tmp_path / "kernel_trace.csv"
    csv.write_text("x\n")
    _replace_with(csv, kind)
    proc = _cli(REPO / "scripts" / "hotspot_analyzer.py", dispatch, "--kernel-trace", csv, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert any(f"ignored {csv}" in w and "not a regular file" in w for w in json.loads(proc.stdout)["warnings"])


def test_counter_csv_given_as_a_fifo_is_one_error_line(tmp_path):
    fifo = tmp_path / "pass_1_counter_collection.csv"
    os.mkfifo(fifo)
    proc = _cli(REPO / "scripts" / "pmc_l2_analyzer.py", fifo)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not a regular file" in proc.stderr, proc.stderr


# ---- point 10: occupancy.json, huge integers, unreadable optional files, schemas -----------

OCCUPANCY = [
    {"0": [["a", "b", "c", "d", "e", "f"]]},
    {"0": [[1, 0, 0, 0, 1, 0], [1]]},
    {"0": [[2**70, 0, 0, 0, 1, 0], [2**70 + 5, 0, 0, 0, 0, 0]]},
    {"\u00b2": [[1, 0, 0, 0, 1, 0]]},
    {"0": [[9, 0, 0, 0, 1, 0], [1, 0, 0, 0, 0, 0]]},
    {"0": [[1.5, 0, 0, 0, 1, 0], [None, 0, 0, 0, 0, 0]]},
    {"0": [[[1], 0, 0, 0, 1, 0]]},
    {"0": [1, [1, 0, 0, 0, 1, 0]]},
    [1, 2, 3],
]


@pytest.mark.parametrize("document", OCCUPANCY, ids=range(len(OCCUPANCY)))
def test_hostile_occupancy_json_never_ends_in_a_traceback(dispatch, document):
    (dispatch / "occupancy.json").write_text(json.dumps(document))
    doc = analyze_dispatch(dispatch, arch="gfx942", waves=True)
    occupancy = doc["waves"]["occupancy"]
    assert occupancy["available"] in (True, False)
    if not occupancy["available"]:
        assert occupancy["note"]
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("name", ["occupancy.json", "filenames.json", "snapshots.json", "code.json"])
def test_integer_literal_over_4300_digits_is_no_traceback(dispatch, name):
    path = dispatch / name
    text = path.read_text()
    path.write_text(text.replace("1", HUGE_INT, 1) if name == "code.json" else
                    '{"x": ' + HUGE_INT + "}")
    proc = _cli(REPO / "scripts" / "hotspot_analyzer.py", dispatch, "--arch", "gfx942", "--waves",
                "--json", "-")
    assert "Traceback" not in proc.stderr
    if proc.returncode == 2:
        assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1
    else:
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", ["occupancy.json", "filenames.json"])
def test_unreadable_optional_file_is_reported_as_unreadable_not_absent(dispatch, name):
    _replace_with(dispatch / name, "dir")  # root reads every file; a directory cannot be read
    waves = analyze_dispatch(dispatch, arch="gfx942", waves=True)["waves"]
    if name == "occupancy.json":
        assert "unreadable" in waves["occupancy"]["note"] and "not present" not in waves["occupancy"]["note"]
    else:
        assert waves["consistency"]["ok"] is False
        assert any("filenames.json unreadable" in d for d in waves["consistency"]["details"])


def test_absent_optional_file_is_still_reported_as_not_present(dispatch):
    (dispatch / "occupancy.json").unlink()
    waves = analyze_dispatch(dispatch, arch="gfx942", waves=True)["waves"]
    assert waves["occupancy"]["note"] == "occupancy.json not present"


@pytest.mark.parametrize("content", ['{"schema": "kerneltrace.l2/1"}', '{"no": "schema"}', '{"schema": 7}',
                                     "[1, 2]", '{"schema": ' + HUGE_INT + "}"])
def test_render_plan_and_compare_given_a_wrong_or_missing_schema_say_one_line(tmp_path, content):
    doc = tmp_path / "doc.json"
    doc.write_text(content)
    for argv in ([REPO / "scripts" / "render_plan.py", "--hotspots", doc, "--out-dir", tmp_path / "out"],
                 [REPO / "scripts" / "compare.py", doc, doc]):
        proc = _cli(*argv)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr


# ---- point 5: charts are text; a failing renderer leaves the previous outputs whole --------

def _plan_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("render_plan_cli", REPO / "scripts" / "render_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hotspot_json(dispatch: Path, out: Path) -> Path:
    from kerneltrace.atomic import write_json

    write_json(out, analyze_dispatch(dispatch, arch="gfx942"))
    return out


def test_dollar_math_in_a_source_path_is_drawn_as_text(dispatch, tmp_path):
    doc_path = _hotspot_json(dispatch, tmp_path / "h.json")
    doc = json.loads(doc_path.read_text())
    odd = "/src/$\\frac{a}{b}$_$x^2$.py"
    for line in doc["source_lines"]:
        line["location"] = line["location"].replace("/synthetic/src/vec_add.cpp", odd)
    doc_path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert _plan_module().main(["--hotspots", str(doc_path), "--out-dir", str(out), "--run", "r", "--charts"]) == 0
    svgs = "".join(p.read_text() for p in (out / "charts").glob("*.svg"))
    assert "$\\frac{a}{b}$_$x^2$.py" in svgs


def test_failing_renderer_leaves_the_previous_outputs_whole(dispatch, tmp_path, monkeypatch):
    doc_path = _hotspot_json(dispatch, tmp_path / "h.json")
    module = _plan_module()
    out = tmp_path / "out"
    assert module.main(["--hotspots", str(doc_path), "--out-dir", str(out), "--run", "r", "--charts"]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert len(before) >= 4

    import kerneltrace.render.plan as plan_render

    def broken(*args, **kwargs):
        raise RuntimeError("renderer failed half-way")

    monkeypatch.setattr(plan_render, "render_html", broken)
    with pytest.raises(RuntimeError):  # another run name: every output would change
        module.main(["--hotspots", str(doc_path), "--out-dir", str(out), "--run", "another-run", "--charts"])
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
