"""NOP-padding-note: a note (not ranked) stating the total `s_nop` hazard padding of a kernel."""

from __future__ import annotations

from plan_synthetic import Ins, hotspot_doc

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.pipeline import run_all
from kerneltrace.plan.rules.hazards import nop_padding_note, wait_states


def _program(nop_stall: int) -> list[Ins]:
    return [Ins("v_exp_f32 v1, v0", "VALU", "k.py:10", 100, 120, hits=8),
            Ins("s_nop 4", "nop", "k.py:10", nop_stall, nop_stall + 10, hits=8),
            Ins("v_mul_f32 v2, v1, v1", "VALU", "k.py:11", 900, 950, hits=8),
            Ins("s_endpgm", "other", "k.py:12", 0, 10, hits=2)]


def test_wait_states_of_an_s_nop():
    assert wait_states("s_nop 4") == 5
    assert wait_states("s_nop 0x3") == 4
    assert wait_states("s_nop") == 1


def test_notes_the_padding_when_s_nop_holds_a_tenth_of_stall():
    (note,) = nop_padding_note(PlanContext(hotspot_doc(_program(300))))  # 300 of 1300 = 23 %
    assert note.rule == "NOP-padding-note" and not note.ranked and note.priority == "LOW"
    # 8 executions × 5 wait states over 2 waves (the hits of s_endpgm)
    assert "~20 wait states per wave" in note.title and "23% of stall" in note.title
    assert note.evidence[0].asm == "s_nop 4"
    findings = run_all(PlanContext(hotspot_doc(_program(300))))
    assert [f.rule for f in findings].count("NOP-padding-note") == 1
    assert findings[-1].rule == "NOP-padding-note" or not findings[-1].ranked  # never ranked first


def test_silent_below_the_share():
    assert nop_padding_note(PlanContext(hotspot_doc(_program(50)))) == []  # 50 of 1050 < 10 %
