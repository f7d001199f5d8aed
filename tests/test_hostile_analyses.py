"""Hostile but well-typed values through the whole analysis path, not just the readers.

Hypothesis builds small v3 dispatch dirs (code.json rows, optional wave files, kernel_trace and
agent_info CSVs) whose values have the right JSON/CSV types but are wrong: negative or 2^62
counts, Stall > Latency, duplicate LineNumbers, odd source chains, junk ISA, impossible register
ranges, unknown gfx names, wave instructions pointing past code.json, timeline states outside
0..4, waitcnt producers pointing at themselves or nowhere. Each case then runs the hotspot
analysis (with and without waves), the text report, the plan (summary, Markdown, HTML with
charts) and a self-compare.

Property: a clean one-line InputError, or a result whose invariants hold (totals are the code.json
sums, shares and fractions in [0, 1] or null, no NaN/inf anywhere in the JSON, a self-compare is
neutral). Any other exception fails the test. Fixed seeds; no wall-clock limits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hotspot_fixtures import agent_info_csv, kernel_trace_csv, label, write_json
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from kerneltrace.errors import InputError

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                    phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
HUGE = 2**62
DISPATCH_NAME = "ui_output_agent_1234_dispatch_7"
GOOD_FILE = "/work/kernels/demo_kernel.py"

# Values with the right type but a wrong meaning; small ordinary ones keep most cases "almost valid".
COUNT = st.one_of(
    st.integers(0, 3000),
    st.sampled_from([0, -1, -250, HUGE, HUGE - 1, -HUGE]),
    st.integers(-10**6, 10**6),
)
ASM = st.sampled_from([
    "s_load_dwordx4 s[4:7], s[0:1], 0x0",
    "s_waitcnt vmcnt(0) lgkmcnt(0)",
    "global_load_dwordx4 v[8:11], v[2:3], off",
    "v_mfma_f32_16x16x16_f16 a[0:3], v[4:5], v[8:9], a[0:3]",
    "v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]",
    "s_barrier",
    "s_cbranch_scc1 BB0_2",
    "s_branch 65535",
    "s_endpgm",
    "",
    "   ",
    "\t",
    "zz_not_an_opcode v1, v2",
    "v_add_f32 v[5:2], v1, v2",
    "v_mov_b32 v[0:999999], 0",
    "s_mov_b32 s[4294967295:4294967296], 0",
    "v_accvgpr_write_b32 a[-3:1], v0",
    "s_waitcnt vmcnt(-1)",
    "s_waitcnt lgkmcnt(99999999999)",
    "<script>alert(1)</script>",
    "v_add_f32\x00 v1, v2",
    "ds_read_b128 v[0:3], v4 offset:65536 ; comment ; more",
])
SOURCE = st.sampled_from([
    f"{GOOD_FILE}:5",
    f"{GOOD_FILE}:7",
    f"helper.py:20 -> {GOOD_FILE}:6",
    "",
    " -> ",
    " -> -> ",
    f"{GOOD_FILE}:",
    f"{GOOD_FILE}:0",
    f"{GOOD_FILE}:-4",
    f"{GOOD_FILE}:99999999999999999999",
    ":",
    ":3",
    "/" + "very_long_directory/" * 300 + "k.py:3",
    "/src/a\x00b.py:3",
    "/src/<script>alert(1)</script>.py:3",
    "C:\\src\\k.cpp:12",
    "../../etc/passwd:1",
    "/src/k.py:3 -> ",
])
AGENT_NAME = st.sampled_from(["gfx942", "gfx90a", "gfx9999", "", "gfx", "<script>", "gfx942:sramecc+:xnack-"])
REGISTER_COUNT = st.sampled_from([0, 1, 64, 512, -1, -64, HUGE, 10**12])


@dataclass
class Case:
    """One hostile dispatch dir, described before it is written."""

    rows: list[list]                       # instruction rows (the label row is added on write)
    waves: list[dict] = field(default_factory=list)
    agent: str | None = None               # agent_info GPU name, or no agent_info CSV
    registers: dict[str, int] | None = None  # kernel_trace register/LDS columns, or no CSV

    def code_sums(self) -> dict[str, int]:
        return {
            "hits": sum(row[6] for row in self.rows),
            "latency_cycles": sum(row[7] for row in self.rows),
            "stall_cycles": sum(row[8] for row in self.rows),
            "idle_cycles": sum(row[9] for row in self.rows),
        }


@st.composite
def counts_strategy(draw, hostile: bool) -> list[int]:
    """Hit, Latency, Stall, Idle: consistent (0 <= Stall <= Latency, maybe 2^62), or anything."""
    if hostile and draw(st.booleans()):
        return [draw(COUNT) for _ in range(4)]
    big = st.sampled_from([0, 1, HUGE])
    latency = draw(st.one_of(st.integers(0, 5000), big))
    stall = draw(st.one_of(st.integers(0, latency), st.sampled_from([0, latency])))
    hits = draw(st.one_of(st.integers(1, 64), st.integers(1, 64), big))
    idle = draw(st.one_of(st.integers(0, 5000), big))
    return [hits, latency, stall, idle]


@st.composite
def rows_strategy(draw) -> list[list]:
    count = draw(st.integers(1, 7))
    # most cases keep the counts consistent so that the analyses behind the reader get exercised
    hostile = draw(st.sampled_from([False, False, True]))
    rows: list[list] = []
    for index in range(1, count + 1):
        line_number = index
        if index > 1 and draw(st.booleans()) and draw(st.booleans()):
            line_number = rows[-1][2]  # duplicate LineNumber
        vaddr = draw(st.one_of(st.just(4096 + 4 * index), st.sampled_from([-4, 0, HUGE])))
        rows.append([draw(ASM), 0, line_number, draw(SOURCE), 2, vaddr, *draw(counts_strategy(hostile))])
    return rows


@st.composite
def wave_strategy(draw, rows: int) -> dict:
    """One wave file: plausible (rows that exist, 0 <= stall <= duration, ordered times inside
    [begin, end], states 0..4) with hostile timeline/waitcnt details, or anything at all."""
    hostile = draw(st.booleans())
    any_line = st.one_of(st.integers(-2, rows + 4), st.just(HUGE))
    if hostile:
        begin = draw(st.sampled_from([0, 100, -50, HUGE]))
        end = draw(st.sampled_from([begin + 6000, begin - 10, 0]))
        time = st.one_of(st.integers(0, 5000), st.sampled_from([-100, HUGE]))
        instructions = draw(st.lists(st.tuples(time, st.integers(-1, 20), COUNT, COUNT, any_line).map(list),
                                     max_size=6))
    else:
        begin = draw(st.sampled_from([0, 100, HUGE - 10**6]))
        end = begin + 6000
        times = sorted(draw(st.lists(st.integers(begin, end), max_size=6)))
        instructions = [[time, draw(st.integers(0, 13)), draw(st.integers(0, 100)),
                         draw(st.integers(100, 200)), draw(st.integers(1, rows))] for time in times]
    state = st.integers(-2, 7) if hostile else st.integers(0, 4)
    cycles = COUNT if hostile else st.integers(0, 1000)
    timeline = draw(st.lists(st.tuples(state, cycles).map(list), max_size=5))
    # producers may point at the wait itself
    wait_line = any_line if hostile else st.integers(1, rows)
    waitcnt = draw(st.lists(
        st.tuples(wait_line, st.lists(st.tuples(wait_line, st.just(0)).map(list), max_size=3)).map(list),
        max_size=3))
    return {
        "duration": end - begin, "name": "SE0", "num_insts": len(instructions),
        "num_stitched": len(instructions),
        "wave": {"begin": begin, "cu": 1, "end": end, "id": 0, "instructions": instructions,
                 "simd": 0, "slot": 0, "timeline": timeline, "waitcnt": waitcnt},
    }


@st.composite
def cases(draw) -> Case:
    rows = draw(rows_strategy())
    waves = draw(st.lists(wave_strategy(len(rows)), max_size=3))
    agent = draw(st.one_of(st.none(), AGENT_NAME))
    registers = None
    if draw(st.booleans()):
        registers = {column: draw(REGISTER_COUNT) for column in
                     ("VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "LDS_Block_Size", "Scratch_Size",
                      "Workgroup_Size_X")}
    return Case(rows, waves, agent, registers)


def write_case(root: Path, case: Case) -> tuple[Path, dict[str, Path]]:
    directory = root / DISPATCH_NAME
    directory.mkdir(parents=True)
    header = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
    document = {"code": [label(0, "demo_kernel_0", "demo_kernel")] + case.rows,
                "header": header, "version": "3.0.0"}
    write_json(directory / "code.json", document)
    for number, wave in enumerate(case.waves):
        write_json(directory / f"se0_sm0_sl0_wv{number}.json", wave)
    csvs: dict[str, Path] = {}
    if case.agent is not None:
        csvs["agent_info_csv"] = agent_info_csv(root / "att_agent_info.csv", [(2, case.agent)])
    if case.registers is not None:
        csvs["kernel_trace_csv"] = kernel_trace_csv(
            root / "att_kernel_trace.csv",
            [{"Dispatch_Id": 7, "Kernel_Name": "demo_kernel", **case.registers}])
    return directory, csvs


# ---- invariants --------------------------------------------------------------------------------

def assert_one_line(error: InputError) -> None:
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text, text


def fractions(node: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every value whose key names a share, a fraction or a rate (documented as in [0, 1])."""
    found: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}"
            if isinstance(key, str) and (key == "share" or key.startswith("share_") or key == "stall_rate"
                                         or key.endswith(("_share", "_shares", "fraction"))):
                if isinstance(value, dict):  # {idle: share, ...} or a distribution {min, p50, ...}
                    found += [(f"{where}.{name}", item) for name, item in value.items()]
                else:
                    found.append((where, value))
            found += fractions(value, where)
    elif isinstance(node, list):
        for position, value in enumerate(node):
            found += fractions(value, f"{path}[{position}]")
    return found


def assert_fractions_in_unit_range(document: dict) -> None:
    for where, value in fractions(document):
        if value is None or isinstance(value, (dict, list)) or where.endswith(".share_threshold"):
            continue
        assert isinstance(value, (int, float)) and 0.0 <= value <= 1.0, (where, value)


def strict_json(document: Any) -> Any:
    """The document as the next stage would read it; NaN/inf fail here (allow_nan=False)."""
    return json.loads(json.dumps(document, allow_nan=False))


def run_everything(directory: Path, csvs: dict[str, Path], case: Case, waves: bool) -> None:
    """Hotspots → text → plan (md + html) → self-compare; InputError allowed, nothing else."""
    from kerneltrace.compare.document import compare
    from kerneltrace.document.hotspot_report import run_analysis
    from kerneltrace.plan.inputs import plan_snippets
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render import compare as render_compare
    from kerneltrace.render.plan import render_html, render_markdown
    from kerneltrace.render.text import render_text

    try:
        result = run_analysis(directory, waves=waves, **csvs)
    except InputError as error:
        assert_one_line(error)
        event(f"InputError: {error.what.split(':')[-1].split(' is ')[0][:40]}")
        return
    event("analysed")
    if "waves" in result.document:
        waves_object = result.document["waves"]
        event(f"waves analysed: {min(waves_object['waves'], 1)}, skipped: {min(len(waves_object['skipped']), 1)}")
    document = strict_json(result.document)
    totals = document["totals"]
    for key, expected in case.code_sums().items():
        assert totals[key] == expected, (key, totals[key], expected)
    assert totals["instructions"] == len(case.rows)
    assert_fractions_in_unit_range(document)

    text, _ = render_text(document, detail=True, sources=result.sources)
    assert text.startswith("Loading:")

    summary = strict_json(build_summary([document], [], run="fuzz"))
    assert_fractions_in_unit_range(summary)
    markdown = render_markdown(summary, [document])
    html = render_html(summary, [document], [], plan_snippets([document]))
    assert markdown and "<script>alert" not in html

    comparison = strict_json(compare(document, document))
    assert comparison["verdict"] == "neutral", comparison["reasons"]
    render_compare.render_text(comparison)
    render_compare.render_markdown(comparison)


@SETTINGS
@given(case=cases(), waves=st.booleans())
def test_hostile_values_through_the_whole_analysis_path(tmp_path_factory, case: Case, waves: bool) -> None:
    root = tmp_path_factory.mktemp("hostile")
    directory, csvs = write_case(root, case)
    run_everything(directory, csvs, case, waves)


# ---- the cases the property found, pinned (each failed before its fix) ------------------------

def _rows_with(counts: list[int]) -> list[list]:
    return [
        ["s_load_dwordx4 s[4:7], s[0:1], 0x0", 0, 1, f"{GOOD_FILE}:5", 2, 4100, 4, 100, 50, 0],
        ["s_waitcnt vmcnt(0)", 0, 2, f"{GOOD_FILE}:7", 2, 4104, *counts],
    ]


@pytest.mark.parametrize(("counts", "column"), [
    ([-1, 10, 0, 0], "Hit"), ([4, -10, 0, 0], "Latency"), ([4, 10, -3, 0], "Stall"),
    ([4, 10, 0, -2**62], "Idle"),
])
def test_negative_count_is_refused_naming_column_and_row(tmp_path, counts, column) -> None:
    from kerneltrace.document.hotspot_report import analyze_dispatch

    directory, _ = write_case(tmp_path, Case(_rows_with(counts)))
    with pytest.raises(InputError) as caught:
        analyze_dispatch(directory)
    assert f"row 2: column {column}" in caught.value.what and "negative" in caught.value.what
    assert_one_line(caught.value)


@pytest.mark.parametrize("counts", [[4, 1, 2, 0], [4, 0, 7, 0]])
def test_stall_above_latency_is_kept_with_a_warning_and_rates_capped(tmp_path, counts) -> None:
    """Found by the property (stall_rate 2.0). Not refused: RDNA decoders <= 0.1.4 over-report stall."""
    from kerneltrace.document.hotspot_report import analyze_dispatch

    directory, _ = write_case(tmp_path, Case(_rows_with(counts)))
    document = analyze_dispatch(directory)
    assert any("Stall > Latency" in warning and "row 2" in warning for warning in document["warnings"])
    rates = [line["stall_rate"] for line in document["source_lines"] if line["stall_rate"] is not None]
    assert all(0.0 <= rate <= 1.0 for rate in rates)
    # totals stay the raw code.json sums
    assert document["totals"]["stall_cycles"] >= counts[2]


def _wave(instructions: list[list], *, begin: int = 0, end: int = 6000, timeline: list | None = None,
          waitcnt: list | None = None) -> dict:
    return {"duration": end - begin, "name": "SE0", "num_insts": len(instructions),
            "num_stitched": len(instructions),
            "wave": {"begin": begin, "cu": 1, "end": end, "id": 0, "instructions": instructions,
                     "simd": 0, "slot": 0, "timeline": timeline or [[2, end - begin]],
                     "waitcnt": waitcnt or []}}


GOOD_WAVE = [[10, 1, 50, 100, 1], [200, 9, 50, 100, 2]]


@pytest.mark.parametrize(("bad_wave", "why"), [
    (_wave([[10, 1, 0, 4, -1]]), "outside code.json"),                    # was ValueError
    (_wave([[10, 1, 0, 4, 2**62]]), "outside code.json"),                 # would allocate 2^62 rows
    (_wave(GOOD_WAVE, waitcnt=[[2, [[99, 0]]]]), "waitcnt entry"),        # was RecursionError
    (_wave([[10, 1, 0, 4, 1]], begin=100, end=6100), "outside the wave"),  # prologue_share < 0
    (_wave([[300, 1, 0, 4, 1], [200, 1, 0, 4, 2]]), "before the instruction preceding it"),
    (_wave([[10, 1, 5, 4, 1]]), "stall above its duration"),
    (_wave([[10, 1, -5, 4, 1]]), "negative stall"),
    (_wave(GOOD_WAVE, timeline=[[2, -7]]), "negative duration"),
    (_wave([], begin=500, end=100), "before its begin"),
])
def test_implausible_wave_file_is_skipped_and_reported(tmp_path, bad_wave, why) -> None:
    from kerneltrace.document.hotspot_report import analyze_dispatch

    # code.json = the sums of the two good waves (docs/rocprof-outputs.md §8.10: idle = gap after the
    # previous end: 10 - 0 and 200 - 110 per wave)
    rows = _rows_with([2, 200, 100, 180])
    rows[0][6:10] = [2, 200, 100, 20]
    directory, _ = write_case(tmp_path, Case(rows, [_wave(GOOD_WAVE), _wave(GOOD_WAVE), bad_wave]))
    waves = analyze_dispatch(directory, waves=True)["waves"]
    assert waves["files"] == 3 and waves["waves"] == 2
    assert [entry["file"] for entry in waves["skipped"]] == ["se0_sm0_sl0_wv2.json"]
    assert why in waves["skipped"][0]["error"]
    assert not waves["consistency"]["ok"]
    # the two good waves are exactly the code.json sums: nothing of the bad one leaked in
    assert not waves["consistency"]["mismatched_rows"]


def test_waitcnt_entry_without_producers_is_no_crash(tmp_path) -> None:
    """A waitcnt entry with an empty producer list (was IndexError in the attribution)."""
    from kerneltrace.document.hotspot_report import analyze_dispatch

    rows = _rows_with([1, 100, 50, 90])
    rows[0][6:10] = [1, 100, 50, 10]
    directory, _ = write_case(tmp_path, Case(rows, [_wave(GOOD_WAVE, waitcnt=[[2, []]])]))
    waves = analyze_dispatch(directory, waves=True)["waves"]
    assert waves["waves"] == 1 and not waves["skipped"] and waves["consistency"]["ok"]
    assert all(not entry["producers"] for entry in waves["waitcnt"])


@pytest.mark.parametrize("column", ["LDS_Block_Size", "VGPR_Count", "SGPR_Count", "Workgroup_Size_X"])
def test_negative_kernel_trace_size_is_unknown(tmp_path, column) -> None:
    """A negative LDS size divided by zero in the occupancy (granule rounding gave 0)."""
    from kerneltrace.document.hotspot_report import analyze_dispatch

    directory, csvs = write_case(tmp_path, Case(_rows_with([4, 100, 50, 0]), agent="gfx942",
                                                registers={column: -1}))
    document = analyze_dispatch(directory, **csvs)
    trace = document["metadata"]["kernel_trace"]
    assert trace is not None
    key = {"LDS_Block_Size": "lds_bytes", "VGPR_Count": "vgpr_count", "SGPR_Count": "sgpr_count",
           "Workgroup_Size_X": "workgroup_size"}[column]
    assert trace[key] is None
