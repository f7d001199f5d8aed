"""Straggler analysis (issue 21.4): at each barrier, which wave arrived last and what made it late.

Synthetic: demo_gemm's workgroups re-timed in lockstep (kerneltrace.synth.barriers) with a known
late wave (SIMD 2) made late by a known instruction; the analysis must name that wave and that
row, the verdict follow the cause when it is a wait, and the barrier finding say so. Shared: the
real MFMA GEMM / flash-attention captures with wave files.
"""

from __future__ import annotations

from functools import cache

import pytest
from conftest import SHARED

from kerneltrace.analysis.waves.stragglers import (
    StragglerTotals,
    _instances,
    add_events,
    events,
    merge_stragglers,
    straggler_summary,
)
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.summary import build_summary
from kerneltrace.synth.barriers import synchronised
from kerneltrace.synth.simulate import LABEL_ROWS, simulate
from kerneltrace.synth.spec import demo_gemm
from kerneltrace.synth.writers import write_dispatch_dir

LATE_SIMD = 2
SPEC = demo_gemm("gfx942", iterations=8)
ROWS = {i + LABEL_ROWS: ins.asm for i, ins in enumerate(SPEC.instructions)}
BARRIER = next(r for r, asm in ROWS.items() if asm.startswith("s_barrier"))
B_WAIT = next(r for r, asm in ROWS.items() if asm == "s_waitcnt vmcnt(0)")  # after the B burst
VALU = next(r for r, asm in ROWS.items() if asm.startswith("v_add_u32_e32 v4"))


@cache
def synthetic(kind: str, tmp_root: str, with_waves: bool = True):
    from pathlib import Path

    row = B_WAIT if kind == "wait" else VALU
    waves = synchronised(simulate(SPEC), {BARRIER}, {LATE_SIMD: (row, 2500)})
    directory = write_dispatch_dir(Path(tmp_root) / f"{kind}{int(with_waves)}", SPEC, waves=waves,
                                   with_waves=with_waves)
    doc = analyze_dispatch(directory, waves=with_waves)
    return doc, build_summary([doc], [])["kernels"][0]["dispatches"][0]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("stragglers"))


def test_lockstep_waves_leave_each_barrier_together():
    waves = synchronised(simulate(SPEC), {BARRIER}, {LATE_SIMD: (B_WAIT, 2500)})
    group = [w for w in waves if (w.se, w.slot) == (0, 0)]
    releases = [[t + d for t, _, _, d, line in w.instructions if line == BARRIER] for w in group]
    assert len({len(r) for r in releases}) == 1 and len(releases[0]) == 8
    for k in range(8):
        assert len({r[k] for r in releases}) == 1  # one release per barrier instance
    late = next(w for w in group if w.simd == LATE_SIMD)
    least = [d for _, _, _, d, line in late.instructions if line == BARRIER]
    assert max(least) == 8  # the late wave never waits at the barrier: it is the last one


def test_the_planted_late_wave_and_its_wait_are_found(root):
    doc, _ = synthetic("wait", root)
    found = doc["waves"]["stragglers"]
    (barrier,) = found["barriers"]
    assert barrier["index"] == BARRIER and barrier["untraced"] == 0
    assert barrier["instances"] == SPEC.waves.shader_engines * SPEC.waves.slots * 8
    assert barrier["last_simd"] == {"simd": LATE_SIMD, "share": 1.0}
    assert barrier["charged"][0]["index"] == B_WAIT
    causes = doc["structure"]["barriers"]["stragglers"]
    assert causes["causes"][0]["cause"] == "global-load-wait"
    assert causes["causes"][0]["rows"][0] == B_WAIT
    assert causes["families"]["memory"]["share"] > 0.9


def test_verdict_and_finding_follow_a_wait_cause(root):
    _, plan = synthetic("wait", root)
    assert plan["bottleneck"]["kind"] == "memory-latency"
    assert "last-arriving wave" in plan["bottleneck"]["sentence"]
    bar = next(f for f in plan["findings"] if f["rule"].startswith("BAR-"))
    assert bar["rule"] == "BAR-straggler-waits"
    assert bar["evidence"][0]["instruction_index"] == B_WAIT
    assert "Barrier waits here are caused by waits on global loads" in bar["root_cause"]


def test_imbalance_cause_keeps_the_synchronisation_verdict(root):
    doc, plan = synthetic("valu", root)
    causes = doc["structure"]["barriers"]["stragglers"]
    assert causes["causes"][0]["cause"] == "valu" and VALU in causes["causes"][0]["rows"]
    assert plan["bottleneck"]["kind"] == "synchronisation"
    bar = next(f for f in plan["findings"] if f["rule"].startswith("BAR-"))
    assert bar["rule"] == "BAR-dominated"
    assert "caused by dependent VALU work" in bar["root_cause"]
    assert VALU in [e["instruction_index"] for e in bar["evidence"]]


def test_without_wave_files_the_code_json_segments_stay(root):
    doc, plan = synthetic("wait", root, with_waves=False)
    barriers = doc["structure"]["barriers"]
    assert "stragglers" not in barriers
    assert barriers["barriers"][0]["cause_index"] is not None
    assert "last-arriving" not in plan["bottleneck"]["sentence"]
    assert not any(f["rule"] == "BAR-straggler-waits" for f in plan["findings"])


def _event(wave, row, arrival, release, window, lost, rows, cycles, simd=0, scope=(0, 1)):
    return (scope, row, arrival, release, wave, window, lost, rows, cycles, simd)


def _totals(tuples: list[tuple]) -> StragglerTotals:
    """StragglerTotals holding `tuples` (the _event form) as its event columns."""
    import numpy as np

    totals = StragglerTotals(barrier=None)
    for event in tuples:
        if event[4] not in totals.names:
            totals.names.append(event[4])
    column = {name: np.array(values, np.int64) for name, values in zip(
        ("se", "cu", "row", "arrival", "release", "wave", "window", "lost", "simd", "top_count"),
        zip(*[(e[0][0], e[0][1], e[1], e[2], e[3], totals.names.index(e[4]), e[5], e[6], e[9],
               len(e[7])) for e in tuples], strict=True), strict=True)}
    column["top_rows"] = np.array([r for e in tuples for r in e[7]], np.int64)
    column["top_sums"] = np.array([c for e in tuples for c in e[8]], np.int64)
    add_events(totals, column)
    return totals


def test_instances_split_by_release_and_wave():
    import numpy as np

    events = [_event("a", 5, 100, 210, 90, 10, [], []), _event("b", 5, 200, 212, 190, 100, [], []),
              _event("a", 5, 300, 400, 80, 0, [], []), _event("b", 5, 380, 401, 170, 0, [], []),
              _event("c", 5, 380, 402, 170, 0, [], [], scope=(1, 1))]
    order, starts = _instances(_totals(events).parts[0])
    assert sorted(np.diff(np.append(starts, len(order))).tolist()) == [1, 2, 2]


def test_wait_is_charged_to_the_stragglers_excess():
    # wave a arrives at 100 and waits 108 cycles; b arrives last at 200 (8 cycles) having lost
    # 100 cycles at row 7 more than a did
    totals = _totals([_event("a", 5, 100, 208, 90, 20, [7, 9], [10, 10]),
                      _event("b", 5, 200, 208, 190, 120, [7, 9], [110, 10], simd=1)])
    summary = straggler_summary(totals)
    (barrier,) = summary["barriers"]
    assert barrier["wait_cycles"] == 100 and barrier["last_simd"]["simd"] == 1
    assert barrier["charged"] == [{"index": 7, "cycles": 100}]


def _reference_summary(tuples: list[tuple], untraced_factor: float) -> list[dict]:
    """The module docstring's definition as a plain loop over events (the vectorised summary
    must give exactly its figures, floats included)."""
    by_key: dict[tuple, list[tuple]] = {}
    for event in tuples:
        by_key.setdefault((event[0], event[1]), []).append(event)
    instances = []
    for key_events in by_key.values():
        key_events.sort(key=lambda e: e[3])
        current: list[tuple] = []
        for event in key_events:
            if current and (event[3] - current[-1][3] > 16 or event[4] in {e[4] for e in current}):
                instances.append(current)
                current = []
            current.append(event)
        instances.append(current)
    least_of_row: dict[int, list[int]] = {}
    for instance in instances:
        if len(instance) > 1:
            least_of_row.setdefault(instance[0][1], []).append(min(e[3] - e[2] for e in instance))
    usual = {row: sorted(values)[len(values) // 2] for row, values in least_of_row.items()}
    rows: dict[int, dict] = {}
    for instance in instances:
        row = instance[0][1]
        entry = rows.setdefault(row, {"index": row, "instances": 0, "single_wave": 0, "untraced": 0,
                                      "stall_cycles": 0, "wait_cycles": 0,
                                      "untraced_wait_cycles": 0, "unexplained_cycles": 0,
                                      "charged": {}, "last_waves": {}, "last_simds": {}})
        durations = [e[3] - e[2] for e in instance]
        entry["stall_cycles"] += sum(durations)
        entry["instances"] += 1
        if len(instance) < 2:
            entry["single_wave"] += 1
            continue
        least = min(durations)
        wait = sum(d - least for d in durations)
        if least > untraced_factor * max(usual.get(row, 1), 1):
            entry["untraced"] += 1
            entry["untraced_wait_cycles"] += sum(durations)
            continue
        straggler = instance[durations.index(least)]
        entry["wait_cycles"] += wait
        entry["last_waves"][straggler[4]] = entry["last_waves"].get(straggler[4], 0) + 1
        entry["last_simds"][straggler[9]] = entry["last_simds"].get(straggler[9], 0) + 1
        others = [e for e in instance if e is not straggler]
        share = 1.0 / len(others)
        excess = dict(zip(straggler[7], straggler[8], strict=True))
        excess["work"] = straggler[5] - straggler[6]
        for event in others:
            excess["work"] -= (event[5] - event[6]) * share
            for r, cycles in zip(event[7], event[8], strict=True):
                if r in excess:
                    excess[r] -= cycles * share
        excess = {r: value for r, value in excess.items() if value > 0}
        total = sum(excess.values())
        if not total or not wait:
            entry["unexplained_cycles"] += wait
            continue
        for key, cycles in excess.items():
            entry["charged"][key] = entry["charged"].get(key, 0.0) + wait * cycles / total
    out = []
    for entry in sorted(rows.values(), key=lambda e: -e["wait_cycles"]):
        charged = sorted(entry.pop("charged").items(), key=lambda kv: -kv[1])
        last = sorted(entry.pop("last_waves").items(), key=lambda kv: -kv[1])
        simds = sorted(entry.pop("last_simds").items(), key=lambda kv: -kv[1])
        counted = max(sum(n for _, n in simds), 1)
        entry["last_simd"] = ({"simd": simds[0][0], "share": round(simds[0][1] / counted, 4)}
                              if simds else None)
        entry["work_cycles"] = int(round(dict(charged).get("work", 0.0)))
        rows_charged = [(key, cycles) for key, cycles in charged if key != "work"]
        entry["charged"] = [{"index": key, "cycles": int(round(cycles))}
                            for key, cycles in rows_charged[:64]]
        entry["rest_cycles"] = int(round(sum(c for _, c in rows_charged[64:])))
        entry["last_wave"] = ({"file": last[0][0], "times": last[0][1],
                               "share": round(last[0][1] / max(sum(n for _, n in last), 1), 4)}
                              if last else None)
        out.append(entry)
    return out


def _random_events(seed: int) -> list[tuple]:
    """Barrier events with ties, repeated waves, close and far releases, several CUs and rows."""
    import random

    rng = random.Random(seed)
    tuples = []
    for _ in range(rng.randrange(1, 400)):
        arrival = rng.randrange(0, 5000)
        rows = rng.sample(range(40), rng.randrange(0, 8))
        tuples.append(_event(f"w{rng.randrange(12)}", rng.choice([3, 5, 11]), arrival,
                             arrival + rng.choice([0, 4, 8, 8, 100, rng.randrange(500)]),
                             rng.randrange(0, 3000), rng.randrange(0, 2000), rows,
                             [rng.choice([1, 7, 10, rng.randrange(1, 999)]) for _ in rows],
                             simd=rng.randrange(4), scope=(rng.randrange(2), rng.choice([-1, 2]))))
    return tuples


@pytest.mark.parametrize("seed", range(40))
def test_the_vectorised_summary_is_the_plain_loop(seed):
    tuples = _random_events(seed)
    factor = [4.0, 1.5, 0.5, 3][seed % 4]  # an int factor too (a --thresholds file may give one)
    found = straggler_summary(_totals(tuples), factor)
    assert found["barriers"] == _reference_summary(tuples, factor)
    assert found["events"] == len(tuples)
    assert found["wait_cycles"] == sum(e["wait_cycles"] for e in found["barriers"])


def test_pairs_find_their_slot_across_blocks():
    """_slots_of_pairs: a wide row range makes a block of 2 instances; every pair finds the slot
    of its (instance, row) or -1, as a dictionary would."""
    import random

    import numpy as np

    from kerneltrace.analysis.waves.stragglers import _slots_of_pairs

    rng = random.Random(3)
    span = 1 << 20
    slots = sorted({(rng.randrange(9), rng.choice([0, 5, span - 1, rng.randrange(span)]))
                    for _ in range(30)})
    rng.shuffle(slots)
    slots.sort(key=lambda slot: slot[0])  # by instance, rows in any order
    pairs = sorted(((rng.randrange(9), rng.choice([r for _, r in slots] + [7])) for _ in range(200)),
                   key=lambda pair: pair[0])
    index = {slot: position for position, slot in enumerate(slots)}
    found = _slots_of_pairs(np.array([i for i, _ in slots]), np.array([r for _, r in slots]),
                            np.array([i for i, _ in pairs]), np.array([r for _, r in pairs]), span, 9)
    assert found.tolist() == [index.get(pair, -1) for pair in pairs]


def test_merged_parts_are_one_part():
    import numpy as np

    # the two processes read disjoint files: wave names of the second part are its own
    tuples = _random_events(7)
    tuples = [e for e in tuples if e[4] < "w6"] + [e for e in tuples if e[4] >= "w6"]
    cut = sum(e[4] < "w6" for e in tuples)
    whole = straggler_summary(_totals(tuples), 4.0)
    first, second = _totals(tuples[:cut]), _totals(tuples[cut:])
    merge_stragglers(first, second)
    assert straggler_summary(first, 4.0) == whole
    assert np.array_equal(events(first)["top_sums"], events(_totals(tuples))["top_sums"])


@pytest.mark.shared
@pytest.mark.parametrize("path", [
    "captures/flydsl-kernel-profiling-lib/examples/flash_attn_func/att_viewer/small/ui_output_agent_32235_dispatch_44",
    "captures/flydsl-kernel-profiling-lib/examples/preshuffle_gemm_v2/att_viewer/big/ui_output_agent_63371_dispatch_15",
])
def test_real_captures_have_stragglers_for_every_barrier(path):
    directory = SHARED / path
    if not directory.is_dir():
        pytest.skip(f"{path} not present")
    doc = analyze_dispatch(directory, waves=True)
    found = doc["waves"]["stragglers"]
    executed = {i["index"] for i in doc["instructions"] if i["asm"].startswith("s_barrier")
                and i.get("hits")}
    assert {b["index"] for b in found["barriers"]} == executed
    for barrier in found["barriers"]:
        assert barrier["single_wave"] == 0 and barrier["untraced"] == 0  # whole workgroups traced
        assert 0 < barrier["wait_cycles"] <= barrier["stall_cycles"]
    causes = doc["structure"]["barriers"]["stragglers"]
    assert causes["families"]["memory"]["share"] >= 0.5  # the last wave waits on its tile loads


def test_the_untraced_factor_in_use_decides_untraced_partners(root):
    """structure.untraced_factor (hotspot_analyzer.py --thresholds): below 1 every instance's
    least wait exceeds it × the usual least, so every instance waited for an untraced wave."""
    from kerneltrace.thresholds import StructureThresholds

    doc, _ = synthetic("wait", root)
    strict = analyze_dispatch(doc["dispatch_dir"], waves=True, structure=StructureThresholds(untraced_factor=0.5))
    (barrier,) = strict["waves"]["stragglers"]["barriers"]
    assert doc["waves"]["stragglers"]["barriers"][0]["untraced"] == 0
    assert barrier["untraced"] == barrier["instances"] > 0
    assert strict["thresholds"]["structure"]["untraced_factor"] == 0.5
