"""Every shared dispatch dir goes through hotspot_analyzer + render_plan (in process, no --waves):
three report files and a well-formed plan.html, or — for a dir with nothing decoded — exit 2 and
one error line; never a traceback."""

from __future__ import annotations

import importlib.util
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import REPO_ROOT, all_shared_dispatch_dirs

from kerneltrace.errors import EXIT_BAD_INPUT, run_cli

# Elements that never take an end tag in HTML.
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                  "source", "track", "wbr"})


def _script(name: str):
    """Import scripts/<name>.py as a module (its __main__ guard keeps it from running)."""
    spec = importlib.util.spec_from_file_location(f"_script_{name}", REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Balance(HTMLParser):
    """Checks that every opened element is closed in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.mismatched: list[str] = []
        self.seen: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.seen.add(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.mismatched.append(tag)
        else:
            self.stack.pop()


@pytest.fixture(scope="module")
def clis():
    return _script("hotspot_analyzer"), _script("render_plan")


def _has_instructions(dispatch_dir: Path) -> bool:
    """Any code row other than a `;` label/comment row (the failed legacy decode has only one)."""
    code = json.loads((dispatch_dir / "code.json").read_text(encoding="utf-8", errors="replace"))
    rows = code.get("code") if isinstance(code, dict) else None
    return any(not str(row[0]).startswith(";") for row in rows or [])


@pytest.mark.shared
@pytest.mark.parametrize("dispatch_dir", all_shared_dispatch_dirs(), ids=lambda d: d.name)
def test_analyzer_and_plan_on_every_shared_dispatch_dir(captures, clis, dispatch_dir, tmp_path, capsys):
    analyzer, render_plan = clis
    hotspots = tmp_path / "h.json"
    code = run_cli(analyzer.main, [str(dispatch_dir), "--json", str(hotspots)])
    captured = capsys.readouterr()
    if not _has_instructions(dispatch_dir):  # the failed (empty) legacy decode
        assert code == EXIT_BAD_INPUT
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "code.json" in lines[0]
        assert not hotspots.exists()
        return
    assert code == 0, captured.err
    out = tmp_path / "plan"
    assert run_cli(render_plan.main, ["--hotspots", str(hotspots), "--out-dir", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["schema"] == "kerneltrace.summary/1"
    assert (out / "plan.md").read_text(encoding="utf-8").strip()
    parser = _Balance()
    parser.feed((out / "plan.html").read_text(encoding="utf-8"))
    parser.close()
    assert parser.mismatched == [] and parser.stack == []
    assert {"html", "body", "table"} <= parser.seen
