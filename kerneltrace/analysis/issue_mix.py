"""Where a loop's time goes: latency per instruction type split into issue and stall cycles.

Latency is issue + stall. The stall column says how long an instruction waited; the rest of its
latency is the time it held its issue slot (a VALU pass, an MFMA's pass cycles). A loop whose
time is mostly VALU/SALU issue with little stall is issue-bound even when the stall ranking
is led by memory waits (review_blind.md weakness 4). Without a stall column (legacy rocprofv2)
the issue time is estimated: ISSUE_CYCLES per hit, an MFMA's pass cycles (kerneltrace/isa/mfma.py)
per hit, capped at the row's latency; everything above it is stall.
"""

from __future__ import annotations

from collections import Counter

from kerneltrace.isa import classify as isa
from kerneltrace.isa.mfma import mfma_info

ISSUE_CYCLES = 4  # cycles one wave instruction occupies its issue slot (a quarter-rate VALU pass)
# issue types whose cycles are work on the wave's own pipes (not waiting on memory or others)
WORK_TYPES = (isa.VALU, isa.SALU, isa.MFMA, isa.NOP)
VECTOR_WORK = (isa.VALU, isa.SALU)
WAIT_OR_BARRIER_TYPES = (isa.VMEM_WAIT, isa.LDS_SMEM_WAIT, isa.EXP_WAIT, isa.BARRIER)


def issue_cycles(ins: dict) -> int:
    """Cycles one row spends issuing over all its hits: ISSUE_CYCLES per hit, an MFMA's pass
    cycles per hit (the matrix pipe is occupied that long: pipe time, not a stall)."""
    info = mfma_info(ins.get("asm") or "")
    per_hit = info.cycles if info is not None else ISSUE_CYCLES
    return per_hit * int(ins.get("hits") or 0)


def estimated_stall(ins: dict) -> int:
    """Stall of one row of a capture without a stall column: latency minus its issue time
    (hits × ISSUE_CYCLES, an MFMA's pass cycles): what the row waited beyond issuing."""
    return max(0, int(ins.get("latency_cycles") or 0) - issue_cycles(ins))


def row_stall(ins: dict) -> int:
    """A row's stall: the stall column, else its latency beyond its issue cycles (legacy)."""
    stall = ins.get("stall_cycles")
    return int(stall) if stall is not None else estimated_stall(ins)


def row_issue(ins: dict) -> int:
    """A row's issue cycles: its latency beyond its stall (`row_stall`, at most the latency)."""
    latency = int(ins.get("latency_cycles") or 0)
    return latency - min(latency, row_stall(ins))


def latency_mix(instructions: list[dict]) -> dict:
    """Latency, issue and stall cycles per type over these rows, and their shares of the rows'
    latency: {"latency_cycles", "by_type": {type: {latency, issue, stall, rows, hits}},
    "shares": {type: latency share}, "work_share", "vector_work_share", "wait_share"}."""
    by_type: dict[str, dict[str, int]] = {}
    for ins in instructions:
        if not ins.get("hits"):
            continue
        kind = ins.get("type") or isa.OTHER
        latency = int(ins.get("latency_cycles") or 0)
        issue = row_issue(ins)
        entry = by_type.setdefault(kind, {"latency": 0, "issue": 0, "stall": 0, "rows": 0,
                                          "hits": 0})
        entry["latency"] += latency
        entry["stall"] += latency - issue
        entry["issue"] += issue
        entry["rows"] += 1
        entry["hits"] += int(ins.get("hits") or 0)
    total = sum(entry["latency"] for entry in by_type.values())
    shares = {kind: entry["latency"] / total for kind, entry in by_type.items()} if total else {}

    def part(types: tuple[str, ...]) -> float:
        return round(sum(shares.get(kind, 0.0) for kind in types), 4)

    return {"latency_cycles": total, "by_type": by_type,
            "shares": {kind: round(value, 4) for kind, value in shares.items()},
            "work_share": part(WORK_TYPES), "vector_work_share": part(VECTOR_WORK),
            "wait_share": part(WAIT_OR_BARRIER_TYPES)}


def loop_rows(instructions: list[dict], loop: dict) -> list[dict]:
    """The rows of `loop` (its first/last code.json index), in index order."""
    return sorted((ins for ins in instructions
                   if loop["first_index"] <= ins["index"] <= loop["last_index"]),
                  key=lambda ins: ins["index"])


def opcode_counts(rows: list[dict], *types: str) -> Counter[str]:
    """Executed rows per opcode among these types (the static count of one loop body)."""
    return Counter(isa.opcode(ins.get("asm") or "") for ins in rows
                   if ins.get("hits") and ins.get("type") in types)


def dependent_issue(rows: list[dict], min_per_hit: float) -> list[dict]:
    """The VALU rows of a loop that wait at issue on an operand (stall ≥ `min_per_hit` cycles
    per hit: a consumer issued right after the MFMA or VALU producing its input), by stall."""
    found = [ins for ins in rows if ins.get("type") == isa.VALU and ins.get("hits")
             and row_stall(ins) >= min_per_hit * int(ins["hits"])]
    return sorted(found, key=lambda ins: (-row_stall(ins), ins["index"]))


def producer(rows: list[dict], consumer: dict, window: int = 24) -> dict | None:
    """The nearest earlier row of the loop (within `window` rows) writing a register
    `consumer` reads: what its dependent issue waits on (an MFMA result, a VALU chain)."""
    from kerneltrace.isa.registers import reads, writes

    wanted = reads(consumer.get("asm") or "")
    if not wanted:
        return None
    position = next((i for i, ins in enumerate(rows) if ins["index"] == consumer["index"]), None)
    if position is None:
        return None
    for ins in reversed(rows[max(0, position - window):position]):
        if writes(ins.get("asm") or "") & wanted:
            return ins
    return None
