"""Instruction regions: the instruction stream cut at branch targets and after waits, ranked.

When source lines fail — most stall on the kernel-entry/decorator line or `<unmapped>`, or no line
tables at all — the plan still has the instruction stream. A region is a run of consecutive
instructions that starts at a branch target (a basic-block leader) or right after an
`s_waitcnt`/`s_barrier`, and ends with the next wait, barrier or branch: the work issued between
two synchronisation points, plus the wait that closes it. Each region is named by its row range,
its dominant opcodes and the nearest mapped source line, so a reader can find it in the ISA.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass

from kerneltrace.analysis.loops import branch_target
from kerneltrace.isa import classify as isa
from kerneltrace.sourceloc import innermost_location

CLOSERS = frozenset({isa.VMEM_WAIT, isa.LDS_SMEM_WAIT, isa.EXP_WAIT, isa.BARRIER, isa.BRANCH})


@dataclass(frozen=True)
class Region:
    """A run of instructions between synchronisation points, with its summed cost."""

    first_index: int
    last_index: int
    first_pc: int | None
    last_pc: int | None
    metric_cycles: int  # stall (latency when the format has no stall)
    latency_cycles: int
    opcodes: tuple[str, ...]  # dominant opcodes by metric, at most 3
    source: str | None  # nearest mapped, non-artifact source line
    instructions: tuple[int, ...]

    @property
    def name(self) -> str:
        where = f" near {self.source}" if self.source else ""
        return f"rows {self.first_index}–{self.last_index} ({', '.join(self.opcodes)}){where}"


def _metric(ins: dict, by: str) -> int:
    value = ins.get(by)
    return int(value if value is not None else 0)


def split_regions(program: list[dict], artifacts: set[str], by: str = "stall_cycles",
                  *, at_waits: bool = True) -> list[Region]:
    """Regions of `program` (hotspot `instructions` in index order), ranked by `by` descending;
    `at_waits=False` cuts only at basic-block boundaries (branch targets and branches)."""
    targets = set()
    for ins in program:
        if ins.get("pc") is not None and isa.classify(ins.get("asm") or "") == isa.BRANCH:
            target = branch_target(ins["pc"], ins.get("asm") or "")
            if target is not None:
                targets.add(target)
    regions: list[list[dict]] = []
    current: list[dict] = []
    for ins in program:
        if current and ins.get("pc") in targets:
            regions.append(current)
            current = []
        current.append(ins)
        if ins.get("type") in (CLOSERS if at_waits else (isa.BRANCH,)):
            regions.append(current)
            current = []
    if current:
        regions.append(current)
    mapped = [(i, ins) for i, ins in enumerate(program)
              if ins.get("source") and _line(ins) not in artifacts]
    mapped_positions = [i for i, _ in mapped]
    position = {ins["index"]: i for i, ins in enumerate(program)}
    out = []
    for block in regions:
        metric = sum(_metric(ins, by) for ins in block)
        weights: Counter[str] = Counter()
        for ins in block:
            weights[isa.opcode(ins.get("asm") or "")] += _metric(ins, by) or 0
        if not any(weights.values()):
            weights = Counter(isa.opcode(ins.get("asm") or "") for ins in block)
        opcodes = tuple(op for op, _ in weights.most_common(3))
        out.append(Region(
            first_index=block[0]["index"], last_index=block[-1]["index"],
            first_pc=block[0].get("pc"), last_pc=block[-1].get("pc"),
            metric_cycles=metric,
            latency_cycles=sum(int(ins.get("latency_cycles") or 0) for ins in block),
            opcodes=opcodes,
            source=_nearest(mapped, mapped_positions, position[block[0]["index"]], position[block[-1]["index"]]),
            instructions=tuple(ins["index"] for ins in block),
        ))
    return sorted(out, key=lambda r: (-r.metric_cycles, r.first_index))


def _line(ins: dict) -> str:
    """Innermost `path:line` of an instruction's Source (the line hotspots aggregate by)."""
    return innermost_location(ins.get("source") or "") or ""


def _nearest(mapped: list[tuple[int, dict]], positions: list[int], first: int, last: int) -> str | None:
    """The mapped line inside the region (most instructions), else the closest one outside (the
    earlier on a tie). `positions`: the positions of `mapped`, ascending (bisected, so a kernel
    of thousands of blocks is not scanned once per block)."""
    lo, hi = bisect_left(positions, first), bisect_right(positions, last)
    inside = Counter(_line(ins) for _, ins in mapped[lo:hi])
    if inside:
        return inside.most_common(1)[0][0]
    before = mapped[lo - 1] if lo > 0 else None
    after = mapped[hi] if hi < len(mapped) else None
    if before is None or (after is not None and after[0] - last < first - before[0]):
        return _line(after[1]) if after is not None else None
    return _line(before[1])
