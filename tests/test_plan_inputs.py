"""render_plan's document loading: every bad input is one InputError line, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.errors import InputError
from kerneltrace.plan.inputs import load_document, load_plan_documents

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "render_plan.py"


def test_directory_and_deep_nesting_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        load_document(tmp_path, "kerneltrace.hotspots/")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(InputError, match="nested too deeply") as caught:
        load_document(deep, "kerneltrace.hotspots/")
    assert caught.value.where == str(deep)


def test_schema_family_is_checked_per_option(tmp_path):
    l2 = tmp_path / "l2.json"
    l2.write_text(json.dumps({"schema": "kerneltrace.l2/1"}))
    with pytest.raises(InputError, match="no hotspot documents"):
        load_plan_documents([], [l2])
    with pytest.raises(InputError, match="expected kerneltrace.hotspots/"):
        load_plan_documents([l2], [])
    assert load_document(l2, "kerneltrace.l2/")["schema"] == "kerneltrace.l2/1"


def test_cli_given_a_directory_prints_one_line_and_exits_2(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--hotspots", str(tmp_path),
                           "--out-dir", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "is a directory" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()
