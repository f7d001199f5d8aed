"""One test per plan rule on small synthetic hotspot documents: fires when it should, not otherwise."""

from __future__ import annotations

import pytest
from plan_synthetic import MFMA, Ins, hotspot_doc, mfma_loop_with_load

from kerneltrace.isa.registers import reads, registers
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, priority_for_share, sort_findings
from kerneltrace.plan.pipeline import run_all
from kerneltrace.plan.rules.entry_line import entry_line_artifact
from kerneltrace.plan.rules.kernel_wide import (
    barrier_dominated,
    no_source_mapping,
    occupancy_limited,
)
from kerneltrace.plan.rules.lds_scalar_patterns import lds_read_before_mfma, scale_load_late
from kerneltrace.plan.rules.memory import memory_verdict
from kerneltrace.plan.rules.mfma_chain import mfma_dependency_chain
from kerneltrace.plan.rules.vmem_patterns import loads_in_mfma_loop, vmem_queue_burst


def ctx_of(program, **kwargs) -> PlanContext:
    l2 = kwargs.pop("l2", None)
    return PlanContext(hotspot_doc(program, **kwargs), l2)


def test_register_helpers_expand_ranges_and_skip_destination():
    assert registers("v[4:6]") == {("v", 4), ("v", 5), ("v", 6)}
    assert reads("v_mfma_f32_16x16x16_bf16 v[0:3], v8, a2, v[0:3]") >= {
        ("v", 8),
        ("a", 2),
        ("v", 0),
    }
    assert ("v", 9) not in reads("global_load_dword v9, v[2:3], off")
    assert ("v", 9) in reads("global_store_dword v[2:3], v9, off")


def test_p1_fires_on_load_between_mfmas_with_close_wait():
    findings = loads_in_mfma_loop(ctx_of(mfma_loop_with_load()))
    assert [f.location for f in findings] == ["k.py:20"]
    finding = findings[0]
    assert finding.priority == "HIGH"
    assert {e.instruction_index for e in finding.evidence} == {3, 5}
    assert finding.stall_share == pytest.approx(1200 / 1220, abs=1e-4)
    gain = finding.estimated_gain
    assert 0 < gain.low < gain.high <= finding.stall_share
    assert "verify by re-timing" in gain.status


def test_p1_silent_when_load_is_outside_the_mfma_sequence():
    program = [
        Ins("global_load_dwordx4 v[20:23], v[2:3], off", "VMEM-load", "k.py:20", 300, 320),
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:20", 900, 910),
    ]
    program += [Ins(MFMA, "MFMA", "k.py:30", 0, 16) for _ in range(4)]
    assert loads_in_mfma_loop(ctx_of(program)) == []


def _burst(stall_on_later: int) -> list[Ins]:
    loads = [
        Ins(
            f"buffer_load_dwordx4 v[{8 * i}:{8 * i + 3}], v1, s[0:3], 0 offen",
            "VMEM-load",
            "k.py:40",
            stall_on_later if i else 0,
            200,
        )
        for i in range(6)
    ]
    return loads + [Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:41", 100, 110)]


def test_p2_fires_on_back_to_back_loads_that_stall_on_issue():
    findings = vmem_queue_burst(ctx_of(_burst(150)))
    assert [f.rule for f in findings] == ["P2-vmem-queue-burst"]
    assert findings[0].location == "k.py:40"
    assert len(findings[0].evidence) == 5


def test_p2_silent_when_loads_do_not_stall():
    assert vmem_queue_burst(ctx_of(_burst(0))) == []


def _lds_then_mfma(consumes: bool) -> list[Ins]:
    src = "v[20:21]" if consumes else "v[40:41]"
    return [
        Ins("ds_read_b64 v[20:21], v5", "LDS", "k.py:50", 0, 8),
        Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:50", 400, 410),
        Ins(f"v_mfma_f32_16x16x16_bf16 v[0:3], {src}, v[22:23], v[0:3]", "MFMA", "k.py:51", 0, 16),
    ]


def test_p3_fires_when_the_mfma_consumes_the_lds_read():
    findings = lds_read_before_mfma(ctx_of(_lds_then_mfma(consumes=True)))
    assert [f.location for f in findings] == ["k.py:50"]
    assert [e.instruction_index for e in findings[0].evidence] == [0, 1, 2]


def test_p3_silent_when_the_mfma_reads_other_registers():
    assert lds_read_before_mfma(ctx_of(_lds_then_mfma(consumes=False))) == []


def _scale(distance: int) -> list[Ins]:
    filler = [Ins("v_add_u32 v30, v31, v32", "VALU", "k.py:60", 0, 4) for _ in range(distance)]
    return [
        Ins("global_load_dwordx4 v[20:23], v[2:3], off", "VMEM-load", "k.py:59", 10, 30, hits=4),
        Ins("global_load_dword v9, v[2:3], off", "VMEM-load", "k.py:60", 10, 30),
        *filler,
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:61", 500, 510),
        Ins("v_mul_f32 v10, v9, v11", "VALU", "k.py:61", 0, 4),
    ]


def test_p4_fires_when_scale_is_used_right_after_its_load():
    findings = scale_load_late(ctx_of(_scale(1)))
    assert [f.location for f in findings] == ["k.py:60"]
    assert "first use 2 instruction(s) later" in findings[0].evidence[0].note


def test_p4_silent_on_the_kernels_data_stream():
    """axpy/vec_add: the single-dword loads are the data, not scale/metadata (issue 11 point 5)."""
    program = [ins for ins in _scale(1) if "dwordx4" not in ins.asm]
    assert scale_load_late(ctx_of(program)) == []


def test_p4_silent_when_scale_is_loaded_far_ahead():
    assert scale_load_late(ctx_of(_scale(20))) == []


def test_p5_explains_entry_line_and_never_ranks_it():
    program = [Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:1", 800, 810), *mfma_loop_with_load()]
    ctx = ctx_of(program, entry="k.py:1")
    findings = entry_line_artifact(ctx)
    assert [(f.location, f.ranked, f.priority) for f in findings] == [("k.py:1", False, "LOW")]
    ranked = run_all(ctx)
    assert ranked[0].location == "k.py:20" and ranked[-1].rule == "P5-entry-line-artifact"


def test_p5_silent_without_artifact_lines():
    assert entry_line_artifact(ctx_of(mfma_loop_with_load())) == []


def test_p5_silent_when_no_instruction_has_a_source_line():
    """No line tables: 'work on the ranked user lines' has no line to point at; the capture-quality
    note says it instead."""
    program = [Ins(ins.asm, ins.type, "", ins.stall, ins.latency, hits=ins.hits) for ins in mfma_loop_with_load()]
    assert [f.rule for f in entry_line_artifact(ctx_of(program, mapped_fraction=0.5))] == ["P5-entry-line-artifact"]
    assert entry_line_artifact(ctx_of(program, mapped_fraction=0.0)) == []


def _occupancy(waves: int, limiter: str | None) -> dict:
    return {
        "waves_per_simd": waves,
        "limited_by": limiter,
        "limits": {"vgpr": waves, "sgpr": 8, "lds": 5, "workgroup": 8, "hardware": 8},
        "registers": {},
        "next_level": {"waves_per_simd": waves + 1, "max_vgprs": 256},
        "sources": {},
    }


def test_occupancy_rule_names_the_knob_and_forbids_maxnreg():
    findings = occupancy_limited(ctx_of(mfma_loop_with_load(), occupancy=_occupancy(1, "vgpr")))
    assert len(findings) == 1
    text = findings[0].fix
    assert "waves_per_eu" in text and "maxnreg" in text and "4.5×" in text
    assert "max vgprs 256" in findings[0].root_cause


def test_occupancy_rule_silent_at_high_occupancy_or_no_limiter():
    assert occupancy_limited(ctx_of(mfma_loop_with_load(), occupancy=_occupancy(8, "vgpr"))) == []
    assert occupancy_limited(ctx_of(mfma_loop_with_load(), occupancy=_occupancy(2, None))) == []


def test_barrier_rule_fires_when_barriers_dominate():
    program = [Ins("s_barrier", "barrier", "k.py:70", 700, 710), *mfma_loop_with_load()]
    findings = barrier_dominated(ctx_of(program))
    assert [f.location for f in findings] == ["k.py:70"]
    assert findings[0].evidence[0].instruction_index == 0


def test_barrier_rule_silent_when_barriers_are_minor():
    program = [Ins("s_barrier", "barrier", "k.py:70", 10, 20), *mfma_loop_with_load()]
    assert barrier_dominated(ctx_of(program)) == []


def test_no_source_mapping_fires_only_when_most_code_is_unmapped():
    assert [
        f.rule for f in no_source_mapping(ctx_of(mfma_loop_with_load(), mapped_fraction=0.0))
    ] == ["SRC-no-source-mapping"]
    assert no_source_mapping(ctx_of(mfma_loop_with_load(), mapped_fraction=0.95)) == []
    # none mapped reads as such, not 'Only 0% of instructions map'
    (none,) = no_source_mapping(ctx_of(mfma_loop_with_load(), mapped_fraction=0.0))
    (some,) = no_source_mapping(ctx_of(mfma_loop_with_load(), mapped_fraction=0.3))
    assert none.title == "No instruction maps to a source line"
    assert some.title == "Only 30% of instructions map to a source line"


def _l2(**metrics) -> dict:
    return {
        "schema": "kerneltrace.l2/1",
        "kernel": "gemm_kernel",
        "aggregate": metrics,
        "ratio_of_sums": {},
        "verdicts": ["L2 hit rate low: streaming"],
    }


def _vmem_bound() -> list[Ins]:
    return [
        Ins("global_load_dwordx4 v[4:7], v[2:3], off", "VMEM-load", "k.py:80", 500, 520),
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:80", 500, 510),
    ]


def test_memory_rule_says_practical_limit_when_counters_are_clean():
    l2 = _l2(l2_hit_rate=0.017, read_32b_fraction=0.0, overfetch=1.04, fraction_of_peak=0.54)
    findings = memory_verdict(ctx_of(_vmem_bound(), l2=l2))
    assert [f.rule for f in findings] == ["MEM-at-practical-limit"]
    assert "practical limit" in findings[0].title and "not a goal" in findings[0].root_cause


def test_memory_rule_flags_scattered_access_and_stays_silent_without_l2():
    findings = memory_verdict(ctx_of(_vmem_bound(), l2=_l2(l2_hit_rate=0.3, read_32b_fraction=0.6)))
    assert [f.rule for f in findings] == ["MEM-scattered-access"]
    assert memory_verdict(ctx_of(_vmem_bound())) == []


def test_mfma_chain_fires_on_dependent_mfma_closer_than_spacing():
    mfma = pytest.importorskip("kerneltrace.isa.mfma")
    assert mfma is not None
    program = [
        Ins(
            "v_mfma_f32_32x32x8_bf16 v[0:15], v[40:41], v[42:43], v[0:15]", "MFMA", "k.py:90", 0, 32
        ),
        Ins(
            "v_mfma_f32_32x32x8_bf16 v[16:31], v[0:1], v[2:3], v[16:31]",
            "MFMA",
            "k.py:91",
            400,
            440,
        ),
    ]
    findings = mfma_dependency_chain(ctx_of(program))
    assert len(findings) == 1 and findings[0].location == "k.py:91"
    assert "needs" in findings[0].evidence[0].note


def test_mfma_chain_silent_when_mfmas_run_at_pass_latency():
    program = [Ins(MFMA, "MFMA", "k.py:90", 0, 16) for _ in range(4)] + _vmem_bound()
    assert mfma_dependency_chain(ctx_of(program)) == []


def test_priority_and_sort_order_are_stable():
    assert [priority_for_share(s) for s in (0.5, 0.05, 0.001)] == ["HIGH", "MED", "LOW"]
    assert priority_for_share(0.5, cap="MED") == "MED"
    def make(i, gain, share, ranked=True, effort="medium"):
        estimate = Gain(gain / 2, gain, "b", unit="kernel_time") if gain is not None else None
        return Finding(str(i), "r", "t", "MED", share, estimate, "", "", ranked=ranked, effort=effort)

    # one currency: the kernel-time gain (weighted by effort) orders the findings; ties keep
    # the stall share, then rule order; unranked last
    order = sort_findings([make(1, 0.01, 0.9), make(2, 0.5, 0.1, ranked=False), make(3, 0.2, 0.2),
                           make(4, 0.1, 0.3), make(5, 0.2, 0.2), make(6, None, 0.8),
                           make(7, 0.21, 0.1, effort="high")])
    assert [f.id for f in order] == ["3", "5", "7", "4", "1", "6", "2"]


def test_fallback_line_finding_covers_unexplained_top_lines():
    program = [Ins("v_exp_f32 v1, v2", "VALU", "k.py:99", 300, 400)]
    findings = run_all(ctx_of(program))
    assert [(f.rule, f.location) for f in findings] == [("LINE-hotspot", "k.py:99")]
