"""Reports tell dispatches apart and never add stall across dispatches (issue 14 "Also")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake

from kerneltrace.analysis.dispatch_labels import dispatch_labels
from kerneltrace.compare.document import compare_sets, keyed_dispatches
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.summary import build_summary
from kerneltrace.render.compare import render_markdown, render_text
from kerneltrace.render.index import render_index, run_row
from kerneltrace.render.plan import render_html
from kerneltrace.render.plan import render_markdown as plan_markdown
from kerneltrace.synth import spec as synth_spec
from kerneltrace.synth.writers import write_dispatch_dir


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> list[dict]:
    """The same kernel, the same dispatch id, captured twice (iter1/ and iter2/)."""
    root = tmp_path_factory.mktemp("twins")
    docs = []
    for name in ("iter1", "iter2"):
        directory = write_dispatch_dir(root / name, synth_spec.demo_vec_add(), dispatch_id=7)
        docs.append(analyze_dispatch(directory, arch="gfx942"))
    return docs


def test_labels_come_from_the_path_only_when_needed(twins):
    assert dispatch_labels(twins) == ["iter1", "iter2"]
    assert dispatch_labels(twins[:1]) == [""]


def test_plan_headings_tell_the_twins_apart(twins):
    summary = build_summary(twins, [], run="r")
    markdown = plan_markdown(summary, twins)
    headings = [line for line in markdown.splitlines() if line.startswith("## Kernel")]
    assert len(headings) == 2 and len(set(headings)) == 2, headings
    assert "(iter1)" in headings[0] and "(iter2)" in headings[1]
    html = render_html(summary, twins, [], {})
    assert "dispatch 7 (iter1)" in html and "dispatch 7 (iter2)" in html


def test_index_shows_each_dispatch_and_never_a_sum(twins):
    summary = build_summary(twins, [], run="r")
    html = render_index([run_row("r", summary)])
    stalls = [d["totals"]["stall_cycles"] for d in twins]
    cell = re.search(r'<td class="num">([^<]*\(dispatch 7 iter1\)<br>[^<]*\(dispatch 7 iter2\))</td>', html)
    assert cell, html
    assert f"{sum(stalls):,}" not in html
    assert all(f"{s:,}" in cell.group(1) for s in stalls)


def test_compare_names_the_twins_by_their_labels(twins):
    keyed = keyed_dispatches(twins)
    result = compare_sets(keyed, keyed)
    assert [k["labels"] for k in result["kernels"]] == [{"before": "iter1", "after": "iter1"},
                                                         {"before": "iter2", "after": "iter2"}]
    assert "(iter1)" in render_markdown(result) and "(iter2)" in render_text(result)


@pytest.mark.e2e
def test_index_lists_only_the_runs_of_the_last_invocation(tmp_path, twins):
    env = double_env(tmp_path)
    caps = [Path(doc["dispatch_dir"]) for doc in twins]
    work = tmp_path / "w"
    first = tmp_path / "first.yaml"
    first.write_text(json.dumps({"runs": {"one": {"dir": str(caps[0])}, "two": {"dir": str(caps[1])}}}))
    assert snakemake(work, env, "--configfile", str(first)).returncode == 0
    second = tmp_path / "second.yaml"
    second.write_text(json.dumps({"runs": {"two": {"dir": str(caps[1])}}}))
    result = snakemake(work, env, "--configfile", str(second))
    assert result.returncode == 0, result.stderr[-3000:]
    index = (work / "reports" / "index.html").read_text()
    assert "two/plan.html" in index and "one/plan.html" not in index
