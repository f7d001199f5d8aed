"""A persistent kernel's per-tile code (analysis/tile_loop.py, plan/rules/tile_loop.py): the outer
tile loop's iterations outside the hot K loop, as in a real hipBLASLt-style persistent GEMM at 98 %
MFMA busy whose engineers lead with the unoverlapped epilogue (SYNTHETIC numbers)."""

from __future__ import annotations

from kerneltrace.analysis.tile_loop import tile_loop
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.rules.tile_loop import TileLoopThresholds, persist_per_tile_overhead
from tests.plan_synthetic import Ins, hotspot_doc

MFMA = "v_mfma_f32_16x16x32_bf16 a[0:3], v[0:3], v[4:7], a[0:3]"


def program() -> list[Ins]:
    return [
        Ins("s_mov_b32 s56, 0", "SALU", hits=16),  # 0: tile loop header
        *(Ins(MFMA, "MFMA", stall=8, latency=16, hits=512) for _ in range(8)),  # 1-8
        Ins("s_cbranch_scc1 65527", "branch", hits=512),  # 9: K-loop back edge
        Ins("v_cvt_pk_bf16_f32 v49, v50, v51", "VALU", latency=400, hits=16),  # 10: epilogue
        Ins("buffer_store_dwordx4 v[48:51], v35, s[12:15], 0 offen", "VMEM-store", stall=300,
            latency=900, hits=16),  # 11
        Ins("s_cmp_ge_u32 s56, s57", "SALU", latency=200, hits=16),  # 12
        Ins("s_cbranch_scc1 7", "branch", latency=40, hits=16),  # 13: another tile?
        Ins("s_branch 65520", "branch", hits=12),  # 14: tile-loop back edge
        Ins("s_endpgm", "other", hits=4),  # 15
    ]


def flow(tiles: float = 4.0, trips: float = 32.0, outer_share: float = 0.95) -> dict:
    hot = {"first_index": 1, "last_index": 9, "parent": 0, "iterations_per_entry": trips,
           "time_share": 0.8}
    outer = {"first_index": 0, "last_index": 14, "parent": None, "iterations_per_wave": tiles,
             "header_hits": 16, "time_share": outer_share}
    return {"hot_loop": hot, "loops": [outer, hot]}


def context(**kwargs) -> PlanContext:
    doc = hotspot_doc(program())
    doc["structure"] = {"control_flow": flow(**kwargs)}
    return PlanContext(doc)


def test_the_tile_loop_and_its_continue_check():
    rows = [{"index": i, "asm": ins.asm, "hits": ins.hits} for i, ins in enumerate(program())]
    found = tile_loop(flow(), rows, min_tiles=2, min_inner_trips=8)
    assert (found.outer_first, found.outer_last, found.inner_first, found.inner_last) == (0, 14, 1, 9)
    assert found.per_tile_share == 0.15 and found.tiles_per_wave == 4.0
    assert found.continue_check == (12, 13)


def test_the_finding_cites_the_epilogue_the_store_and_the_check():
    (finding,) = persist_per_tile_overhead(context())
    assert [e.instruction_index for e in finding.evidence] == [10, 11, 12, 13]
    low, high = TileLoopThresholds().overlappable
    assert (finding.estimated_gain.low, finding.estimated_gain.high) == (round(0.15 * low, 4),
                                                                         round(0.15 * high, 4))
    assert "4 tiles per wave" in finding.title and "15%" in finding.title


def test_no_finding_without_a_persistent_tile_loop():
    assert persist_per_tile_overhead(context(tiles=1.0)) == []  # one tile per wave
    assert persist_per_tile_overhead(context(trips=4.0)) == []  # a short inner step, not the K loop
    assert persist_per_tile_overhead(context(outer_share=0.82)) == []  # 2 % per-tile code
