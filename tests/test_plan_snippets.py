"""Per-line stall heat over the source snippet in plan.html: escaping, safe loading, graceful absence."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from plan_synthetic import hotspot_doc, mfma_loop_with_load

from kerneltrace.analysis.hotspots import user_lines
from kerneltrace.plan.summary import build_summary
from kerneltrace.readers.snippets import load_snippets
from kerneltrace.render.plan import render_html, source_heat

REPO = Path(__file__).resolve().parents[1]
EVIL = "<script>alert('x')</script>"


def _dispatch_dir(root: Path, source_lines: list[str]) -> Path:
    directory = root / "ui_output_agent_1_dispatch_7"
    directory.mkdir()
    (directory / "source_0_k.py").write_text("\n".join(source_lines) + "\n", encoding="utf-8")
    (directory / "snapshots.json").write_text(
        json.dumps({"/": {"src": {"k.py": "source_0_k.py"}}}), encoding="utf-8"
    )
    return directory


def _doc(directory: Path | str) -> dict:
    program = mfma_loop_with_load()
    for ins in program:
        ins.source = "/src/" + ins.source
    doc = hotspot_doc(program)
    doc["dispatch_dir"] = str(directory)
    return doc


def _source() -> list[str]:
    lines = [f"line_{n} = {n}" for n in range(1, 41)]
    lines[19] = f"x = load(ptr)  # {EVIL}"  # line 20: the P1 load line
    return lines


def test_snippets_window_the_top_lines_and_heat_follows_the_stall(tmp_path):
    directory = _dispatch_dir(tmp_path, _source())
    doc = _doc(directory)
    locations = [line["location"] for line in user_lines(doc["source_lines"], 5)]
    assert locations[0] == "/src/k.py:20"
    snippets = load_snippets(directory, locations, context=2)
    assert snippets["/src/k.py:20"]["first_line"] == 18
    assert snippets["/src/k.py:20"]["lines"][2].startswith("x = load(ptr)")
    blocks = source_heat(doc, snippets)
    rows = {row["number"]: row for block in blocks for row in block["rows"]}
    hottest = max(rows.values(), key=lambda row: row["intensity"])
    assert hottest["number"] == 20 and hottest["hot"] and hottest["intensity"] == 1.0
    assert rows[19]["stall_cycles"] is None and rows[19]["intensity"] == 0.0
    # separate windows unless they touch; hottest first, ties (k.py:5, k.py:30: 10 each) by line
    assert [block["rows"][0]["number"] for block in blocks] == [18, 3, 28]


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_hostile_source_text_is_escaped_in_plan_html(tmp_path):
    directory = _dispatch_dir(tmp_path, _source())
    doc = _doc(directory)
    snippets = {doc["dispatch_dir"]: load_snippets(directory, [line["location"] for line in user_lines(doc["source_lines"], 5)])}
    html = render_html(build_summary([doc], []), [doc], [], snippets)
    assert "Source with stall heat" in html
    assert EVIL not in html and "&lt;script&gt;" in html
    parser = _Collector()
    parser.feed(html)
    assert "script" not in parser.tags
    assert any(EVIL in chunk for chunk in parser.text)  # shown to the reader as text


def test_missing_or_unsafe_sources_give_no_snippet_and_no_failure(tmp_path):
    assert load_snippets(tmp_path / "absent", ["/src/k.py:20"]) == {}
    assert load_snippets(None, ["/src/k.py:20"]) == {}
    bare = tmp_path / "bare"
    bare.mkdir()
    assert load_snippets(bare, ["/src/k.py:20"]) == {}  # no snapshots.json
    directory = _dispatch_dir(tmp_path, _source()[:5])
    # line beyond the copy, a file not in the snapshot, a location without a line number
    assert load_snippets(directory, ["/src/k.py:20", "/src/other.py:3", "<unmapped>"]) == {}
    (directory / "source_0_k.py").unlink()  # listed but the copy is gone
    assert load_snippets(directory, ["/src/k.py:2"]) == {}
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "link.py").symlink_to(outside)
    (evil / "snapshots.json").write_text(json.dumps({"/": {"src": {"k.py": "link.py"}}}))
    assert load_snippets(evil, ["/src/k.py:1"]) == {}
    (evil / "snapshots.json").write_text(json.dumps({"/": {"src": {"k.py": "../outside.py"}}}))
    assert load_snippets(evil, ["/src/k.py:1"]) == {}


def test_render_plan_cli_without_sources_still_writes_the_plan(tmp_path):
    path = tmp_path / "h.json"
    path.write_text(json.dumps(_doc(tmp_path / "gone")))
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "render_plan.py"), "--hotspots", str(path)]
        + ["--out-dir", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    html = (out / "plan.html").read_text()
    assert "Per-line stall heat" in html and "Source with stall heat" not in html


def test_render_plan_cli_shows_the_snippets_the_document_carries_without_the_capture(tmp_path):
    import shutil

    directory = _dispatch_dir(tmp_path, _source())
    doc = _doc(directory)
    doc["snippets"] = load_snippets(directory, [line["location"] for line in user_lines(doc["source_lines"], 5)])
    shutil.rmtree(directory)  # reports/ alone: the plan never reopens the capture
    path = tmp_path / "h.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "render_plan.py"), "--hotspots", str(path)]
        + ["--out-dir", str(out)],
        check=True,
        capture_output=True,
    )
    html = (out / "plan.html").read_text()
    assert "Source with stall heat" in html and "x = load(ptr)" in html
    assert EVIL not in html


def test_hotspot_document_carries_the_top_user_lines_snippets():
    from kerneltrace.document.hotspot_report import SNIPPET_LINES, analyze_dispatch

    directory = REPO / "examples" / "synthetic_gemm" / "ui_output_agent_20001_dispatch_1"
    doc = analyze_dispatch(directory)
    expected = [line["location"] for line in user_lines(doc["source_lines"], SNIPPET_LINES)]
    assert expected and list(doc["snippets"]) == expected
    first = doc["snippets"][expected[0]]
    assert first["path"] in expected[0] and first["lines"]
