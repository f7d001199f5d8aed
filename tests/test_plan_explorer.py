"""The data of plan.html's source ⇄ ISA explorer (render/explorer.py) and the document fields it
reads (source_files, waves.wait_links, waves.peers.per_hit): escaping, taken ratios, wait → load
links, findings' rows. The browser side is tests/test_plan_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from html_scripts import page_scripts_only

from kerneltrace.isa.classify import classify
from kerneltrace.plan.summary import build_summary
from kerneltrace.readers import snippets as snippet_reader
from kerneltrace.readers.snapshots import read_snapshots
from kerneltrace.render.explorer import COUNTED, _taken_ratios, explorer_data, script_json
from kerneltrace.render.plan import render_html

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "synthetic_gemm" / "ui_output_agent_20001_dispatch_1"
HOSTILE = '</script><img src=x onerror=alert(1)>&amp;<!-- \u2028\u2029'


@pytest.fixture(scope="module")
def example():
    from kerneltrace.document.hotspot_report import analyze_dispatch

    doc = analyze_dispatch(EXAMPLE, waves=True)
    dispatch = build_summary([doc], [])["kernels"][0]["dispatches"][0]
    return doc, dispatch, explorer_data(dispatch, doc)


def test_script_json_cannot_end_or_comment_out_the_script_element():
    data = {"asm": HOSTILE, "nested": [HOSTILE, {"k": "</SCRIPT >"}]}
    text = str(script_json(data))
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == data


def _program(rows: list[tuple[str, int]]) -> list[dict]:
    return [{"index": n, "pc": 4 * n, "asm": asm, "type": classify(asm), "hits": hits}
            for n, (asm, hits) in enumerate(rows)]


def test_taken_ratios_come_from_hits_or_stay_unknown():
    program = _program([
        ("s_mov_b32 s0, 0", 10),
        ("v_add_u32 v0, v1, v2", 10),
        ("s_cbranch_scc1 2", 10),  # → row 5; fall-through row 3 has no other way in: 6 of 10 taken
        ("v_mul_f32 v0, v1, v2", 4),
        ("s_branch 1", 4),  # → row 6, always taken
        ("v_sub_f32 v0, v1, v2", 6),
        ("s_cbranch_vccz 65533", 10),  # −3 dwords → row 4; row 7 runs every time: never taken
        ("s_endpgm", 10),
    ])
    assert _taken_ratios(program) == [[2, 5, 0.6, True], [4, 6, 1.0, False], [6, 4, 0.0, True]]
    # row 0's fall-through (row 1) is a loop header and its target (row 2) is also fallen into:
    # unknown; the latch (row 3, −3 dwords → row 1) falls through to row 4 once in 8: 7 taken
    looped = _program([("s_cbranch_scc0 1", 1), ("v_add_u32 v0, v1, v2", 8),
                       ("v_mul_f32 v0, v1, v2", 8), ("s_cbranch_scc1 65533", 8), ("s_endpgm", 1)])
    assert _taken_ratios(looped) == [[0, 2, None, True], [3, 1, 0.875, True]]


def test_columns_lines_and_findings_match_the_document(example):
    doc, dispatch, data = example
    isa = data["isa"]
    assert isa["index"] == sorted(ins["index"] for ins in doc["instructions"])
    assert {len(column) for column in isa.values()} == {doc["totals"]["instructions"]}
    by_index = {ins["index"]: ins for ins in doc["instructions"]}
    for pos, index in enumerate(isa["index"]):
        ins = by_index[index]
        assert (isa["asm"][pos], isa["stall"][pos], isa["hits"][pos]) == (ins["asm"], ins["stall_cycles"], ins["hits"])
        assert index in doc["source_lines"][isa["line"][pos]]["instructions"]  # same line ids as the document
    assert [f["path"] for f in data["files"]] == list(doc["source_files"])
    assert data["files"][0]["lines"] == doc["source_files"][data["files"][0]["path"]]["lines"]
    for finding, summary in zip(data["findings"], dispatch["findings"], strict=True):
        named = {e["instruction_index"] for e in summary["evidence"] if e.get("instruction_index") is not None}
        assert finding["id"] == summary["id"]
        assert set(finding["rows"]) == named or not named
        if summary.get("location"):
            assert finding["locations"][0] == summary["location"]  # the source view opens there


def test_wait_links_carry_the_wave_attribution_and_per_hit_percentiles(example):
    doc, _, data = example
    waves = doc["waves"]
    assert data["wait_basis"] == "waves"
    links = {w[0]: w for w in data["waits"]}
    listed = {w["index"]: w for w in waves["wait_links"]}
    assert set(listed) <= set(links)
    for hot in waves["waitcnt"]:  # the hot waits' full entries agree with the complete links
        producers = {(p["index"], p["cycles"], p["waits"]) for p in hot["producers"]}
        assert {tuple(p) for p in listed[hot["index"]]["producers"]} == producers
        assert links[hot["index"]][3] == "waves" and {tuple(p) for p in links[hot["index"]][1]} == producers
        assert listed[hot["index"]]["unattributed_cycles"] == hot["unattributed_cycles"]
    position = {index: pos for pos, index in enumerate(data["isa"]["index"])}
    for row in waves["peers"]["instructions"]:
        assert data["isa"]["p50"][position[row["index"]]] == row["per_hit_p50"]
        assert data["isa"]["p90"][position[row["index"]]] == row["per_hit_p90"]
    executed = {ins["index"] for ins in doc["instructions"] if ins["hits"]}
    assert set(waves["peers"]["per_hit"]["index"]) == executed


def test_static_wait_links_without_wave_files(example):
    doc, dispatch, _ = example
    static = dict(doc)
    static.pop("waves")
    data = explorer_data(dispatch, static)
    assert data["wait_basis"] == "static" and data["waits"]
    types = dict(zip(data["isa"]["index"], (data["types"][t] for t in data["isa"]["type"]), strict=True))
    asm = dict(zip(data["isa"]["index"], data["isa"]["asm"], strict=True))
    memory = {t for kinds in COUNTED.values() for t in kinds}
    for wait, producers, _, basis in data["waits"]:
        assert basis == "static" and asm[wait].startswith("s_waitcnt") and producers
        assert all(types[p[0]] in memory for p in producers)
    assert data["loops"] == [[13, 37, 0, 8.0, True]]  # the demo GEMM's MFMA loop, iterated


def test_source_files_are_whole_copies_within_limits(tmp_path, monkeypatch):
    directory = tmp_path / "ui_output_agent_1_dispatch_7"
    directory.mkdir()
    # a form feed or U+2028 is not a line break for a compiler: line numbers must not shift
    (directory / "source_0_k.py").write_text("a = 1\x0c\r\nb = 2\n" + HOSTILE + "\n", encoding="utf-8")
    (directory / "source_1_big.py").write_text("x\n" * 50, encoding="utf-8")
    (directory / "snapshots.json").write_text(json.dumps(
        {"/": {"src": {"k.py": "source_0_k.py", "big.py": "source_1_big.py", "gone.py": "source_2_gone.py"}}}))
    sources = read_snapshots(directory)
    locations = ["/src/k.py:2", "<unmapped>", "/src/k.py:3", "/src/gone.py:1", "/src/big.py:4"]
    files = snippet_reader.source_files_from(sources, locations)
    assert files == {"/src/k.py": {"lines": ["a = 1\x0c", "b = 2", HOSTILE]},
                     "/src/big.py": {"lines": ["x"] * 50}}
    monkeypatch.setattr(snippet_reader, "SOURCE_FILE_MAX_LINES", 10)
    assert list(snippet_reader.source_files_from(sources, locations)) == ["/src/k.py"]


def test_plan_html_embeds_each_dispatch_once_and_the_script_once(example):
    doc, _, _ = example
    second = json.loads(json.dumps(doc))
    second["dispatch_dir"] = "other/ui_output_agent_1_dispatch_2"
    second["kernel"] = "second" + HOSTILE
    second["instructions"][0]["asm"] = "s_nop 0 " + HOSTILE
    summary = build_summary([doc, second], [])
    html = render_html(summary, [doc, second], [])
    assert page_scripts_only(html) == 3
    blobs = re.findall(r'<script type="application/json" id="(k\d+d\d+)-data">(.*?)</script>', html, re.DOTALL)
    assert sorted(view for view, _ in blobs) == ["k0d0", "k1d0"]
    dispatches = [(d, {doc["dispatch_dir"]: doc, second["dispatch_dir"]: second}[d["dispatch_dir"]])
                  for kernel in summary["kernels"] for d in kernel["dispatches"]]
    for (view, text), (dispatch, hotspot) in zip(sorted(blobs), dispatches, strict=True):
        assert json.loads(text) == explorer_data(dispatch, hotspot), view
    assert html.count('class="kx" data-view=') == 2 and html.count('<p class="kx-nojs">') == 2
    assert HOSTILE not in html
