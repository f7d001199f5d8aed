"""Cost = latency + idle from code.json: per type, per pipe issue share, and the `s_endpgm` drain.

A stall ranking misses what a wave spends outside stalls: idle gaps (nothing issued while the
wave waits for an earlier instruction) and the end-of-wave drain, which the decoder charges to
`s_endpgm` (outstanding stores and memory writes retiring before the wave slot frees). Following
the public definition in rocm-systems' thread-trace skill (`att_mine.read_stats`), an
instruction's **cost** is its latency (which already contains stall) plus its idle cycles.
`issue` cycles are latency minus stall: the cycles the instruction's pipe worked for it.
Legacy rocprofv2 traces have no idle or stall column: cost is then latency alone (`basis` says so).
"""

from __future__ import annotations

from collections.abc import Iterable

from kerneltrace.isa import classify as isa

PIPE_TYPES: dict[str, tuple[str, ...]] = {
    "MFMA": (isa.MFMA,),
    "VALU": (isa.VALU,),
    "VMEM": (isa.VMEM_LOAD, isa.VMEM_STORE),
    "LDS": (isa.LDS,),
    "SALU": (isa.SALU,),
    "SMEM": (isa.SMEM,),
}


def _cost(ins: dict) -> int:
    return int(ins.get("latency_cycles") or 0) + int(ins.get("idle_cycles") or 0)


def cost_summary(instructions: Iterable[dict], waves: int | None = None) -> dict:
    """The `costs` object of the hotspot document from its `instructions` list."""
    rows = list(instructions)
    has_idle = any(ins.get("idle_cycles") is not None for ins in rows)
    total = sum(_cost(ins) for ins in rows)
    by_type: dict[str, list[int]] = {}
    for ins in rows:
        entry = by_type.setdefault(ins.get("type") or isa.OTHER, [0, 0])
        entry[0] += _cost(ins)
        stall = ins.get("stall_cycles")
        entry[1] += max(int(ins.get("latency_cycles") or 0) - int(stall or 0), 0)
    drain_rows = [ins for ins in rows if isa.opcode(ins.get("asm") or "") == "s_endpgm"]
    drain = sum(_cost(ins) for ins in drain_rows)

    def share(part: int) -> float | None:
        return round(part / total, 4) if total else None

    issue = {
        pipe: share(sum(by_type.get(kind, [0, 0])[1] for kind in kinds))
        for pipe, kinds in PIPE_TYPES.items()
    }
    top = sorted(rows, key=lambda ins: -_cost(ins))[:10]
    return {
        "basis": "latency + idle" if has_idle else "latency (no idle column in this format)",
        "total_cycles": total,
        "idle_cycles": sum(int(ins.get("idle_cycles") or 0) for ins in rows) if has_idle else None,
        "per_wave": round(total / waves, 1) if waves else None,
        "endpgm_drain": {
            "cycles": drain,
            "share": share(drain),
            "instructions": [ins["index"] for ins in drain_rows],
        },
        "by_type": [
            {"type": kind, "cost_cycles": cost, "share": share(cost), "issue_cycles": issued}
            for kind, (cost, issued) in sorted(by_type.items(), key=lambda item: -item[1][0])
            if cost
        ],
        "issue_share": issue,
        "top_instructions": [
            {"index": ins["index"], "asm": ins.get("asm", ""), "cost_cycles": _cost(ins),
             "share": share(_cost(ins))}
            for ins in top if _cost(ins)
        ],
    }
