"""Every Markdown output escapes user-controlled text (issue 14 point 3).

Kernel names, source paths, dispatch dirs, labels, ids, asm, run/baseline names carry planted
payloads; each Markdown output (plan.md, compare --markdown, regression.md, dispatches.md, the
discovery table) is rendered with a CommonMark renderer (markdown-it-py, tables on, raw HTML on as
in most renderers) and then (a) parsed: no element or attribute that can run code, and (b) loaded
in headless Chromium: no payload ran (each payload appends a <pwned-*> element when it runs).
Chromium is optional: that half is skipped when it is absent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

markdown_it = pytest.importorskip("markdown_it")

from kerneltrace.compare.gate import parse_thresholds  # noqa: E402
from kerneltrace.compare.regression import regression_check  # noqa: E402
from kerneltrace.document.hotspot_report import analyze_dispatch  # noqa: E402
from kerneltrace.pipeline.dispatches import notes_markdown  # noqa: E402
from kerneltrace.plan.summary import build_summary  # noqa: E402
from kerneltrace.render.compare import render_regression_markdown  # noqa: E402
from kerneltrace.render.plan import render_markdown as plan_markdown  # noqa: E402
from kerneltrace.rocprof import discover  # noqa: E402
from kerneltrace.synth import spec as synth_spec  # noqa: E402
from kerneltrace.synth.writers import write_dispatch_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _run(tag: str) -> str:
    return f'document.body.appendChild(document.createElement("pwned-{tag}"))'


PAYLOADS = [
    f"<script>{_run('a')}</script>",
    f"<img src=x onerror='{_run('b')}'>",
    f"`</code><img src=x onerror='{_run('c')}'>`",
    f"[click](javascript:{_run('d')})",
    f"<svg onload='{_run('e')}'>",
    f"--><script>{_run('f')}</script><!--",
    f"``<img src=x onerror='{_run('g')}'>``",
    f"&lt;img src=x onerror='{_run('h')}'&gt;",
    f"<javascript:{_run('i')}>",
    f"| <b onmouseover='{_run('j')}'>cell</b> |",
    f"\n\n<script>{_run('k')}</script>\n\n",
    f"![x](x' onerror='{_run('l')})",
]
PAYLOAD = " ".join(PAYLOADS)
SAFE_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "table", "thead", "tbody", "tr",
             "th", "td", "code", "pre", "strong", "em", "blockquote", "hr", "br", "a", "html", "body", "head",
             "meta"}


@pytest.fixture(scope="module")
def hostile_doc(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("md")
    doc = analyze_dispatch(write_dispatch_dir(root, synth_spec.demo_vec_add()), arch="gfx942")
    doc["kernel"] = "k" + PAYLOAD
    doc["dispatch_dir"] = "/caps/" + PAYLOAD
    doc.setdefault("dispatch", {})["label"] = "label" + PAYLOAD
    for line in doc["source_lines"]:
        line["location"] = line["location"].replace("/synthetic/src/", "/src/" + PAYLOAD + "/")
    for ins in doc["instructions"]:
        ins["asm"] = ins["asm"] + " ; " + PAYLOADS[len(ins["asm"]) % len(PAYLOADS)]
        ins["source"] = (ins.get("source") or "").replace("/synthetic/src/", "/src/" + PAYLOAD + "/")
    doc["warnings"] = [*doc.get("warnings", []), "warning " + PAYLOAD]
    return doc


def _outputs(doc: dict, tmp_path: Path) -> dict[str, str]:
    """Every Markdown output of the tool, built from the hostile document."""
    outputs = {"plan.md": plan_markdown(build_summary([doc], [], run="r"), [doc])}
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(doc))
    worse = json.loads(json.dumps(doc))
    for line in worse["source_lines"]:
        line["stall_cycles"] = line["stall_cycles"] * 3 + 1000
    for ins in worse["instructions"]:
        ins["stall_cycles"] = (ins.get("stall_cycles") or 0) * 3 + 50
    worse["totals"]["stall_cycles"] = sum(ins["stall_cycles"] for ins in worse["instructions"])
    after.write_text(json.dumps(worse))
    md = tmp_path / "compare.md"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "compare.py"), str(before), str(after),
                           "--markdown", str(md), "--quiet"], capture_output=True, text=True, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    outputs["compare --markdown"] = md.read_text()
    hot = tmp_path / "hot.json"
    hot.write_text(json.dumps(worse))
    base = tmp_path / ("base" + PAYLOADS[5].replace("/", "_"))
    base.mkdir()  # an empty baseline folder: "no baseline for run" note naming the path
    result = regression_check(base, "run1", [hot], parse_thresholds(""))
    outputs["regression.md"] = render_regression_markdown(result, "run1")
    row = {"id": "d000" + PAYLOAD, "kernel": "k" + PAYLOAD, "dispatch_dir": "/caps/" + PAYLOAD,
           "label": "l" + PAYLOAD}
    outputs["dispatches.md"] = notes_markdown([row], ["dropped /caps/" + PAYLOAD + ": broken"],
                                                     "searched /caps/" + PAYLOAD)
    outputs["discovery table"] = discover.to_markdown(discover._ranked([("k" + PAYLOAD, 1, 10.0)]))
    return outputs


def _html(markdown: str) -> str:
    body = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
    return f"<html><head><meta charset='utf-8'></head><body>{body}</body></html>"


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in SAFE_TAGS:
            self.bad.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith(("javascript:", "data:")):
                self.bad.append(f"<{tag} {name}={value!r}>")


OUTPUT_NAMES = ["plan.md", "compare --markdown", "regression.md", "dispatches.md", "discovery table"]


@pytest.fixture(scope="module")
def rendered(hostile_doc, tmp_path_factory) -> dict[str, str]:
    outputs = _outputs(hostile_doc, tmp_path_factory.mktemp("out"))
    assert sorted(outputs) == sorted(OUTPUT_NAMES)
    return outputs


@pytest.mark.parametrize("name", OUTPUT_NAMES)
def test_markdown_output_renders_no_active_element(rendered, name):
    assert "pwned" in rendered[name], "the payload must reach the output (as text)"
    parser = _Elements()
    parser.feed(_html(rendered[name]))
    assert not parser.bad, f"{name}: active markup from user text: {parser.bad[:5]}"


def test_html_comment_header_cannot_be_closed_by_a_path(rendered):
    header = rendered["regression.md"].splitlines()[0]
    assert header.startswith("<!--") and header.endswith("-->") and header.count("-->") == 1


CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
                None)


def _chromium_dom(page: Path, tmp_path: Path) -> str:
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000",
                           "--dump-dom", page.as_uri()], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian package chromium)")
def test_no_planted_payload_runs_in_a_browser(rendered, tmp_path):
    pages = []
    for index, name in enumerate(OUTPUT_NAMES):
        page = tmp_path / f"out{index}.html"
        page.write_text(_html(rendered[name]), encoding="utf-8")
        pages.append((name, page))
    control = tmp_path / "control.html"  # proves the detector: a live payload is seen
    control.write_text(f"<html><body><img src=x onerror='{_run('z')}'></body></html>")
    assert "<pwned-z>" in _chromium_dom(control, tmp_path)
    for name, page in pages:
        dom = _chromium_dom(page, tmp_path)
        assert "<body>" in dom or "<body" in dom
        assert "<pwned-" not in dom, f"{name}: a planted payload ran in the browser"
