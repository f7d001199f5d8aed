"""Vector-load round trips in series (analysis/load_trips.py) and the rule that ranks them.

Straight-line programs in the shapes real kernels have: an unrolled per-token body that loads,
waits and computes one token at a time (a FlyDSL causal_conv1d), loads issued together and
drained by a counted staircase (an aiter GEMM epilogue), an index load whose value addresses
the next load (a gather: not hoistable), and a GEMM's unrolled stages with MFMAs between them.
"""

from __future__ import annotations

from kerneltrace.analysis.load_trips import load_trips
from kerneltrace.analysis.structure import structure_of
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.rules.load_trips import serial_load_round_trips
from tests.plan_synthetic import Ins, hotspot_doc


def per_token(tokens: int, wait_stall: int = 1000, between: list[Ins] | None = None) -> list[Ins]:
    out = [Ins("s_load_dwordx4 s[4:7], s[0:1], 0x0", "SMEM", "k.py:1", 10, 20),
           Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:1", 50, 50)]
    for token in range(tokens):
        out += [Ins(f"global_load_ushort v{10 + token}, v[2:3], off offset:{128 * token}",
                    "VMEM-load", "k.py:5", 4, 8),
                Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:5", wait_stall, wait_stall),
                Ins(f"v_fmac_f32_e32 v40, v{10 + token}, v41", "VALU", "k.py:6", 4, 8),
                *(between or [])]
    out += [Ins("global_store_dword v[2:3], v40, off", "VMEM-store", "k.py:7", 4, 8),
            Ins("s_endpgm", "other", "k.py:8", 0, 10)]
    return out


def trips_of(program: list[Ins]) -> dict | None:
    return structure_of(hotspot_doc(program))["load_trips"]


def test_a_load_per_token_waited_before_the_next_is_a_series():
    trips = trips_of(per_token(6))
    assert trips["round_trips"] == 6 and trips["serialized_round_trips"] == 5
    assert [t["serialized"] for t in trips["trips"]] == [False] + [True] * 5
    (finding,) = serial_load_round_trips(PlanContext(hotspot_doc(per_token(6))))
    assert finding.rule == "MEM-serial-load-round-trips"
    assert "5 vector-load round trips in series" in finding.title
    assert finding.estimated_gain.low > 0.2
    assert {e.instruction_index for e in finding.evidence} >= {5, 6}  # the first late load, its wait


def test_loads_issued_together_and_drained_by_a_staircase_are_not_a_series():
    program = [Ins(f"global_load_dword v{10 + k}, v[2:3], off offset:{4 * k}", "VMEM-load", "k.py:5", 4, 8)
               for k in range(4)]
    program += [ins for k in range(4) for ins in (
        Ins(f"s_waitcnt vmcnt({3 - k})", "VMEM-wait", "k.py:5", 800, 800),
        Ins(f"v_fmac_f32_e32 v40, v{10 + k}, v41", "VALU", "k.py:6", 4, 8))]
    program.append(Ins("s_endpgm", "other", "k.py:8", 0, 10))
    trips = trips_of(program)
    assert trips["serialized_round_trips"] == 0
    assert serial_load_round_trips(PlanContext(hotspot_doc(program))) == []


def test_a_load_addressed_by_loaded_data_is_not_hoistable():
    program = [Ins("global_load_dword v10, v[2:3], off", "VMEM-load", "k.py:5", 4, 8),
               Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:5", 900, 900),
               Ins("v_lshlrev_b32_e32 v11, 2, v10", "VALU", "k.py:6", 4, 8),  # index → offset
               Ins("global_load_dword v12, v11, s[4:5]", "VMEM-load", "k.py:7", 4, 8),
               Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:7", 900, 900),
               Ins("s_endpgm", "other", "k.py:8", 0, 10)]
    assert trips_of(program)["serialized_round_trips"] == 0


def test_matrix_stages_between_the_trips_are_left_to_the_prefetch_rules():
    mfma = Ins("v_mfma_f32_32x32x8_f16 a[0:15], v[20:21], v[22:23], a[0:15]", "MFMA", "k.py:9", 8, 64)
    program = per_token(6, between=[mfma])
    assert trips_of(program)["serialized_round_trips"] == 5
    assert serial_load_round_trips(PlanContext(hotspot_doc(program))) == []


def test_cheap_trips_are_silent():
    assert serial_load_round_trips(PlanContext(hotspot_doc(per_token(3, wait_stall=2)))) == []


def test_fewer_than_two_trips_are_none():
    from kerneltrace.analysis.control_flow import control_flow, rows_from_instructions
    from kerneltrace.analysis.drains import drain_waits

    doc = hotspot_doc(per_token(1))
    rows = rows_from_instructions(doc["instructions"])
    flow = control_flow(rows, {}, "latency+idle")
    assert load_trips(rows, drain_waits(rows, flow), flow, 1000) is None
