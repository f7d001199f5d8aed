"""Per-instruction / per-line aggregation: sums, shares, rates, dominant types, artifacts."""

from __future__ import annotations

from hotspot_fixtures import KERNEL_FILE, demo_rows, make_dispatch_dir, make_pcsampling_dir

from kerneltrace.analysis.hotspots import (
    ARTIFACT_KERNEL_ENTRY,
    ARTIFACT_UNMAPPED,
    SOURCE_MAPPING_HINT,
    aggregate,
    instruction_stats,
    kernel_entry_locations,
    top_real_lines,
)
from kerneltrace.readers.codejson import read_code_json
from kerneltrace.sourceloc import UNMAPPED, innermost_location, split_location


def _analysis(tmp_path, rows=None, metric="stall"):
    table = read_code_json(make_dispatch_dir(tmp_path, rows) / "code.json")
    return aggregate(instruction_stats(table.rows), metric)


def test_location_helpers():
    assert innermost_location("a.py:10 -> b.py:20 -> k.py:3") == "a.py:10"
    assert innermost_location("") == ""
    assert split_location("/x/y.py:12") == ("/x/y.py", 12)
    assert split_location("C:/work/y.py:7") == ("C:/work/y.py", 7)      # split on the LAST ':'
    assert split_location("/odd:dir/y.py:9") == ("/odd:dir/y.py", 9)
    assert split_location("no-line") == ("no-line", None)


def test_line_sums_shares_and_rates(tmp_path):
    analysis = _analysis(tmp_path)
    rows = demo_rows()[1:]
    total_stall = sum(r[8] for r in rows)
    lines = {line.location: line for line in analysis.source_lines}
    line7 = lines[f"{KERNEL_FILE}:7"]
    expected_stall = sum(r[8] for r in rows if r[3] == f"{KERNEL_FILE}:7")
    expected_latency = sum(r[7] for r in rows if r[3] == f"{KERNEL_FILE}:7")
    assert line7.stall == expected_stall
    assert line7.latency == expected_latency
    assert line7.share == expected_stall / total_stall
    assert line7.stall_rate == expected_stall / expected_latency
    assert line7.dominant_type == "VMEM-wait"
    assert abs(sum(line.share for line in analysis.source_lines) - 1.0) < 1e-9
    stalls = [line.stall for line in analysis.source_lines]
    assert stalls == sorted(stalls, reverse=True)


def test_inline_chains_aggregate_on_innermost_line(tmp_path):
    analysis = _analysis(tmp_path)
    lines = {line.location: line for line in analysis.source_lines}
    # rows 5 and 9 are "helper.py:N -> kernel:M": they belong to helper.py, not the call site
    assert lines["helper.py:20"].instructions == [5]
    assert lines["helper.py:20"].call_sites == [f"{KERNEL_FILE}:6"]
    assert f"{KERNEL_FILE}:6" not in lines


def test_kernel_entry_line_flagged_and_excluded_from_real_top(tmp_path):
    analysis = _analysis(tmp_path)
    entry = {line.location: line for line in analysis.source_lines}[f"{KERNEL_FILE}:3"]
    assert entry.artifact == ARTIFACT_KERNEL_ENTRY
    assert all(line.artifact is None for line in top_real_lines(analysis.source_lines, 10))
    assert any("kernel entry/decorator" in warning for warning in analysis.warnings)


def test_endpgm_line_with_few_types_is_not_an_artifact(tmp_path):
    # a C++ kernel whose s_endpgm maps to the closing brace: one type, a real (tiny) line
    rows = [
        ["; k", 0, 0, "", 2, 0, 0, 0, 0, 0],
        ["global_load_dword v1, v[0:1], off", 0, 1, "/src/k.cpp:8", 2, 0, 4, 100, 80, 0],
        ["s_waitcnt vmcnt(0)", 0, 2, "/src/k.cpp:8", 2, 8, 4, 900, 900, 0],
        ["s_endpgm", 0, 3, "/src/k.cpp:10", 2, 12, 4, 16, 0, 0],
    ]
    analysis = _analysis(tmp_path, rows)
    assert all(line.artifact is None for line in analysis.source_lines)
    table = read_code_json(make_dispatch_dir(tmp_path / "b", rows) / "code.json")
    assert kernel_entry_locations(instruction_stats(table.rows)) == set()


def test_unmapped_rows_grouped_and_warned(tmp_path):
    rows = demo_rows()
    for row in rows[1:4]:
        row[3] = ""
    analysis = _analysis(tmp_path, rows)
    unmapped = {line.location: line for line in analysis.source_lines}[UNMAPPED]
    assert unmapped.artifact == ARTIFACT_UNMAPPED and unmapped.instructions == [1, 2, 3]
    assert analysis.mapped_fraction == (len(rows) - 4) / (len(rows) - 1)
    assert any("no Source location" in warning for warning in analysis.warnings)


def test_no_source_mapping_at_all_gives_the_hint(tmp_path):
    rows = demo_rows()
    for row in rows[1:]:
        row[3] = ""
    analysis = _analysis(tmp_path, rows)
    assert analysis.mapped_fraction == 0.0
    assert SOURCE_MAPPING_HINT in analysis.warnings
    assert "FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1" in SOURCE_MAPPING_HINT and "-gline-tables-only" in SOURCE_MAPPING_HINT


def test_zero_latency_line_has_null_stall_rate(tmp_path):
    analysis = _analysis(tmp_path)
    # line 3's s_cbranch row has latency 0 but the line as a whole does not; build one that does
    rows = demo_rows()
    rows.append(["s_nop 0", 0, 13, "/elsewhere.py:1", 2, 9999, 0, 0, 0, 0])
    analysis = _analysis(tmp_path / "b", rows)
    line = {line.location: line for line in analysis.source_lines}["/elsewhere.py:1"]
    assert line.stall_rate is None and line.share == 0.0


def test_stall_by_type_counts_mixed_wait_once(tmp_path):
    analysis = _analysis(tmp_path)
    by_type = {entry.type: entry for entry in analysis.stall_by_type}
    rows = demo_rows()[1:]
    total = sum(r[8] for r in rows)
    assert sum(entry.stall for entry in analysis.stall_by_type) == total
    # s_waitcnt vmcnt(0) lgkmcnt(0): counted under VMEM-wait, and reported as mixed
    assert by_type["VMEM-wait"].stall == 4900 and by_type["VMEM-wait"].mixed_wait_stall == 4900
    assert by_type["LDS/SMEM-wait"].stall == 880 and by_type["LDS/SMEM-wait"].mixed_wait_stall == 0
    assert by_type["MFMA"].stall == 220
    assert abs(sum(entry.share for entry in analysis.stall_by_type) - 1.0) < 1e-9


def test_instructions_ranked_by_stall_every_row_kept(tmp_path):
    analysis = _analysis(tmp_path)
    assert len(analysis.instructions) == len(demo_rows()) - 1
    assert analysis.instructions[0].index == 6
    assert [s.stall for s in analysis.instructions] == sorted((s.stall for s in analysis.instructions), reverse=True)


def test_pcsampling_ranked_by_stalled_samples(tmp_path):
    table = read_code_json(make_pcsampling_dir(tmp_path) / "code.json")
    analysis = aggregate(instruction_stats(table.rows), "pc_stalled")
    assert [s.index for s in analysis.instructions[:2]] == [3, 2]
    line13 = {line.location: line for line in analysis.source_lines}["/src/gemm.cpp:13"]
    assert line13.pc_stalled == 37 and line13.share == 37 / 48
    assert analysis.source_lines[0].location == "/src/gemm.cpp:13"
