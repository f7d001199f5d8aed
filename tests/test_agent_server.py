"""The MCP server for coding agents: a real SDK client session over stdio on the real captures."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from tests.agent_client import McpSession
from tests.conftest import SHARED

CAPTURES = SHARED / "captures"
EVAL = Path(__file__).parent / "data" / "agent_eval.yaml"
PA = "flydsl-kernel-profiling-lib/examples/pa/att_viewer/big/ui_output_agent_10886_dispatch_209"
TOOLS = {"list_dispatches", "summary", "hotspots", "explain", "compare", "next_capture"}

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def server():
    if not CAPTURES.is_dir():
        pytest.skip("../shared/captures not present")
    session = McpSession([CAPTURES])
    yield session
    session.close()


def _dig(answers: dict, path: str):
    value = answers
    for key in path.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def _fill(value, answers: dict):
    if isinstance(value, str):
        return re.sub(r"\{\{([^}]+)\}\}", lambda match: str(_dig(answers, match.group(1).strip())), value)
    if isinstance(value, dict):
        return {key: _fill(item, answers) for key, item in value.items()}
    return value


def _check(check: dict, answers: dict) -> None:
    value = _dig(answers, check["path"])
    if "equals" in check:
        assert value == _fill(check["equals"], answers), check
    if "in" in check:
        assert value in check["in"], check
    if "contains" in check:
        items = value if isinstance(value, list) else [value]
        assert any(check["contains"] in str(item) for item in items), (check, value)
    if "any" in check:
        rows = [row for row in value if all(row.get(k) == v for k, v in (check.get("where") or {}).items())]
        field, wanted = check["any"]["field"], check["any"]["contains"]
        assert any(wanted in str(row.get(field)) for row in rows), (check, rows)
    if "truthy" in check:
        assert bool(value) is check["truthy"], check


def test_tools_listed(server):
    assert set(server.tools) == TOOLS


@pytest.mark.parametrize("case", yaml.safe_load(EVAL.read_text(encoding="utf-8")), ids=lambda case: case["question"][:50])
def test_eval_set(server, case):
    answers: dict = {}
    for step in case["steps"]:
        text, parsed, error = server.answer(step["tool"], **_fill(step["args"], answers))
        assert not error, text
        answers[step["id"]] = parsed
    for check in case["checks"]:
        _check(check, answers)


def test_eval_set_has_ten_questions():
    assert len(yaml.safe_load(EVAL.read_text(encoding="utf-8"))) == 10


def test_summary_bounded_and_deterministic_on_every_capture(server):
    text, listing, error = server.answer("list_dispatches")
    assert not error and listing["count"] == len(listing["dispatches"]) >= 15
    for row in listing["dispatches"]:
        first, parsed, error = server.answer("summary", dir=row["dir"])
        assert not error, first
        assert len(first) <= 4000, (row["dir"], len(first))
        assert parsed["verdict"]["kind"] and "next" in parsed
        for finding in parsed["findings"]:
            assert finding["id"] and finding["gain"]
        again, _, _ = server.answer("summary", dir=row["dir"])
        assert again == first, row["dir"]


def test_every_tool_answers_with_next_calls(server):
    for tool, args in (("hotspots", {"dir": PA, "by": "line", "top": 5}),
                       ("hotspots", {"dir": PA, "by": "region", "top": 3}),
                       ("explain", {"dir": PA, "id": "#6"}),
                       ("next_capture", {"dir": PA}),
                       ("compare", {"before": PA, "after": PA})):
        text, parsed, error = server.answer(tool, **args)
        assert not error, (tool, text)
        assert parsed["next"], tool
    _, regions, _ = server.answer("hotspots", dir=PA, by="region", top=1)
    _, region, error = server.answer("explain", dir=PA, id=regions["rows"][0]["id"])
    assert not error and region["kind"] == "region" and region["instructions"]
    _, summary, _ = server.answer("summary", dir=PA)
    _, finding, error = server.answer("explain", dir=PA, id=summary["findings"][0]["id"])
    assert not error and finding["kind"] == "finding" and finding["evidence"]


def test_second_query_does_not_reparse(monkeypatch, captures):
    """Loaded once per dir: later calls on it (any tool) are answered from memory."""
    from kerneltrace.agent.roots import Roots
    from kerneltrace.agent.session import Session
    from kerneltrace.document import hotspot_report

    calls = []
    real = hotspot_report.run_analysis
    monkeypatch.setattr(hotspot_report, "run_analysis", lambda *a, **k: calls.append(a) or real(*a, **k))
    session = Session(Roots.of([captures]))  # the fixture skips without ../shared
    first = session.summary(PA)
    session.hotspots(PA, "instruction", 5)
    session.explain(PA, "#9")
    assert session.summary(PA) == first
    assert len(calls) == 1 and session.cache.stats.analysed == 1 and session.cache.stats.hits == 3


@pytest.mark.parametrize("path", ["/etc", "../../..", "/proc/1", ""])
def test_outside_paths_refused_in_one_line(server, path):
    text, _, error = server.answer("summary", dir=path)
    assert error
    assert "\n" not in text.strip() and "Traceback" not in text
    assert "fix:" in text or "roots" in text


def test_bad_input_is_one_line(server):
    for tool, args in (("summary", {"dir": "no/such/dir"}),
                       ("hotspots", {"dir": PA, "by": "nonsense"}),
                       ("hotspots", {"dir": PA, "top": 0}),
                       ("explain", {"dir": PA, "id": "no-such-finding"}),
                       ("summary", {"dir": "flydsl-kernel-profiling-lib"})):
        text, _, error = server.answer(tool, **args)
        assert error, (tool, args)
        assert "\n" not in text.strip() and "Traceback" not in text, text
        assert "fix:" in text, text


def test_symlink_out_of_root_and_broken_capture(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "code.json").write_text("{}")
    os.symlink(outside, root / "escape")
    broken = root / "ui_output_agent_1_dispatch_2"
    broken.mkdir()
    (broken / "code.json").write_text('{"code": [[1, 2')
    session = McpSession([root])
    try:
        text, _, error = session.answer("summary", dir="escape")
        assert error and "outside the server's roots" in text
        text, _, error = session.answer("summary", dir=str(broken))
        assert error and "\n" not in text.strip() and "Traceback" not in text and "code.json" in text
        text, listing, error = session.answer("list_dispatches")
        assert not error and listing["count"] == 0 and listing["skipped"]
    finally:
        session.close()


def test_pipeline_results_are_reused(tmp_path):
    """A hotspot document the pipeline wrote for a dir (results/<run>/dispatches.tsv + hotspots/<id>.json)
    is read instead of analysing again, while it is newer than the capture."""
    from kerneltrace.agent.cache import AnalysisCache
    from kerneltrace.agent.roots import Roots
    from kerneltrace.agent.session import Session
    from kerneltrace.document.hotspot_report import run_analysis
    from kerneltrace.pipeline.manifest import MANIFEST_COLUMNS
    from kerneltrace.synth import demo_vec_add, write_dispatch_dir

    capture = write_dispatch_dir(tmp_path / "caps", demo_vec_add()).resolve()
    run = tmp_path / "results" / "mine"
    (run / "hotspots").mkdir(parents=True)
    document = run_analysis(capture, waves=True).document
    (run / "hotspots" / "d000.json").write_text(json.dumps(document))
    row = {column: "" for column in MANIFEST_COLUMNS} | {"id": "d000", "dispatch_dir": str(capture)}
    (run / "dispatches.tsv").write_text("\t".join(MANIFEST_COLUMNS) + "\n"
                                        + "\t".join(row[c] for c in MANIFEST_COLUMNS) + "\n")
    session = Session(Roots.of([tmp_path]))
    assert isinstance(session.cache, AnalysisCache)
    session.summary(str(capture))
    assert (session.cache.stats.reused, session.cache.stats.analysed) == (1, 0)
    session.hotspots(str(capture))
    assert session.cache.stats.hits == 1
    # the capture changes: the cached document and the pipeline's are both stale
    code = capture / "code.json"
    later = time.time_ns() + 10**9
    os.utime(code, ns=(later, later))
    session.summary(str(capture))
    assert session.cache.stats.analysed == 1


def test_bad_root_is_one_error_line_exit_2(tmp_path):
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "scripts" / "mcp_server.py"
    done = subprocess.run([sys.executable, str(script), "--root", str(tmp_path / "missing")],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("error:") and done.stderr.count("\n") == 1 and "--root" in done.stderr
