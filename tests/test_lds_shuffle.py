"""LDS-narrow-write-shuffle (plan/rules/lds_shuffle.py): runs of sub-dword LDS writes drained and
fenced by a barrier, the layout change a Triton convert_layout lowers to (as in a real gfx950
Triton chunk_gated_delta_rule loop: 16 `ds_write_b16`, `s_waitcnt lgkmcnt(0)`, `s_barrier`,
`ds_read_b128`)."""

from __future__ import annotations

from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.rules.lds_shuffle import lds_narrow_write_shuffle
from tests.plan_synthetic import Ins, hotspot_doc


def shuffle(writes: int, op: str = "ds_write_b16", fenced: bool = True) -> list[Ins]:
    out = [Ins(f"{op} v104, v{k} offset:{128 * k}", "LDS", "k.py:20", 900, 2000) for k in range(writes)]
    if fenced:
        out += [Ins("s_waitcnt lgkmcnt(0)", "LDS/SMEM-wait", "k.py:20", 6000, 6000),
                Ins("s_barrier", "barrier", "k.py:20", 3000, 3000)]
    out.append(Ins("ds_read_b128 v[152:155], v25", "LDS", "k.py:21", 400, 800))
    return out


def kernel(body: list[Ins]) -> list[Ins]:
    return [Ins("v_mfma_f32_32x32x16_bf16 v[0:15], v[152:155], v[166:169], v[0:15]", "MFMA", "k.py:10", 100, 2000),
            *body, Ins("s_endpgm", "other", "k.py:30", 0, 10)]


def test_a_fenced_run_of_two_byte_writes_is_a_layout_shuffle():
    (finding,) = lds_narrow_write_shuffle(PlanContext(hotspot_doc(kernel(shuffle(16) + shuffle(12)))))
    assert "2 layout changes through LDS, 28 one- or two-byte LDS writes" in finding.title
    assert finding.estimated_gain.high > finding.estimated_gain.low > 0
    cited = {e.instruction_index for e in finding.evidence}
    assert {1, 17, 18} <= cited  # the first run's first write, its drain wait and barrier


def test_short_runs_wide_writes_and_unfenced_runs_are_not():
    for body in (shuffle(4), shuffle(16, op="ds_write_b128"), shuffle(16, fenced=False)):
        assert lds_narrow_write_shuffle(PlanContext(hotspot_doc(kernel(body)))) == []
