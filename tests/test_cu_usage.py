"""The traced SEs' CU usage from occupancy.json (analysis/cu_usage.py) and what the plan makes of it.

Hand-written occupancy documents in the rocprofv3 layout: a causal-attention-like staircase on
half the CUs of each SE, a wave resident before the trace began, another kernel's waves on the
same CUs, and the cases that must give nothing (legacy packed events, a kernel of another name,
two launches of the kernel). End to end: a synthetic capture without a kernel trace whose waves
reach half the CUs of its SEs is launch-bound from occupancy.json alone.
"""

from __future__ import annotations

import json

import pytest

from kerneltrace.analysis.cu_usage import judged_usage, observed_usage
from kerneltrace.arch.table import arch_cus_per_shader_engine
from kerneltrace.thresholds import LaunchBoundThresholds


def wave(start: int, end: int, cu: int, kernel: int = 1) -> list[list[int]]:
    return [[start, cu, 0, 0, 1, kernel], [end, cu, 0, 0, 0, kernel]]


def document(per_se: dict[int, list[list[int]]], names: dict[str, str] | None = None) -> dict:
    doc: dict = {str(se): sorted(events) for se, events in per_se.items()}
    doc["dispatches"] = names or {"0": "0 / 0x0", "1": "attn_kernel"}
    doc["version"] = "3.0.0"
    return doc


STAIRCASE = document({
    se: [event for cu, length in enumerate((1000, 2000, 3000, 4000))
         for event in wave(0, length, cu)]
    for se in (0, 1)
})


def test_busy_cycles_per_cu_and_span_per_engine():
    usage = observed_usage(STAIRCASE, ["attn_kernel"])
    assert usage["kernel_id"] == 1
    engine = usage["shader_engines"][0]
    assert (engine["busy_cus"], engine["waves"], engine["span_cycles"]) == (4, 4, 4000)
    assert engine["busy_cycles"] == [4000, 3000, 2000, 1000]


def test_overlapping_waves_count_once_and_a_wave_from_before_the_trace_counts_from_its_start():
    events = (wave(100, 500, 0) + wave(300, 900, 0)  # overlap: busy 100..900
              + [[400, 1, 0, 0, 0, 1]]  # CU 1: a wave resident when the trace began ends at 400
              + wave(600, 900, 1))
    engine = observed_usage(document({0: events}), ["attn_kernel"])["shader_engines"][0]
    # CU 0: 800 cycles; CU 1: from the SE's first event (100) to 400, then 600..900
    assert engine["busy_cycles"] == [800, 600]
    assert engine["waves"] == 3


def test_other_kernels_waves_are_left_out():
    events = wave(0, 1000, 0) + wave(0, 5000, 1, kernel=2) + wave(0, 5000, 2, kernel=2)
    doc = document({0: events}, {"0": "0 / 0x0", "1": "attn_kernel", "2": "memset"})
    engine = observed_usage(doc, ["attn_kernel"])["shader_engines"][0]
    assert (engine["busy_cus"], engine["span_cycles"], engine["busy_cycles"]) == (1, 1000, [1000])


@pytest.mark.parametrize("doc, names", [
    (document({0: wave(0, 10, 0)}), ["another_kernel"]),  # no id of that name
    ({"0": [123456789, 987654321], "dispatches": {"1": "attn_kernel"}}, ["attn_kernel"]),  # legacy
    (document({0: wave(0, 10, 0) + wave(20, 30, 1, kernel=2)},
              {"1": "attn_kernel", "2": "attn_kernel"}), ["attn_kernel"]),  # two launches
    ([1, 2, 3], ["attn_kernel"]),
])
def test_nothing_when_the_kernels_events_cannot_be_told(doc, names):
    assert observed_usage(doc, names) is None


def test_judged_against_the_arch_cus_per_se():
    assert arch_cus_per_shader_engine("gfx950") == 8
    assert arch_cus_per_shader_engine("gfx942") == 9.5
    usage = observed_usage(STAIRCASE, ["attn_kernel"])
    judged = judged_usage(usage, 8.0)
    # 4 of 8 CUs, busy 1000+2000+3000+4000 of 8 × 4000 cycles
    assert (judged.busy_cus_per_se, judged.cu_fill, judged.busy_share) == (4, 0.5, 0.3125)
    assert judged.launch_bound
    assert (judged.busy_cycles_shortest, judged.busy_cycles_longest) == (1000, 4000)
    assert "4 of 8 CUs per SE" in judged.reason
    full = judged_usage(usage, 4.0)  # the same waves on an SE of 4 CUs: 62.5 % busy
    assert full.busy_share == 0.625 and not full.launch_bound
    strict = judged_usage(usage, 4.0, LaunchBoundThresholds(idle_cu_time_share=0.3))
    assert strict.launch_bound
    assert judged_usage(usage, None) is None
    assert judged_usage(None, 8.0) is None


def test_synthetic_capture_without_kernel_trace_on_half_the_cus_is_launch_bound(tmp_path):
    from dataclasses import replace

    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.model.metadata import BUNDLE_LEVELS
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.synth.spec import demo_gemm
    from kerneltrace.synth.writers import write_dispatch_dir

    # deeper than the bundle search climbs: no other test's kernel-trace CSV is found
    tmp_path = tmp_path.joinpath(*(f"level{k}" for k in range(BUNDLE_LEVELS + 1)))
    spec = demo_gemm(arch="gfx950")
    spec = replace(spec, waves=replace(spec.waves, other_cus=3))  # 4 CUs of 8 per SE get waves
    dispatch = write_dispatch_dir(tmp_path / "cap", spec)
    doc = analyze_dispatch(dispatch, arch="gfx950")
    assert doc["metadata"]["kernel_trace"] is None
    assert doc["structure"]["launch"] is None
    usage = doc["structure"]["cu_usage"]
    assert usage["busy_cus_per_se"] == 4 and usage["cus_per_se"] == 8 and usage["launch_bound"]
    entry = build_summary([doc], [])["kernels"][0]["dispatches"][0]
    assert entry["bottleneck"]["kind"] == "launch-bound"
    assert entry["findings"][0]["rule"] == "LAUNCH-under-filled-gpu"
    assert "(observed)" in entry["findings"][0]["title"]
    assert entry["cu_usage"]["launch_bound"]
    from kerneltrace.render.plan import render_html, render_markdown

    summary = build_summary([doc], [])
    lines = render_markdown(summary, [doc]).splitlines()
    observed = [line for line in lines if line.startswith("- Observed instead: ")]
    assert len(observed) == 1 and "**launch-bound**" in observed[0]  # a list item of its own
    assert any(line.startswith("- Not known: no kernel-trace row") for line in lines)
    assert "Observed instead: " in render_html(summary, [doc])
    # every CU of the SE busy (the generator's default): no launch-bound verdict from it
    full = analyze_dispatch(write_dispatch_dir(tmp_path / "full", demo_gemm(arch="gfx950")),
                            arch="gfx950")
    assert full["structure"]["cu_usage"]["busy_cus_per_se"] == 8
    assert not full["structure"]["cu_usage"]["launch_bound"]
    json.dumps(doc)  # the document stays JSON


def test_an_occupancy_file_beyond_the_read_limit_gives_no_usage(tmp_path, monkeypatch):
    from dataclasses import replace

    import kerneltrace.analysis.cu_usage as cu_usage
    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.model.metadata import BUNDLE_LEVELS
    from kerneltrace.synth.spec import demo_gemm
    from kerneltrace.synth.writers import write_dispatch_dir

    root = tmp_path.joinpath(*(f"level{k}" for k in range(BUNDLE_LEVELS + 1)))
    spec = demo_gemm(arch="gfx950")
    dispatch = write_dispatch_dir(root, replace(spec, waves=replace(spec.waves, other_cus=3)))
    monkeypatch.setattr(cu_usage, "READ_LIMIT", 64)  # bytes: far below the file's size
    doc = analyze_dispatch(dispatch, arch="gfx950")
    assert doc["cu_usage"] is None and doc["structure"]["cu_usage"] is None
    assert doc["structure"]["launch"] is None  # and nothing else is claimed about the launch


# 9 CUs: 4 ran a fourth round of equal workgroups, 5 only three (a 1024-tile GEMM on 304 CUs)
ROUNDS = document({0: [event for cu in range(9) for r in range(4 if cu < 4 else 3)
                       for event in wave(1000 * r, 1000 * r + 990, cu)]})


def test_a_last_round_on_some_cus_is_two_levels_a_staircase_is_not():
    judged = judged_usage(observed_usage(ROUNDS, ["attn_kernel"]), 9.5)
    assert judged.two_levels and judged.longest_cus == 4 and not judged.launch_bound
    # mean busy (4 × 3960 + 5 × 2970) / 9 over the longest 3960
    assert judged.tail_share == round(1 - (4 * 3960 + 5 * 2970) / 9 / 3960, 4)
    staircase = judged_usage(observed_usage(STAIRCASE, ["attn_kernel"]), 4.0)
    assert not staircase.two_levels and staircase.tail_share == round(1 - 2500 / 4000, 4)


def test_the_observed_tail_is_a_launch_tail_finding():
    from kerneltrace.plan.context import PlanContext
    from kerneltrace.plan.rules.launch import LaunchThresholds, launch_findings
    from tests.plan_synthetic import Ins, hotspot_doc

    doc = hotspot_doc([Ins("v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]", "MFMA",
                           stall=10, latency=100), Ins("s_endpgm", "other", latency=10)])
    judged = judged_usage(observed_usage(ROUNDS, ["attn_kernel"]), 9.5)
    doc["structure"] = {"cu_usage": judged.to_dict(), "launch": None}
    (finding,) = launch_findings(PlanContext(doc))
    assert finding.rule == "LAUNCH-tail" and "(observed)" in finding.title
    low, high = LaunchThresholds().observed_tail_removable
    # no setup round trips: all of the wave's life is divisible
    assert finding.estimated_gain.high == round(judged.tail_share * high, 4)
    assert finding.estimated_gain.low == round(judged.tail_share * low, 4)
    doc["structure"]["cu_usage"] = judged_usage(observed_usage(STAIRCASE, ["attn_kernel"]),
                                                4.0).to_dict()
    assert launch_findings(PlanContext(doc)) == []  # a staircase of unequal workgroups


def test_the_plan_judges_the_observed_levels_with_its_own_thresholds():
    """`plan.thresholds.launch_bound` reaches every field of the observed usage, not only the
    launch-bound share: with a looser level (0.7 of the top), 2970 and 3960 cycles are one level
    and the last-round tail is gone."""
    from kerneltrace.plan.summary import build_summary
    from tests.plan_synthetic import Ins, hotspot_doc

    doc = hotspot_doc([Ins("v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]", "MFMA",
                           stall=10, latency=100), Ins("s_endpgm", "other", latency=10)])
    doc["cu_usage"] = observed_usage(ROUNDS, ["attn_kernel"])
    doc["structure"] = {"cu_usage": judged_usage(doc["cu_usage"], 9.5).to_dict(), "launch": None}

    def entry(thresholds=None):
        return build_summary([doc], [], thresholds=thresholds)["kernels"][0]["dispatches"][0]

    default = entry()
    assert default["cu_usage"]["two_levels"]
    assert any(f["rule"] == "LAUNCH-tail" for f in default["findings"])
    loose = entry({"launch_bound": {"same_level": 0.7}})
    assert not loose["cu_usage"]["two_levels"] and loose["cu_usage"]["longest_cus"] == 9
    assert not any(f["rule"] == "LAUNCH-tail" for f in loose["findings"])


def _reference_usage(document, kernel_names):
    """observed_usage as first written (one Python check per event, tuples sorted per CU): the
    faster code must give exactly this on every input."""
    names = {name for name in kernel_names if name}
    dispatches = document.get("dispatches")
    ids = {int(key) for key, name in dispatches.items() if key.isdigit() and name in names}
    if not ids:
        return None
    per_engine, seen = {}, set()
    for key, events in document.items():
        if not (key.isascii() and key.isdigit() and isinstance(events, list)):
            continue
        cus = per_engine.setdefault(int(key), {})
        for event in events:
            if not isinstance(event, list) or len(event) < 6:
                return None
            time, cu, start, kernel = event[0], event[1], event[4], event[5]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (time, cu, start, kernel)):
                return None
            if kernel in ids:
                seen.add(kernel)
                cus.setdefault(cu, []).append((time, 1 if start else 0))
    if len(seen) != 1:
        return None
    engines = []
    for se, cus in sorted(per_engine.items()):
        if not cus:
            continue
        times = [time for events in cus.values() for time, _ in events]
        first, last = min(times), max(times)
        busy = []
        for events in cus.values():
            events.sort()
            depth = lowest = 0
            for _, start in events:
                depth += 1 if start else -1
                lowest = min(lowest, depth)
            depth, since, total = -lowest, first, 0
            for time, start in events:
                if start:
                    if depth == 0:
                        since = time
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        total += time - since
            busy.append(total + (last - since if depth > 0 else 0))
        engines.append({"se": se, "busy_cus": len(cus),
                        "waves": sum(s for events in cus.values() for _, s in events),
                        "span_cycles": last - first, "busy_cycles": sorted(busy, reverse=True)})
    return {"source": "occupancy.json", "kernel_id": seen.pop(), "shader_engines": engines}


def test_observed_usage_matches_the_per_event_definition_on_random_documents():
    import random

    rng = random.Random(24)
    for case in range(400):
        doc = {"dispatches": {"1": "attn_kernel", "2": "other", "3": "attn_kernel" if case % 7 == 0 else "x"}}
        for se in range(rng.randint(1, 4)):
            events = []
            for _ in range(rng.randint(0, 60)):
                event = [rng.randint(-50 if case % 2 else 0, 400), rng.randint(0, 5), 0, 0, rng.randint(0, 3),
                         rng.choice([1, 1, 1, 2, 3])] + [0] * rng.randint(0, 2)
                events.append(event)
            if case % 11 == 0 and events:  # a malformed event somewhere
                events[rng.randrange(len(events))] = rng.choice([[1, 2, 3], 7, [1, 2, 0, 0, True, 1],
                                                                 [1.0, 2, 0, 0, 1, 1]])
            doc[str(se) if case % 13 else f"0{se}"] = events
        assert observed_usage(doc, ["attn_kernel"]) == _reference_usage(doc, ["attn_kernel"]), case


def test_the_document_step_leaves_the_collector_as_it_found_it(tmp_path):
    import gc
    import json as _json

    from kerneltrace.document.hotspot_report import _cu_usage

    (tmp_path / "occupancy.json").write_text(_json.dumps(STAIRCASE))
    document = {"metadata": {}, "kernel": "attn_kernel", "kernel_symbol": None}
    assert gc.isenabled()
    assert _cu_usage(tmp_path, document) == observed_usage(STAIRCASE, ["attn_kernel"])
    assert gc.isenabled()
    gc.disable()
    try:
        assert _cu_usage(tmp_path / "missing", document) is None
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_waves_runs_reading_gives_the_json_facts(tmp_path):
    """cu_usage_document (pysimdjson, each SE's events as EventColumns) gives observed_usage the
    facts json.loads gives; a file it does not vouch for, or one over the limit, is None."""
    import json as _json
    import random

    from kerneltrace.analysis.waves.occupancy import cu_usage_document

    path = tmp_path / "occupancy.json"
    rng = random.Random(24)
    for case in range(60):
        doc = {str(se): [[rng.randint(0, 500), rng.randint(0, 4), 0, 0, rng.randint(0, 1),
                          rng.choice([1, 1, 2])] + [7] * (case % 3) for _ in range(rng.randint(1, 40))]
               for se in range(rng.randint(1, 3))}
        doc["dispatches"] = {"1": "attn_kernel", "2": "attn_kernel" if case % 5 == 0 else "other"}
        doc["version"] = "3.0.0"
        path.write_text(_json.dumps(doc))
        fast = cu_usage_document(path, 1 << 20)
        assert fast is not None and fast["dispatches"] == doc["dispatches"]
        assert observed_usage(fast, ["attn_kernel"]) == observed_usage(doc, ["attn_kernel"]), case
    path.write_text(_json.dumps(STAIRCASE))
    assert observed_usage(cu_usage_document(path, 1 << 20), ["attn_kernel"]) \
        == observed_usage(STAIRCASE, ["attn_kernel"]) is not None
    assert cu_usage_document(path, 100) is None  # over the limit: json.loads' path refuses it
    path.write_text(_json.dumps({"0": [[-5, 0, 0, 0, 1, 1]], "dispatches": {"1": "attn_kernel"}}))
    assert cu_usage_document(path, 1 << 20) is None  # a negative time: not vouched for
