"""Dependency-aware advice (issue 21.7): each kind of fix that reorders instructions, on a
synthetic case where a register dependency forbids it and one where it is allowed."""

from __future__ import annotations

from plan_synthetic import Ins, hotspot_doc

from kerneltrace.analysis.reorder import move_above, wait_room
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.dependencies import check_loads, check_nops, check_waits
from kerneltrace.plan.findings import make_finding
from kerneltrace.plan.pipeline import run_all


def _ctx(program: list[Ins]) -> PlanContext:
    return PlanContext(hotspot_doc(program))


def _finding(ctx: PlanContext, rule: str, rows: list[int]):
    return make_finding(rule, 0.2, title="t", estimated_gain=None, root_cause="", fix="Fix.",
                        evidence=[ctx.evidence(ctx.instructions[i]) for i in rows])


def _program(*rows: tuple) -> list[Ins]:
    """Ins from (asm, type[, stall, latency]) rows."""
    return [Ins(asm, kind, stall=extra[0] if extra else 0, latency=extra[1] if len(extra) > 1 else 0)
            for asm, kind, *extra in rows]


def _setup(offset: str) -> list[Ins]:
    kernarg, wait = (isa.SMEM, 0, 400), (isa.LDS_SMEM_WAIT, 900)
    return _program(("s_load_dwordx4 s[4:7], s[0:1], 0x0", *kernarg), ("s_waitcnt lgkmcnt(0)", *wait),
                    ("s_add_u32 s10, s4, 16", isa.SALU), (f"s_load_dword s8, s[0:1], {offset}", *kernarg),
                    ("s_waitcnt lgkmcnt(0)", *wait), ("v_mov_b32_e32 v1, s8", isa.VALU),
                    ("v_add_u32_e32 v2, s10, v1", isa.VALU), ("s_endpgm", isa.OTHER))


def _setup_finding(offset: str):
    findings = run_all(_ctx(_setup(offset)))
    return next(f for f in findings if f.rule == "SETUP-serial-kernarg-round-trips")


def test_setup_hoist_forbidden_by_an_offset_computed_after_the_first_wait():
    finding = _setup_finding("s10")  # the late load's offset comes from the first batch
    (check,) = [d for d in finding.dependencies if d["check"] == "hoist"]
    assert check["moved"] == 3 and not check["legal"]
    assert check["blockers"][0] == {"index": 2, "registers": ["s10"], "kind": "true"}
    assert finding.fix.startswith("Dependency check: #3 cannot be joined to the first batch")


def test_setup_hoist_allowed_from_the_kernarg_pointer():
    finding = _setup_finding("0x10")
    (check,) = [d for d in finding.dependencies if d["check"] == "hoist"]
    assert check["legal"] and check["blockers"] == []
    assert "#3 can be joined to the first batch" in finding.fix
    assert not finding.fix.startswith("Dependency check")


def _loads(address: str) -> list[Ins]:
    load = (isa.VMEM_LOAD, 0, 500)
    return _program(("global_load_dwordx2 v[2:3], v[0:1], off", *load),
                    ("s_waitcnt vmcnt(0)", isa.VMEM_WAIT, 600), ("v_mul_f32_e32 v20, v21, v22", isa.VALU),
                    (f"global_load_dwordx4 v[8:11], {address}, off", *load),
                    ("s_waitcnt vmcnt(0)", isa.VMEM_WAIT, 700), ("v_add_f32_e32 v12, v8, v9", isa.VALU),
                    ("s_endpgm", isa.OTHER))


def test_prefetch_forbidden_by_a_pointer_chase():
    ctx = _ctx(_loads("v[2:3]"))  # the address is the first load's result
    finding = _finding(ctx, "P1-loads-in-mfma-loop", [3])
    check_loads(ctx, finding)
    assert not finding.dependencies[0]["legal"]
    assert "a pointer chase" in finding.fix and finding.fix.startswith("Dependency check: #3 cannot")


def test_prefetch_allowed_with_an_independent_address():
    ctx = _ctx(_loads("v[4:5]"))
    finding = _finding(ctx, "P4-scale-load-late", [3])
    check_loads(ctx, finding)
    assert finding.dependencies[0]["legal"]
    assert "#3 can be issued earlier" in finding.fix


def test_lds_read_hoist_needs_a_second_buffer_when_its_registers_are_still_read():
    program = [Ins("v_mfma_f32_16x16x16_bf16 v[0:3], v[8:9], v[10:11], v[0:3]", isa.MFMA),
               Ins("ds_read_b64 v[8:9], v30", isa.LDS, latency=100),
               Ins("s_waitcnt lgkmcnt(0)", isa.LDS_SMEM_WAIT, stall=200),
               Ins("v_mfma_f32_16x16x16_bf16 v[0:3], v[8:9], v[10:11], v[0:3]", isa.MFMA)]
    ctx = _ctx(program)
    finding = _finding(ctx, "P3-lds-read-before-mfma", [1])
    check_loads(ctx, finding)
    (check,) = finding.dependencies
    assert check["legal"] and check["blockers"][0]["kind"] == "false"
    assert "with another register" in finding.fix


def test_wait_cannot_move_later_when_its_consumer_follows():
    ctx = _ctx(_loads("v[4:5]"))
    finding = _finding(ctx, "LINE-hotspot", [4])
    check_waits(ctx, finding)
    assert finding.dependencies == [{"check": "wait-later", "wait": 4, "room": 0}]
    assert "#4 cannot move later" in finding.fix


def test_wait_can_move_later_over_independent_work():
    program = _loads("v[4:5]")
    program.insert(5, Ins("v_mul_f32_e32 v23, v24, v25", isa.VALU))  # independent of v[8:11]
    ctx = _ctx(program)
    finding = _finding(ctx, "LINE-hotspot", [4])
    check_waits(ctx, finding)
    assert finding.dependencies == [{"check": "wait-later", "wait": 4, "room": 1}]
    assert "cannot move later" not in finding.fix


def _argmax(independent: bool) -> list[Ins]:
    body = []
    for k in range(3):
        body += [Ins(f"v_cmp_gt_f32_e32 vcc, v{10 + k}, v1", isa.VALU),
                 Ins("s_nop 1", isa.NOP, stall=40),
                 Ins(f"v_cndmask_b32_e32 v1, v1, v{10 + k}, vcc", isa.VALU)]
        if independent:
            body.append(Ins(f"v_mul_f32_e32 v{40 + k}, v{50 + k}, v{60 + k}", isa.VALU))
    return body


def test_nop_interleave_forbidden_in_a_serial_select_chain():
    ctx = _ctx(_argmax(independent=False))
    finding = _finding(ctx, "NOP-hazard-stall", [1, 4, 7])
    check_nops(ctx, finding)
    assert all(d["independent"] == [] for d in finding.dependencies)
    assert "tree reduction" in finding.fix and finding.fix.startswith("Dependency check")


def test_nop_interleave_allowed_with_independent_work_nearby():
    ctx = _ctx(_argmax(independent=True))
    finding = _finding(ctx, "NOP-hazard-stall", [1, 5, 9])
    check_nops(ctx, finding)
    assert all(d["independent"] for d in finding.dependencies)
    assert finding.fix == "Fix."


def test_move_above_classifies_true_and_false_dependencies():
    rows = [(0, "v_add_u32_e32 v3, v1, v2"), (1, "v_mov_b32_e32 v9, v8"),
            (2, "global_load_dword v8, v[3:4], off")]
    move = move_above(rows, 2, 0)
    assert [(b.index, b.kind) for b in move.blockers] == [(0, "true"), (1, "false")]
    assert not move.legal and move_above(rows, 2, 1).legal
    assert wait_room([(0, "s_waitcnt vmcnt(0)"), (1, "v_add_f32_e32 v1, v8, v2")], 0, []) is None


def test_select_chain_advice_covers_every_round_of_an_unrolled_top_k():
    from types import SimpleNamespace

    from kerneltrace.plan.rules.hazards import _in_select_chain

    # six top-k rounds, one chain each: no single chain holds half the s_nops, together all
    rounds = [{"first": 100 * k, "last": 100 * k + 40, "length": 20} for k in range(6)]
    ctx = SimpleNamespace(structure={"select_chains": rounds})
    nops = [100 * k + 5 * j for k in range(6) for j in range(1, 8)]
    chain, count = _in_select_chain(ctx, nops)
    assert count == 6 and chain in rounds
    # s_nops mostly outside any chain: no chain advice
    assert _in_select_chain(ctx, nops[:5] + list(range(1000, 1100, 2))) is None
