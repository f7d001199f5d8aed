"""Precise-math expansions (analysis/precise_math.py), the rule that ranks them, and the verdict of
straight-line vector work (plan/verdict.py `work_region`).

The sequences are the ones the compiler emits for an fp32 `a / b` and `expf(x)` without
fast-math (as in a real gfx950 FlyDSL causal_conv1d's SiLU); a plain exp2 of a scaled input and
a division whose fix-up reads no `v_div_scale` are not expansions.
"""

from __future__ import annotations

from kerneltrace.analysis.precise_math import find_expansions
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.rules.precise_math import precise_math
from kerneltrace.plan.verdict import decide, work_region
from tests.plan_synthetic import Ins, hotspot_doc

DIVISION = [
    "v_div_scale_f32 v15, s[40:41], v23, v23, v21",
    "v_rcp_f32_e32 v26, v15",
    "v_fma_f32 v24, -v15, v26, 1.0",
    "v_fmac_f32_e32 v26, v24, v26",
    "v_div_scale_f32 v24, vcc, v21, v23, v21",
    "v_mul_f32_e32 v25, v24, v26",
    "v_fma_f32 v27, -v15, v25, v24",
    "v_fmac_f32_e32 v25, v27, v26",
    "v_fma_f32 v15, -v15, v25, v24",
    "v_div_fmas_f32 v15, v15, v26, v25",
    "v_div_fixup_f32 v15, v15, v23, v21",
]
EXP = [
    "v_mul_f32_e32 v14, 0xbfb8aa3b, v20",
    "v_fma_f32 v15, v20, s29, -v14",
    "v_rndne_f32_e32 v22, v14",
    "v_fmac_f32_e32 v15, 0xb2a5705f, v20",
    "v_sub_f32_e32 v14, v14, v22",
    "v_add_f32_e32 v14, v14, v15",
    "v_exp_f32_e32 v14, v14",
    "v_cvt_i32_f32_e32 v15, v22",
    "v_cmp_nlt_f32_e32 vcc, s26, v20",
    "v_ldexp_f32 v14, v14, v15",
    "v_cndmask_b32_e32 v15, 0, v14, vcc",
]


def program(asms: list[str]) -> list[dict]:
    return [{"index": index, "asm": asm} for index, asm in enumerate(asms)]


def test_an_ieee_division_is_found_from_its_fixup():
    (found,) = find_expansions(program(DIVISION))
    assert found.kind == "division" and found.anchor == 10
    assert set(found.rows) == set(range(11))


def test_a_range_reduced_exp_is_found_with_its_rescale_and_selects():
    (found,) = find_expansions(program(EXP))
    assert found.kind == "exp" and found.anchor == 6
    assert {2, 4, 5, 6, 7, 8, 9, 10} <= set(found.rows)  # rndne, sub, add, exp, cvt, cmp, ldexp, select


def test_a_plain_exp2_and_a_lone_fixup_are_not_expansions():
    assert find_expansions(program(["v_mul_f32_e32 v1, 0x3fb8aa3b, v0",
                                    "v_exp_f32_e32 v1, v1"])) == []
    assert find_expansions(program(["v_mul_f32_e32 v2, v1, v0",
                                    "v_div_fixup_f32 v3, v2, v1, v0"])) == []


def _silu_kernel(copies: int) -> list[Ins]:
    """Straight-line code: `copies` SiLU evaluations (an exp and a division each), VALU-heavy,
    with their transcendental rows stalled as a saturated VALU pipe leaves them."""
    out = [Ins("global_load_dword v20, v[0:1], off", "VMEM-load", "k.py:1", 10, 40)]
    for _ in range(copies):
        for asm in EXP + DIVISION:
            heavy = asm.startswith(("v_exp", "v_rcp", "v_div_fmas"))
            out.append(Ins(asm, "nop" if asm.startswith("s_nop") else "VALU", "k.py:5",
                           stall=300 if heavy else 20, latency=320 if heavy else 40))
    out.append(Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:6", 30, 30))
    out.append(Ins("global_store_dword v[0:1], v15, off", "VMEM-store", "k.py:6", 5, 20))
    out.append(Ins("s_endpgm", "other", "k.py:7", 0, 10))
    return out


def test_straight_line_vector_work_is_issue_bound_and_the_expansions_lead():
    doc = hotspot_doc(_silu_kernel(4))
    region = work_region(doc)
    assert region["straight_line"] and region["split"]["loop_share"] == 1.0
    verdict = decide(doc)
    assert verdict.kind == "issue-dependency"
    assert "straight-line" in verdict.sentence
    ctx = PlanContext(doc)
    (finding,) = precise_math(ctx)
    assert "4 IEEE divisions" in finding.title and "4 range-reduced exps" in finding.title
    assert finding.estimated_gain.high >= finding.estimated_gain.low > 0.5
    cited = {e.instruction_index for e in finding.evidence}
    anchors = {e.anchor for e in find_expansions(doc["instructions"])}
    assert cited & anchors  # the expansions' last instructions are cited


def test_silent_when_the_expansions_are_a_small_part_of_the_time():
    kernel = _silu_kernel(1)
    kernel.insert(1, Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:2", 200000, 200000))
    assert precise_math(PlanContext(hotspot_doc(kernel))) == []


def test_a_kernel_whose_loop_never_ran_divides_only_its_issue_cycles():
    """A launch finding's gain assumes more workgroups shorten each wave's work; a wave that
    never entered the kernel's loop already ran the smallest unit of it (a real small-batch
    pa_mqa_logits: its KV loop has 0 hits)."""
    from kerneltrace.plan.divisible import divisible_share

    doc = hotspot_doc(_silu_kernel(1))
    loop = {"first_index": 3, "last_index": 9, "header_hits": 0, "iterates": False}
    share, why = divisible_share(doc, {"control_flow": {"loops": [loop]}}, 1, 8, 4)
    assert 0 < share < 0.5 and "no traced wave entered the kernel's loop" in why
    entered = {**loop, "header_hits": 1}
    # an MFMA-free straight chain of few loads is one latency chain either way; one that entered
    # its loop once falls back to that rule, not to the skipped-loop one
    _, why_entered = divisible_share(doc, {"control_flow": {"loops": [entered]}}, 1, 8, 4)
    assert "no traced wave entered" not in why_entered
