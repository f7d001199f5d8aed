"""The verdict on LDS round trips (on-chip, not memory) and when no bound clears its bar (leans to
the nearest instead of "mixed"): plan/verdict.py, analysis/drains.lds_only_stall."""

from __future__ import annotations

from kerneltrace.analysis.control_flow import FlowRow
from kerneltrace.analysis.drains import WaitDrain, drain_waits, lds_only_stall
from kerneltrace.plan.verdict import decide


def _doc(shares: dict[str, float], lds_only: float | None = None) -> dict:
    doc = {"format": "v3", "totals": {"stall_cycles": 1000}, "instructions": [],
           "stall_by_type": [{"type": kind, "share": share} for kind, share in shares.items()]}
    if lds_only is not None:
        doc["structure"] = {"waits": {"lds_only_share": lds_only}}
    return doc


def _row(index: int, asm: str, stall: int = 0) -> FlowRow:
    return FlowRow(index=index, asm=asm, hits=1, pc=None, codeobj=None, time=stall + 4, stall=stall)


def test_lds_only_waits_exclude_a_wait_that_also_drains_vector_memory():
    rows = [
        _row(0, "global_load_dwordx4 v[0:3], v4, s[8:9]"),
        _row(1, "ds_read_b64 v[6:7], v5"),
        _row(2, "s_waitcnt lgkmcnt(0)", stall=300),  # LDS only: on-chip
        _row(3, "ds_read_b64 v[8:9], v5 offset:64"),
        _row(4, "s_waitcnt vmcnt(0) lgkmcnt(0)", stall=500),  # the global load is outstanding
        _row(5, "s_endpgm"),
    ]
    drains = drain_waits(rows)
    assert lds_only_stall(drains) == 300
    # an lgkmcnt wait draining a kernel-argument load is not an LDS round trip
    scalar = WaitDrain(9, "lgkmcnt", 0, 70, (8,), "kernarg", {"kernarg": 1})
    assert lds_only_stall([*drains, scalar]) == 300


def test_lds_round_trips_are_issue_dependency_not_memory_latency():
    shares = {"VMEM-wait": 0.3, "LDS": 0.2, "LDS/SMEM-wait": 0.2, "VALU": 0.1}
    verdict = decide(_doc(shares, lds_only=0.2))
    assert verdict.kind == "issue-dependency"
    assert "LDS round trips" in verdict.sentence and "40%" in verdict.sentence
    assert any("prefetching" in text for text in verdict.does_not_help)
    # the same waits drained vector memory too: off-chip memory dominates, memory-latency
    assert decide(_doc(shares, lds_only=0.0)).kind == "memory-latency"
    # more off-chip than on-chip: memory-latency
    assert decide(_doc({**shares, "VMEM-wait": 0.45}, lds_only=0.2)).kind == "memory-latency"


def test_a_bound_near_its_bar_is_named_at_low_confidence():
    verdict = decide(_doc({"barrier": 0.27, "VALU": 0.2, "VMEM-wait": 0.1}))
    assert verdict.kind == "synchronisation" and verdict.confidence == "low"
    assert verdict.sentence.startswith("No bound clears its bar; the nearest is barrier stall at 27%")
    assert verdict.evidence[0] == "nearest bar: barrier stall 27% of 30%"
    # the nearest bar by fraction: memory 0.34 of 0.4 (85 %) over barrier 0.25 of 0.3 (83 %)
    assert decide(_doc({"barrier": 0.25, "VMEM-wait": 0.34})).kind == "memory-latency"


def test_no_bound_near_its_bar_stays_mixed():
    verdict = decide(_doc({"barrier": 0.2, "VALU": 0.3, "VMEM-wait": 0.2}))
    assert verdict.kind == "mixed"


def test_mfma_stall_in_an_mfma_bound_loop_is_bounded_by_what_the_bound_leaves(tmp_path):
    """MFMA rows stalled on a full matrix pipe (issue 21.8): a line or region finding of that
    stall claims no more than the verdict's ceiling; without the cap it would rank HIGH."""
    import plan_verdict_specs as specs

    from kerneltrace.document.hotspot_report import analyze_dispatch
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.synth import SynthInstruction, write_dispatch_dir

    spec = specs.mfma_bound()
    stalled = tuple(SynthInstruction(ins.asm, ins.line, issue_cycles=ins.issue_cycles, stall_cycles=8)
                    if ins.asm.startswith("v_mfma") else ins for ins in spec.instructions)
    from dataclasses import replace

    doc = analyze_dispatch(write_dispatch_dir(tmp_path, replace(spec, instructions=stalled)), waves=True)
    entry = build_summary([doc], [])["kernels"][0]["dispatches"][0]
    assert entry["bottleneck"]["kind"] == "compute-mfma"
    mfma_rows = {i["index"] for i in doc["instructions"] if i["asm"].startswith("v_mfma")}
    located = [f for f in entry["findings"] if f["rule"] in ("LINE-hotspot", "REGION-hotspot")
               and {e["instruction_index"] for e in f["evidence"]} <= mfma_rows]
    assert located, "the stalled MFMA rows get a line or region finding"
    for finding in located:
        assert "compute-mfma verdict" in finding["estimated_gain"]["basis"]
        assert finding["priority"] != "HIGH"


def _ping_pong_doc(valu_latency: int) -> dict:
    """A ping-pong scheduled loop (rows 0-3) whose barriers hold 40 % of stall; its VALU rows
    take `valu_latency` of the loop's 1000 latency cycles."""
    rows = [("s_barrier", "barrier", 400, 400), ("v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]",
                                                  "MFMA", 0, 1000 - valu_latency - 400 - 100),
            ("v_xor_b32_e32 v4, v5, v6", "VALU", 0, valu_latency),
            ("ds_read_b64 v[8:9], v4", "LDS", 0, 100)]
    doc = _doc({"barrier": 0.4, "VMEM-wait": 0.1, "MFMA": 0.2, "VALU": 0.1})
    doc["instructions"] = [{"index": i, "asm": asm, "type": kind, "hits": 10, "stall_cycles": stall,
                            "latency_cycles": latency, "idle_cycles": 0}
                           for i, (asm, kind, stall, latency) in enumerate(rows)]
    doc["structure"] = {"barriers": {"ping_pong": True},
                        "control_flow": {"hot_loop": {"first_index": 0, "last_index": 3,
                                                      "time_share": 0.95}}}
    return doc


def test_a_ping_pong_phase_of_vector_work_is_issue_dependency():
    verdict = decide(_ping_pong_doc(valu_latency=200))  # VALU 20 % of the loop's latency
    assert verdict.kind == "issue-dependency" and "vector work" in verdict.sentence
    assert "removing the barriers (they are the schedule)" in verdict.does_not_help
    # its address work folded away (5 %): the phase imbalance, synchronisation
    assert decide(_ping_pong_doc(valu_latency=50)).kind == "synchronisation"
