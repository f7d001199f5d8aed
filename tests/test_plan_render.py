"""Rendering tests: golden Markdown, self-contained escaped HTML, summary order, headless browser.

Regenerate the golden file (then review the diff by hand) with:
    UPDATE_GOLDEN=1 .venv/bin/pytest -q tests/test_plan_render.py -k golden
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from html_scripts import page_scripts_only
from plan_synthetic import Ins, hotspot_doc, mfma_loop_with_load

from kerneltrace.plan.summary import build_summary
from kerneltrace.render.markdown import md_code, md_text
from kerneltrace.render.plan import render_html, render_markdown

GOLDEN = Path(__file__).parent / "golden" / "plan_synthetic.md"
EVIL = "<script>alert(1)</script>"


def _docs() -> list[dict]:
    program = [
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:1", 800, 810),
        *mfma_loop_with_load(),
        Ins("s_barrier", "barrier", "k.py:70", 400, 410),
    ]
    occupancy = {
        "waves_per_simd": 2,
        "limited_by": "vgpr",
        "limits": {"vgpr": 2, "sgpr": 8, "lds": 5, "workgroup": 8, "hardware": 8},
        "registers": {},
        "next_level": {"waves_per_simd": 3, "max_vgprs": 168},
        "sources": {},
    }
    return [hotspot_doc(program, entry="k.py:1", occupancy=occupancy)]


def test_markdown_matches_golden_file():
    docs = _docs()
    text = render_markdown(build_summary(docs, [], run="golden"), docs)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_markdown_structure_in_order_and_entry_line_not_ranked():
    docs = _docs()
    text = render_markdown(build_summary(docs, [], run="r"), docs)
    headings = [
        "### Stall Summary",
        "### Hotspot Analysis",
        "### Occupancy",
        "### Priority Order",
        "## Caveats",
    ]
    positions = [text.index(h) for h in headings]
    assert positions == sorted(positions)
    priority = text[text.index("### Priority Order") : text.index("## Caveats")]
    assert priority.index("k.py:20") < priority.index("k.py:70")  # the MFMA loop line before the barrier line
    assert "k.py:1" not in priority  # the entry line is explained elsewhere, never ranked


def test_summary_findings_in_priority_order_with_gain_ranges():
    summary = build_summary(_docs(), [])
    assert summary["schema"] == "kerneltrace.summary/1"
    findings = summary["kernels"][0]["dispatches"][0]["findings"]
    ranks = [("HIGH", "MED", "LOW").index(f["priority"]) for f in findings if f["ranked"]]
    assert ranks == sorted(ranks)
    for f in findings:
        gain = f["estimated_gain"]
        if gain and gain["high"]:
            assert gain["low"] < gain["high"] and gain["basis"] and "re-timing" in gain["status"]
        for e in f["evidence"]:
            assert {"location", "instruction_index"} <= set(e)


def test_markdown_sanitises_user_text():
    assert md_text("a|b <script> *x*") == "a\\|b \\<script\\> \\*x\\*"
    assert md_code("x ` y") == "``x ` y``"
    docs = [hotspot_doc(mfma_loop_with_load(), kernel=f"k{EVIL}`|")]
    text = render_markdown(build_summary(docs, []), docs)
    assert "``k<script>alert(1)</script>`|``" in text  # inside a code span: shown verbatim, inert


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.svg_parents: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.svg_parents.append(self.stack[-1] if self.stack else "")
        self.tags.append((tag, dict(attrs)))
        self.stack.append(tag)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        self.text.append(data)


def _html(tmp_path: Path | None = None) -> str:
    program = mfma_loop_with_load()
    program[3] = Ins(
        "global_load_dwordx4 v[20:23], v[2:3], off", "VMEM-load", f"k.py:20 {EVIL}", 300, 320
    )
    program[5] = Ins("s_waitcnt vmcnt(0)", "VMEM-wait", f"k.py:20 {EVIL}", 900, 910)
    docs = [hotspot_doc(program, kernel=f"gemm{EVIL}")]
    return render_html(build_summary(docs, []), docs, [])


def test_html_is_self_contained_escaped_and_charts_inline():
    html = _html()
    parser = _Collector()
    parser.feed(html)
    tags = [tag for tag, _ in parser.tags]
    assert "img" not in tags and "link" not in tags and "iframe" not in tags
    assert page_scripts_only(html) == 2  # only the explorer's own JSON data and script
    for tag, attrs in parser.tags:
        for name in ("src", "href", "xlink:href"):
            value = attrs.get(name) or ""
            assert not value or value.startswith("#"), (tag, name, value)
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', ""
    )
    assert EVIL not in html
    assert "gemm&lt;script&gt;alert(1)&lt;/script&gt;" in html
    text = "".join(parser.text)
    assert f"gemm{EVIL}" in text and f"k.py:20 {EVIL}" in text  # shown to the reader as text
    assert tags.count("svg") >= 2 and set(parser.svg_parents) == {"div"}


def test_render_plan_cli_writes_three_files_and_rejects_bad_input(tmp_path):
    docs = _docs()
    path = tmp_path / "h.json"
    path.write_text(json.dumps(docs[0]))
    script = Path(__file__).resolve().parents[1] / "scripts" / "render_plan.py"
    out = tmp_path / "reports" / "r"
    done = subprocess.run(
        [
            sys.executable,
            str(script),
            "--hotspots",
            str(path),
            "--out-dir",
            str(out),
            "--run",
            "r",
            "--charts",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} >= {"plan.md", "plan.html", "summary.json", "charts"}
    assert json.loads((out / "summary.json").read_text())["run"] == "r"
    assert all(p.read_text().startswith("<svg") for p in (out / "charts").glob("*.svg"))
    bad = subprocess.run(
        [
            sys.executable,
            str(script),
            "--hotspots",
            str(tmp_path / "missing.json"),
            "--out-dir",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr


def test_html_opens_in_headless_browser(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium not installed")
    page = tmp_path / "plan.html"
    page.write_text(_html(), encoding="utf-8")
    shot = tmp_path / "plan.png"
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--window-size=1100,1400",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 10_000  # a rendered page, not an empty image
    assert "Uncaught" not in done.stderr


def test_memory_section_shows_l2_metrics_and_verdicts():
    docs = [
        hotspot_doc(
            [
                Ins("global_load_dwordx4 v[4:7], v[2:3], off", "VMEM-load", "k.py:80", 500, 520),
                Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:80", 500, 510),
            ]
        )
    ]
    l2 = {
        "schema": "kerneltrace.l2/1",
        "kernel": "gemm_kernel",
        "aggregate": {
            "l2_hit_rate": 0.017,
            "read_32b_fraction": 0.0,
            "overfetch": 1.0,
            "fraction_of_peak": 0.55,
        },
        "ratio_of_sums": {},
        "verdicts": ["pure streaming <b>"],
    }
    summary = build_summary(docs, [l2])
    text = render_markdown(summary, docs)
    assert "### Memory (L2)" in text and "pure streaming \\<b\\>" in text
    assert "Loads are already at the practical limit" in text
    html = render_html(summary, docs, [l2])
    assert "pure streaming &lt;b&gt;" in html and html.count("<svg") >= 3
