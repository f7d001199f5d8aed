"""Unit tests for kerneltrace.compare.document on small hand-built hotspot documents."""

from __future__ import annotations

import copy

import pytest

from kerneltrace.compare.align import align_opcodes
from kerneltrace.compare.document import compare
from kerneltrace.compare.gate import DEFAULT_THRESHOLDS, parse_thresholds
from kerneltrace.compare.values import traced_waves
from kerneltrace.errors import InputError
from kerneltrace.sourceloc import innermost_location as innermost

WAVES = 8


def make_doc(rows, *, waves=WAVES, occupancy=4, mapped=True):
    """A minimal kerneltrace.hotspots/1 document from (asm, line, stall_per_wave, type) rows.

    Every instruction executes once per wave, so hits == waves and the entry instruction's hit
    count is the traced-wave count, as in a real capture.
    """
    instructions = []
    lines: dict[str, dict] = {}
    types: dict[str, int] = {}
    for index, (asm, line, stall_per_wave, kind) in enumerate(rows, start=1):
        stall = stall_per_wave * waves
        source = f"/src/kernel.py:{line}" if mapped else ""
        instructions.append({"index": index, "pc": 0x1000 + 8 * index, "asm": asm, "type": kind,
                             "source": source, "hits": waves, "latency_cycles": stall + 4 * waves,
                             "stall_cycles": stall, "idle_cycles": 0})
        key = source or "<unmapped>"
        entry = lines.setdefault(key, {"location": key, "stall_cycles": 0, "latency_cycles": 0,
                                       "idle_cycles": 0, "hits": 0, "instructions": [],
                                       "artifact": None if mapped else "unmapped"})
        entry["stall_cycles"] += stall
        entry["latency_cycles"] += stall + 4 * waves
        entry["hits"] += waves
        entry["instructions"].append(index)
        types[kind] = types.get(kind, 0) + stall
    total_stall = sum(i["stall_cycles"] for i in instructions)
    for entry in lines.values():
        entry["share"] = entry["stall_cycles"] / total_stall if total_stall else 0.0
    return {
        "schema": "kerneltrace.hotspots/1",
        "kernel": "k",
        "dispatch_dir": "synthetic",
        "dispatch": {"agent": 1, "id": 1, "label": ""},
        "format": "v3",
        "totals": {"instructions": len(instructions), "executed_instructions": len(instructions),
                   "stall_cycles": total_stall,
                   "latency_cycles": sum(i["latency_cycles"] for i in instructions),
                   "idle_cycles": 0, "hits": waves * len(instructions)},
        "stall_by_type": [{"type": t, "stall_cycles": s, "share": s / total_stall}
                          for t, s in sorted(types.items(), key=lambda kv: -kv[1])],
        "source_lines": sorted(lines.values(), key=lambda e: -e["stall_cycles"]),
        "instructions": sorted(instructions, key=lambda i: -i["stall_cycles"]),
        "occupancy": {"waves_per_simd": occupancy, "limited_by": "vgpr"},
        "source_mapping": {"mapped_fraction": 1.0 if mapped else 0.0, "hint": None},
        "warnings": [],
    }


BASE_ROWS = [
    ("s_load_dwordx2 s[4:5], s[0:1], 0x0", 10, 0, "SMEM"),
    ("s_waitcnt lgkmcnt(0)", 10, 200, "LDS/SMEM-wait"),
    ("global_load_dwordx4 v[0:3], v4, s[4:5]", 11, 50, "VMEM-load"),
    ("s_waitcnt vmcnt(0)", 12, 1000, "VMEM-wait"),
    ("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]", 13, 300, "MFMA"),
    ("v_add_f32 v5, v6, v7", 14, 20, "VALU"),
    ("global_store_dword v4, v5, s[4:5]", 15, 30, "VMEM-store"),
    ("s_endpgm", 16, 0, "other"),
]


def with_stall(rows, position, extra_per_wave):
    rows = list(rows)
    asm, line, stall, kind = rows[position]
    rows[position] = (asm, line, stall + extra_per_wave, kind)
    return rows


def test_self_compare_is_neutral_with_zero_deltas():
    doc = make_doc(BASE_ROWS)
    result = compare(doc, copy.deepcopy(doc))
    assert result["schema"] == "kerneltrace.compare/1"
    assert result["verdict"] == "neutral"
    assert result["reasons"] == []
    assert result["totals"]["stall_cycles"]["delta"] == 0
    assert all(row["delta"] == 0 for row in result["stall_by_type"])
    assert result["lines"]["status"] == "matched"
    assert all(row["status"] == "matched" and row["delta"] == 0
               for row in result["lines"]["items"])
    assert result["instructions"]["identical_sequence"] is True
    assert result["instructions"]["matched"] == len(BASE_ROWS)
    assert result["hotspots"]["new"] == [] and result["hotspots"]["vanished"] == []
    assert result["occupancy"]["changed"] is False


def test_planted_regression_on_one_line_is_regressed_and_named():
    before = make_doc(BASE_ROWS)
    after = make_doc(with_stall(BASE_ROWS, 3, 600))  # line 12 wait: 1000 → 1600 per wave
    result = compare(before, after)
    assert result["verdict"] == "regressed"
    total = result["totals"]["stall_cycles"]
    assert total["delta"] == 600 * WAVES
    assert total["relative_per_wave"] == pytest.approx(600 / 1600)
    top_line = result["lines"]["items"][0]
    assert top_line["location"] == "/src/kernel.py:12"
    assert top_line["delta_per_wave"] == pytest.approx(600)
    assert top_line["relative_per_wave"] == pytest.approx(0.6)
    fired = {(c["check"], c["key"]) for c in result["checks"] if c["outcome"] == "regressed"}
    assert ("total_stall", "total") in fired
    assert ("line_stall", "/src/kernel.py:12") in fired
    vmem_wait = next(r for r in result["stall_by_type"] if r["type"] == "VMEM-wait")
    assert vmem_wait["delta_per_wave"] == pytest.approx(600)


def test_improvement_is_improved():
    before = make_doc(with_stall(BASE_ROWS, 3, 600))
    after = make_doc(BASE_ROWS)
    result = compare(before, after)
    assert result["verdict"] == "improved"
    assert result["totals"]["stall_cycles"]["relative_per_wave"] == pytest.approx(-600 / 2200)


def test_small_change_below_threshold_is_neutral():
    before = make_doc(BASE_ROWS)
    after = make_doc(with_stall(BASE_ROWS, 3, 40))  # +40/1600 = 2.5 %, below the 50-cycle floor
    assert compare(before, after)["verdict"] == "neutral"


def test_floor_blocks_relative_jump_on_a_cold_line():
    before = make_doc(BASE_ROWS)
    after = make_doc(with_stall(BASE_ROWS, 5, 20))  # VALU line doubles (20 → 40), tiny absolute
    result = compare(before, after, parse_thresholds("total_stall=off"))
    assert result["verdict"] == "neutral"


def test_per_wave_normalization_when_wave_counts_differ():
    before = make_doc(BASE_ROWS, waves=4)
    after = make_doc(BASE_ROWS, waves=16)  # 4x the sums, same per-wave behaviour
    result = compare(before, after)
    assert result["normalization"]["before_waves"] == 4
    assert result["normalization"]["after_waves"] == 16
    assert result["totals"]["stall_cycles"]["relative"] == pytest.approx(3.0)
    assert result["totals"]["stall_cycles"]["relative_per_wave"] == pytest.approx(0.0)
    assert result["verdict"] == "neutral"


def test_alignment_across_shifted_pcs_and_an_inserted_instruction():
    before = make_doc(BASE_ROWS)
    rows_after = list(BASE_ROWS)
    rows_after.insert(4, ("s_nop 1", 12, 0, "other"))
    after = make_doc(rows_after)
    for instr in after["instructions"]:  # the new build loads at another address
        instr["pc"] += 0x400
    result = compare(before, after)
    section = result["instructions"]
    assert section["identical_sequence"] is False
    assert section["matched"] == len(BASE_ROWS)
    assert section["inserted"] == 1 and section["deleted"] == 0
    assert section["inserted_items"][0]["opcode"] == "s_nop"
    by_key = {item["key"]: item for item in section["items"]}
    mfma = by_key["v_mfma_f32_32x32x8_f16#1"]
    assert mfma["index_before"] == 5 and mfma["index_after"] == 6
    assert mfma["pc_after"] - mfma["pc_before"] == 0x400 + 8
    assert mfma["delta_per_wave"] == 0
    assert result["verdict"] == "neutral"


def test_align_opcodes_pairs_repeated_opcodes_in_order():
    before = ["s_load", "s_waitcnt", "v_add", "v_add", "s_endpgm"]
    after = ["s_load", "v_mul", "s_waitcnt", "v_add", "s_endpgm"]
    alignment = align_opcodes(before, after)
    matched = [(b, a) for b, a in alignment.pairs if b is not None and a is not None]
    # Any longest common subsequence is fine; both v_add placements are one.
    assert len(matched) == 4
    assert (0, 0) in matched and (1, 2) in matched and (4, 4) in matched
    assert matched == sorted(matched)
    assert all(before[b] == after[a] for b, a in matched)
    assert alignment.inserted == 1 and alignment.deleted == 1


def test_unmapped_before_projects_lines_through_alignment():
    before = make_doc(BASE_ROWS, mapped=False)
    after = make_doc(with_stall(BASE_ROWS, 3, 600))
    result = compare(before, after)
    assert result["lines"]["status"] == "projected"
    assert "no source mapping" in result["lines"]["reason"]
    top = result["lines"]["items"][0]
    assert top["location"] == "/src/kernel.py:12"
    assert top["before_per_wave"] == pytest.approx(1000)
    assert top["after_per_wave"] == pytest.approx(1600)
    assert result["verdict"] == "regressed"


def test_neither_mapped_says_line_matching_impossible():
    before = make_doc(BASE_ROWS, mapped=False)
    result = compare(before, copy.deepcopy(before))
    assert result["lines"]["status"] == "unavailable"
    assert "impossible" in result["lines"]["reason"]
    assert result["instructions"]["matched"] == len(BASE_ROWS)
    assert result["verdict"] == "neutral"


def test_new_and_vanished_hotspots():
    before = make_doc(BASE_ROWS)
    # Move the big wait from line 12 to the store on line 15 (new hotspot, old one vanishes).
    after = make_doc(with_stall(with_stall(BASE_ROWS, 3, -950), 6, 950))
    result = compare(before, after)
    new = {(h["kind"], h["key"]) for h in result["hotspots"]["new"]}
    vanished = {(h["kind"], h["key"]) for h in result["hotspots"]["vanished"]}
    assert ("line", "/src/kernel.py:15") in new
    assert ("line", "/src/kernel.py:12") in vanished
    assert ("instruction", "global_store_dword#1") in new
    assert ("instruction", "s_waitcnt#2") in vanished
    assert result["totals"]["stall_cycles"]["delta"] == 0
    # The store line went 30 → 980 per wave: that check fires and says where stall moved, but
    # the time per wave did not change, so the verdict (which follows the time) is neutral.
    fired = {(c["check"], c["key"]) for c in result["checks"] if c["outcome"] == "regressed"}
    assert ("line_stall", "/src/kernel.py:15") in fired
    assert result["estimated_time_change"]["value"] == pytest.approx(0.0)
    assert result["verdict"] == "neutral"


def test_occupancy_change_reported():
    result = compare(make_doc(BASE_ROWS, occupancy=4), make_doc(BASE_ROWS, occupancy=2))
    assert result["occupancy"]["changed"] is True
    assert result["occupancy"]["delta_waves_per_simd"] == -2


def test_l2_metrics_compared_when_given():
    doc = make_doc(BASE_ROWS)
    result = compare(doc, doc, l2_before={"hit_rate": 0.8, "overfetch": 1.0, "name": "x"},
                     l2_after={"hit_rate": 0.6, "overfetch": 1.0})
    metrics = {m["metric"]: m for m in result["l2"]["metrics"]}
    assert set(metrics) == {"hit_rate", "overfetch"}
    assert metrics["hit_rate"]["delta"] == pytest.approx(-0.2)


def test_parse_thresholds():
    th = parse_thresholds("total_stall=5%,line_stall=0.2, instruction_stall=off")
    assert th.total_stall == pytest.approx(0.05)
    assert th.line_stall == pytest.approx(0.2)
    assert th.instruction_stall is None
    assert th.min_stall_per_wave == DEFAULT_THRESHOLDS.min_stall_per_wave
    assert parse_thresholds({"total_stall": "15%"}).total_stall == pytest.approx(0.15)
    assert parse_thresholds({"line_stall": False}).line_stall is None  # YAML `off`
    for bad in ("bogus=1", "total_stall", "total_stall=abc", "total_stall=-5%",
                {"total_stall": True}):
        with pytest.raises(InputError):
            parse_thresholds(bad)


def test_thresholds_change_the_verdict():
    before = make_doc(BASE_ROWS)
    after = make_doc(with_stall(BASE_ROWS, 4, 100))  # +100 cycles/wave on 1632: +6.1 % latency
    result = compare(before, after)
    estimate = result["estimated_time_change"]
    assert estimate["basis"] == "latency_per_wave"  # no wave files in these documents
    assert estimate["value"] == pytest.approx(100 / 1632)
    assert estimate["low"] == pytest.approx(100 / 1632 - 0.07)
    assert result["verdict"] == "neutral"  # inside the ±7 % noise floor
    # Stall thresholds say where stall moved; they do not decide the verdict.
    assert compare(before, after, parse_thresholds("total_stall=1%"))["verdict"] == "neutral"
    tight = compare(before, after, parse_thresholds("time_noise=3%"))
    assert tight["verdict"] == "regressed"
    assert tight["reasons"][0].startswith("estimated time change +6.1%")
    assert any(r.startswith("stall check (does not decide the verdict)")
               for r in compare(before, after, parse_thresholds("time_noise=3%,total_stall=5%"))
               ["reasons"])
    assert compare(before, after, parse_thresholds("time_noise=3%,time_change=10%"))[
        "verdict"] == "neutral"


def test_without_any_time_measure_the_stall_checks_decide():
    def no_latency(doc):
        for item in doc["instructions"]:
            item["latency_cycles"] = 0
        doc["totals"]["latency_cycles"] = 0
        return doc

    before = no_latency(make_doc(BASE_ROWS))
    after = no_latency(make_doc(with_stall(BASE_ROWS, 3, 600)))
    result = compare(before, after)
    assert result["estimated_time_change"]["basis"] == "unavailable"
    assert result["estimated_time_change"]["value"] is None
    assert result["verdict_basis"] == "stall_checks"
    assert result["verdict"] == "regressed"
    assert any("verdict follows the stall checks" in note for note in result["notes"])


def test_bad_documents_raise_input_error():
    doc = make_doc(BASE_ROWS)
    with pytest.raises(InputError):
        compare({"schema": "something/1"}, doc)
    with pytest.raises(InputError):
        compare(doc, [])


def test_helpers():
    assert innermost("a.py:10 -> b.py:20") == "a.py:10"
    assert innermost(None) == ""
    assert traced_waves(make_doc(BASE_ROWS, waves=5)) == (5, "hits of the first executed instruction")
