"""Reports tell dispatches apart and never add stall across dispatches (issue 14 "Also")."""

from __future__ import annotations

import re

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
def test_index_covers_every_run_under_reports_sorted(tmp_path, twins):
    """Run `one` in a first invocation and `two` in a second: the index lists both (by name) with
    kernel time and launch size from the kernel trace (issue 22 point 4; before, only `two`)."""
    from kerneltrace import synth

    env = double_env(tmp_path)
    work = tmp_path / "w"
    capture_a, capture_b = tmp_path / "a", tmp_path / "b"
    synth.write_att_run(capture_a, [synth_spec.demo_vec_add()], output_file="att", calls=1)
    synth.write_att_run(capture_b, [synth_spec.demo_gemm()], output_file="att", calls=1)
    first = snakemake(work, env, "--config", f"dir={capture_a}", "run=two_b")
    assert first.returncode == 0, first.stderr[-3000:]
    second = snakemake(work, env, "--config", f"dir={capture_b}", "run=one_a")
    assert second.returncode == 0, second.stderr[-3000:]
    index = (work / "reports" / "index.html").read_text()
    assert "one_a/plan.html" in index and "two_b/plan.html" in index
    assert index.index("one_a/plan.html") < index.index("two_b/plan.html")  # sorted, not by invocation
    assert "µs" in index and "×1×1 / " in index  # kernel time and grid / workgroup per row
    # nothing changed: nothing runs (the other runs' signature is stable)
    again = snakemake(work, env, "--config", f"dir={capture_b}", "run=one_a")
    assert again.returncode == 0 and "Nothing to be done" in again.stderr, again.stderr[-3000:]
    # an earlier run removed: the index follows
    import shutil

    shutil.rmtree(work / "reports" / "two_b")
    third = snakemake(work, env, "--config", f"dir={capture_b}", "run=one_a")
    assert third.returncode == 0, third.stderr[-3000:]
    assert "two_b/plan.html" not in (work / "reports" / "index.html").read_text()


def test_index_rows_carry_kernel_time_and_launch_size(twins):
    summary = build_summary(twins, [], run="r")
    docs = [dict(doc, metadata={**doc["metadata"], "kernel_trace": {
        "duration_ns": 12_345, "grid_size": [1024, 1, 1], "workgroup_size": [256, 1, 1]}}) for doc in twins]
    html = render_index([run_row("r", summary, None, docs)])
    assert "12.3 µs" in html and "1024×1×1 / 256×1×1" in html
    # a summary that carries a `launch` object (issue 21) is read first, no hotspot document needed
    for kernel in summary["kernels"]:
        for entry in kernel["dispatches"]:
            entry["launch"] = {"grid_size": [2048, 2, 1], "workgroup_size": [64, 1, 1], "duration_ns": 2_500_000}
    html = render_index([run_row("r", summary)])
    assert "2,500.0 µs" in html and "2048×2×1 / 64×1×1" in html
    unknown = render_index([run_row("r", build_summary(twins, [], run="r"))])
    assert "n/a" in unknown
