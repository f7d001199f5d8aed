"""Text outputs are safe for terminals and spreadsheets (issue 22 point 10): ESC sequences (clear
screen, window title, OSC-8 links), C1 CSI, bidi overrides and zero-width characters in kernel
names, paths and asm are shown escaped in the text report, compare.py (text and Markdown),
find_dispatch_dirs (TSV, notes, stderr), plan.md and dispatches.tsv/md; TSV cells that would be
formulas are quoted. One helper does it all: kerneltrace/safetext.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.pipeline.dispatches import notes_markdown
from kerneltrace.pipeline.manifest import manifest_tsv, read_manifest
from kerneltrace.plan.summary import build_summary
from kerneltrace.render.plan import render_markdown as plan_markdown
from kerneltrace.safetext import one_line, terminal_page, tsv_cell
from kerneltrace.synth import spec as synth_spec
from kerneltrace.synth.writers import write_dispatch_dir

REPO = Path(__file__).resolve().parents[1]
PAYLOADS = {
    "clear screen": "\x1b[2J\x1b[H",
    "window title": "\x1b]0;pwned\x07",
    "OSC-8 link": "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "C1 CSI": "\x9b31m",
    "bidi override": "\u202eevil\u202c",
    "bidi isolate": "\u2066x\u2069",
    "zero width": "a\u200bb\u200d\ufeff",
    "carriage return": "\rover",
}
PAYLOAD = "".join(PAYLOADS.values())
# what no output may hold (tab and newline are layout)
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def assert_safe(name: str, text: str) -> None:
    found = UNSAFE.findall(text)
    assert not found, f"{name}: raw {sorted(set(map(repr, found)))}"
    assert "\\x1b" in text or "\\u202e" in text, f"{name}: the payload must reach it (escaped)"


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory) -> Path:
    """A capture whose kernel name, source path and asm carry the payloads."""
    root = tmp_path_factory.mktemp("tty")
    pristine = write_dispatch_dir(root / "p", synth_spec.demo_vec_add())
    path = root / "caps" / pristine.name
    shutil.copytree(pristine, path)
    document = json.loads((path / "code.json").read_text())
    for number, row in enumerate(document["code"]):
        if row[0].lstrip().startswith(";"):
            row[0] = "; vec" + PAYLOAD
            row[3] = "vec" + PAYLOAD
        else:
            row[0] = row[0] + " ; " + PAYLOAD
            if row[3]:
                row[3] = row[3].replace("/", "/" + PAYLOAD + "/", 1) if number % 2 else row[3]
    (path / "code.json").write_text(json.dumps(document))
    return path


def _cli(script: str, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "scripts" / script), *map(str, args)],
                          capture_output=True, text=True, check=False, errors="surrogateescape")


def test_text_report_is_terminal_safe(hostile_dir):
    proc = _cli("hotspot_analyzer.py", hostile_dir, "--arch", "gfx942", "--detail")
    assert proc.returncode == 0, proc.stderr
    assert_safe("text report", proc.stdout)
    assert not UNSAFE.search(proc.stderr)


def test_compare_text_and_markdown_are_terminal_safe(hostile_dir, tmp_path):
    doc = analyze_dispatch(hostile_dir, arch="gfx942")
    before = tmp_path / "before.json"
    before.write_text(json.dumps(doc))
    markdown = tmp_path / "cmp.md"
    proc = _cli("compare.py", before, before, "--markdown", markdown)
    assert proc.returncode == 0, proc.stderr
    assert_safe("compare text", proc.stdout)
    assert_safe("compare --markdown", markdown.read_text())


def test_plan_md_is_terminal_safe(hostile_dir):
    doc = analyze_dispatch(hostile_dir, arch="gfx942")
    assert_safe("plan.md", plan_markdown(build_summary([doc], [], run="r"), [doc]))


def test_find_dispatch_dirs_outputs_are_terminal_and_spreadsheet_safe(hostile_dir, tmp_path):
    odd = hostile_dir.parent / ("ui_output_agent_7_dispatch_9" + PAYLOADS["bidi override"])
    shutil.copytree(hostile_dir, odd)  # a bidi character in a folder name: skipped with a note
    notes = tmp_path / "dispatches.md"
    proc = _cli("find_dispatch_dirs.py", hostile_dir.parent, "--notes", notes)
    assert proc.returncode == 0, proc.stderr
    assert_safe("dispatches.tsv", proc.stdout)
    assert_safe("dispatches.md", notes.read_text())
    assert "\\u202e" in proc.stderr and not UNSAFE.search(proc.stderr)
    assert str(odd) not in proc.stdout  # never carried as data


@pytest.mark.parametrize("lead", ["=", "+", "-", "@"])
def test_tsv_cells_that_would_be_formulas_are_quoted_and_read_back(lead, tmp_path):
    kernel = f'{lead}HYPERLINK("https://evil.example","x")'
    row = {"id": "d000", "kernel_id": "", "kernel": kernel, "dispatch_dir": "/caps/d", "label": lead + "l",
           "agent": "1", "dispatch": "2", "kernel_trace_csv": "", "agent_info_csv": "", "pmc_files": "",
           "source": "dir", "wave_files": "0"}
    text = manifest_tsv([row])
    cells = text.splitlines()[1].split("\t")
    assert cells[2] == "'" + kernel and cells[4] == "'" + lead + "l"
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in cells)
    (tmp_path / "m.tsv").write_text(text)
    assert read_manifest(tmp_path / "m.tsv")[0]["kernel"] == kernel  # the pipeline reads the name back


def test_the_helper_escapes_every_payload_and_keeps_plain_text():
    for name, payload in PAYLOADS.items():
        for escaped in (one_line(payload), terminal_page(payload), tsv_cell(payload)):
            assert not UNSAFE.search(escaped), name
    assert terminal_page("a\tb\nc") == "a\tb\nc"
    assert one_line("a\tb\nc\x1b") == "a\\tb\\nc\\x1b"
    assert tsv_cell("vec_add_float(float const*, int)") == "vec_add_float(float const*, int)"
    assert notes_markdown([], ["dropped " + PAYLOAD], "x").count("\\x1b") >= 3


def test_printable_text_skips_the_pattern_and_is_what_the_pattern_leaves():
    # the fast path (str.isprintable, a conjunction over characters: no pattern compiled) is exact
    # when no printable character is one the pattern escapes
    from kerneltrace import safetext

    line = re.compile(safetext._PATTERNS["line"])
    printable_but_unsafe = [hex(code) for code in range(0x110000)
                            if chr(code).isprintable() and line.search(chr(code))]
    assert printable_but_unsafe == []
    assert terminal_page("k═…█\tb\n") == "k═…█\tb\n" and one_line("k═ x") == "k═ x"
    assert terminal_page("k═\u202e\t\x1b") == "k═\\u202e\t\\x1b"
    assert one_line("\u00a0\ue000\u2028") == "\u00a0\ue000\\u2028"  # unprintable yet safe: kept
