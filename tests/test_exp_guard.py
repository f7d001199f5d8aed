"""EXP-denormal-guard: the exp2 denormal range guard found by def-use, and the plan finding it makes."""

from __future__ import annotations

import pytest
from plan_synthetic import Ins, hotspot_doc

from kerneltrace.analysis.exp_guard import find_exp_guards
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.pipeline import run_all
from kerneltrace.plan.rules.exp_guard import exp_denormal_guard
from kerneltrace.plan.rules.hazards import nop_hazards

# The lowering as a real gfx942 flash-attention kernel has it (rows 497–504 of its code.json).
GUARDED = [
    "v_mul_f32_e32 v172, 0x3e0293ee, v172",
    "v_cmp_gt_f32_e32 vcc, s23, v172",
    "s_nop 1",
    "v_cndmask_b32_e32 v174, 0, v233, vcc",
    "v_add_f32_e32 v172, v172, v174",
    "v_exp_f32_e32 v172, v172",
    "v_cndmask_b32_e32 v174, 0, v234, vcc",
    "v_ldexp_f32 v172, v172, v174",
]


def _program(asms: list[str]) -> list[dict]:
    return [{"index": index, "asm": asm} for index, asm in enumerate(asms)]


def test_finds_the_guard_rows_of_one_exp():
    (guard,) = find_exp_guards(_program(GUARDED))
    assert guard.exp_index == 5 and guard.compare_index == 1
    assert guard.guard_indices == (1, 2, 3, 4, 6, 7)  # compare, s_nop, bias, add, scale, rescale


def test_a_plain_exp_is_not_guarded():
    plain = ["v_sub_f32_e32 v36, v57, v39", "v_mul_f32_e32 v36, 0x3fb8aa3b, v36",
             "v_exp_f32_e32 v38, v36", "v_add_f32_e32 v40, v40, v38"]
    assert find_exp_guards(_program(plain)) == []


def test_interleaved_guards_with_an_sgpr_mask():
    asms = [
        "v_cmp_gt_f32_e32 vcc, s23, v81",
        "s_nop 1",
        "v_cndmask_b32_e32 v174, 0, v233, vcc",
        "v_add_f32_e32 v81, v81, v174",
        "v_exp_f32_e32 v81, v81",
        "v_cmp_gt_f32_e64 s[6:7], s23, v80",
        "s_nop 1",
        "v_cndmask_b32_e64 v175, 0, v233, s[6:7]",
        "v_add_f32_e32 v80, v80, v175",
        "v_exp_f32_e32 v80, v80",
        "v_cndmask_b32_e32 v174, 0, v234, vcc",
        "v_ldexp_f32 v81, v81, v174",
        "v_cndmask_b32_e64 v175, 0, v234, s[6:7]",
        "v_ldexp_f32 v80, v80, v175",
    ]
    guards = find_exp_guards(_program(asms))
    assert [(g.exp_index, g.compare_index) for g in guards] == [(4, 0), (9, 5)]
    assert guards[1].guard_indices == (5, 6, 7, 8, 12, 13)


def test_a_mask_rewritten_before_the_rescale_is_not_a_guard():
    asms = GUARDED[:6] + ["v_cmp_lt_f32_e32 vcc, 0, v9"] + GUARDED[6:]
    assert find_exp_guards(_program(asms)) == []


def test_a_compare_of_another_value_is_not_a_guard():
    asms = [a.replace("vcc, s23, v172", "vcc, s23, v9") for a in GUARDED]
    assert find_exp_guards(_program(asms)) == []


def test_multiplying_scale_variant():
    asms = GUARDED[:-1] + ["v_mul_f32_e32 v172, v172, v174"]
    (guard,) = find_exp_guards(_program(asms))
    assert guard.guard_indices[-1] == 7


def _loop(guard_cost: int) -> list[Ins]:
    """Eight executions of a guarded exp inside other work; guard rows cost `guard_cost` each."""
    types = {"s_nop": "nop", "v_": "VALU"}
    program = []
    for index, asm in enumerate(GUARDED):
        kind = next(t for prefix, t in types.items() if asm.startswith(prefix))
        cost = 40 if index in (0, 5) else guard_cost
        program.append(Ins(asm, kind, "k.py:10", stall=cost // 2, latency=cost, hits=8))
    program.append(Ins("v_mul_f32 v2, v172, v172", "VALU", "k.py:11", 200, 1800, hits=8))
    program.append(Ins("s_endpgm", "other", "k.py:12", 0, 10, hits=2))
    return program


def test_the_rule_claims_the_guard_share_of_the_waves_time():
    doc = hotspot_doc(_loop(guard_cost=100))
    (finding,) = exp_denormal_guard(PlanContext(doc))
    total = doc["costs"]["total_cycles"] if doc.get("costs") else doc["totals"]["latency_cycles"]
    share = 6 * 100 / total
    assert finding.rule == "EXP-denormal-guard"
    assert finding.estimated_gain.unit == "wave_time"
    assert finding.estimated_gain.high == pytest.approx(round(share * 0.8, 4))
    assert finding.estimated_gain.low == pytest.approx(round(share * 0.3, 4))
    assert "1 `v_exp_f32`" in finding.title and "__builtin_amdgcn_exp2f" in finding.fix
    assert {e.instruction_index for e in finding.evidence} == {1, 5, 7}


def test_silent_when_the_guard_is_cheap():
    assert exp_denormal_guard(PlanContext(hotspot_doc(_loop(guard_cost=1)))) == []


def test_guard_nops_are_not_a_hazard_finding():
    doc = hotspot_doc(_loop(guard_cost=100))
    assert nop_hazards(PlanContext(doc)) == []  # its only s_nop belongs to the guard
    findings = run_all(PlanContext(doc))
    assert findings[0].rule == "EXP-denormal-guard"


@pytest.mark.shared
def test_real_captures_guarded_and_fast_exps(captures):
    """flash attention (gfx942) wraps all 66 exps; mla_decode's 66 exps are the bare hardware exp."""
    from kerneltrace.readers.codejson import read_code_json

    base = captures / "flydsl-kernel-profiling-lib/examples"
    cases = {"flash_attn_func/att_viewer/big/ui_output_agent_38430_dispatch_44": 66,
             "mla_decode/att_viewer/big/ui_output_agent_41578_dispatch_58": 0}
    for folder, guarded in cases.items():
        table = read_code_json(base / folder / "code.json")
        program = [{"index": row.index, "asm": row.asm} for row in table.rows]
        exps = sum(1 for ins in program if ins["asm"].startswith("v_exp_f32"))
        assert exps == 66
        assert len(find_exp_guards(program)) == guarded, folder
