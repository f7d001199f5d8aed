"""Control flow from code.json alone: basic blocks, loops with iterations and time shares, setup share.

Loops come from backward immediate branches (`analysis.loops.find_loops`); code.json hit counts
(summed over the traced waves) say how often each header ran, so loops exist without wave files.
Captures without a Vaddr column (rocprofv2 legacy) get addresses rebuilt from encoding sizes
(`isa.encoding`), flagged `addresses: "estimated"`. Wave files refine the loop bounds (observed
back edges, `observed_headers`) but never decide whether a loop exists.

Time shares use an instruction's latency plus the idle cycles before it (Latency includes the
stall; Idle is the wait for the wave to be picked): their sum over rows is the traced waves'
lifetime that code.json sees. PC-sampling captures have no cycles: their samples stand in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

from kerneltrace.analysis.loops import BranchRow, StaticLoop, branch_target, find_loops
from kerneltrace.isa.classify import opcode
from kerneltrace.isa.encoding import encoded_size
from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds

# Judgement thresholds: the `structure` concern of the thresholds table (kerneltrace/thresholds.py),
# given as `limits` (the values in use: `hotspot_analyzer.py --thresholds` may override them).


@dataclass(frozen=True)
class FlowRow:
    """The fields of one instruction row control flow needs (from code.json or the hotspot doc)."""

    index: int
    asm: str
    hits: int
    pc: int | None
    codeobj: int | None
    time: int  # latency + idle (or PC samples): this row's part of the waves' lifetime
    stall: int | None


@dataclass(frozen=True)
class LoopFacts:
    """One loop with what code.json says about it."""

    first_index: int
    last_index: int
    depth: int
    parent: int | None
    header_hits: int
    entries: int | None  # times the loop was entered (pre-header hits, else traced waves)
    iterations_per_entry: float | None
    iterations_per_wave: float | None
    time_share: float  # of all rows' time (the waves' lifetime)
    stall_share: float | None
    iterates: bool  # iterations per entry reach `structure.min_iterations`

    def contains(self, index: int) -> bool:
        return self.first_index <= index <= self.last_index


@dataclass(frozen=True)
class ControlFlow:
    """Loops, blocks and the once-per-wave share of one kernel's instruction table."""

    addresses: str  # "vaddr" | "estimated" | "none"
    waves: int | None  # traced waves (hits of the entry instruction)
    blocks: int
    loops: tuple[LoopFacts, ...]
    hot_loop: LoopFacts | None
    once_per_wave_share: float  # time of rows run at most once per wave outside iterating loops
    prologue_share: float  # that part before the hot loop's header (all of it without a hot loop)
    time_basis: str  # "latency+idle" | "pc_samples"

    def loop_of(self, index: int) -> LoopFacts | None:
        """The innermost iterating loop holding row `index`."""
        inside = [loop for loop in self.loops if loop.iterates and loop.contains(index)]
        return min(inside, key=lambda loop: loop.last_index - loop.first_index, default=None)

    def to_dict(self) -> dict:
        loop_dicts = [asdict(loop) for loop in self.loops]
        hot = None if self.hot_loop is None else asdict(self.hot_loop)
        return {"addresses": self.addresses, "waves": self.waves, "blocks": self.blocks,
                "loops": loop_dicts, "hot_loop": hot,
                "once_per_wave_share": self.once_per_wave_share,
                "prologue_share": self.prologue_share, "time_basis": self.time_basis}


def rows_from_code_rows(rows: Iterable, pc_sampling: bool = False) -> list[FlowRow]:
    """Adapter for kerneltrace.readers.codejson.CodeRow objects."""
    out = []
    for r in rows:
        time = ((r.pc_issued or 0) + (r.pc_stalled or 0)) if pc_sampling else (r.latency or 0) + (r.idle or 0)
        out.append(FlowRow(r.index, r.asm, r.hits or 0, r.vaddr, r.codeobj, time, r.stall))
    return out


def rows_from_instructions(instructions: Iterable[Mapping]) -> list[FlowRow]:
    """Adapter for the hotspot document's `instructions`."""
    out = []
    for ins in instructions:
        time = (ins.get("latency_cycles") or 0) + (ins.get("idle_cycles") or 0)
        if not time and ins.get("pc_stalled") is not None:
            time = (ins.get("pc_issued") or 0) + (ins.get("pc_stalled") or 0)
        out.append(FlowRow(ins["index"], ins.get("asm") or "", ins.get("hits") or 0, ins.get("pc"),
                           None, time, ins.get("stall_cycles")))
    return out


def with_addresses(rows: Sequence[FlowRow]) -> tuple[list[FlowRow], str]:
    """Rows in program order with addresses: the Vaddr column, else rebuilt from encoding sizes."""
    ordered = sorted(rows, key=lambda row: row.index)
    if not ordered:
        return [], "none"
    if all(row.pc is not None for row in ordered):
        return ordered, "vaddr"
    rebuilt, address = [], 0
    for row in ordered:
        rebuilt.append(FlowRow(row.index, row.asm, row.hits, address, row.codeobj, row.time, row.stall))
        address += encoded_size(row.asm)
    return rebuilt, "estimated"


def snapped_headers(rows: Sequence[FlowRow],
                    limits: StructureThresholds = DEFAULT_STRUCTURE) -> dict[int, int]:
    """Latch → header for backward branches when addresses are estimated: the decoded target,
    snapped to the nearest row where the hit count changes to at least the latch's (a loop
    header runs at least as often as its latch), within `snap_tolerance` of the jump distance."""
    leaders = [(pos, row) for pos, row in enumerate(rows)
               if row.hits and (pos == 0 or rows[pos - 1].hits != row.hits)]
    snapped: dict[int, int] = {}
    for row in rows:
        target = branch_target(row.pc, row.asm) if row.pc is not None else None
        if target is None or target > row.pc or not row.hits:
            continue
        slack = max(limits.snap_min_bytes, limits.snap_tolerance * (row.pc - target))
        near = [(abs(cand.pc - target), cand.index) for _, cand in leaders
                if cand.index <= row.index and cand.hits >= row.hits
                and abs(cand.pc - target) <= slack]
        if near:
            snapped[row.index] = min(near)[1]
    return snapped


def _is_branch(asm: str) -> bool:
    op = opcode(asm)
    return op == "s_branch" or op.startswith(("s_cbranch_", "s_setpc", "s_endpgm"))


def count_blocks(rows: Sequence[FlowRow]) -> int:
    """Basic blocks: leaders are the first row, every branch target and every row after a branch."""
    by_pc = {(row.codeobj, row.pc): row.index for row in rows if row.pc is not None}
    leaders = {rows[0].index} if rows else set()
    for pos, row in enumerate(rows):
        if not _is_branch(row.asm):
            continue
        if pos + 1 < len(rows):
            leaders.add(rows[pos + 1].index)
        target = branch_target(row.pc, row.asm) if row.pc is not None else None
        if target is not None and (row.codeobj, target) in by_pc:
            leaders.add(by_pc[(row.codeobj, target)])
    return len(leaders)


def traced_waves(rows: Sequence[FlowRow]) -> int | None:
    """Waves that ran the kernel: hits of the first executed row (every wave runs the entry)."""
    return next((row.hits for row in rows if row.hits > 0), None)


def _facts(loop: StaticLoop, rows: Sequence[FlowRow], waves: int | None, total_time: int,
           total_stall: int | None, min_iterations: float) -> LoopFacts:
    inside = [row for row in rows if loop.contains(row.index)]
    header = loop.header_hits or 0
    entries = loop.entry_hits if loop.entry_hits else waves
    if entries and header and loop.latch_hits is not None and loop.entry_hits is None and waves:
        entries = max(1, min(waves, header))
    per_entry = round(header / entries, 2) if entries and header else None
    per_wave = round(header / waves, 2) if waves and header else None
    time = sum(row.time for row in inside)
    stall = sum(row.stall or 0 for row in inside)
    return LoopFacts(loop.first_index, loop.last_index, loop.depth, loop.parent, header, entries,
                     per_entry, per_wave, round(time / total_time, 4) if total_time else 0.0,
                     round(stall / total_stall, 4) if total_stall else None,
                     per_entry is not None and per_entry >= min_iterations)


def _hot(loops: Sequence[LoopFacts], child_share: float) -> LoopFacts | None:
    iterating = [loop for loop in loops if loop.iterates and loop.time_share > 0]
    best = max(iterating, key=lambda loop: loop.time_share, default=None)
    while best is not None:
        # every iterating loop inside it, not only its direct children: a rotated outer loop
        # (a persistent GEMM's tile loop) can sit between the hot loop and its K loop as a
        # second, non-iterating or overlapping loop that is the K loop's parent
        children = [loop for loop in iterating if loop is not best
                    and best.contains(loop.first_index) and best.contains(loop.last_index)
                    and (loop.first_index, loop.last_index) != (best.first_index, best.last_index)]
        child = max(children, key=lambda loop: loop.time_share, default=None)
        if child is None or child.time_share < child_share * best.time_share:
            return best
        best = child
    return None


def control_flow(rows: Sequence[FlowRow], observed_headers: dict[int, int] | None = None,
                 time_basis: str = "latency+idle",
                 limits: StructureThresholds = DEFAULT_STRUCTURE) -> ControlFlow:
    """Blocks, loops (with iterations and shares), the hot loop and the once-per-wave share."""
    ordered, addresses = with_addresses(rows)
    waves = traced_waves(ordered)
    total_time = sum(row.time for row in ordered)
    stalls = [row.stall for row in ordered]
    total_stall = sum(s or 0 for s in stalls) if any(s is not None for s in stalls) else None
    headers = {**(snapped_headers(ordered, limits) if addresses == "estimated" else {}),
               **(observed_headers or {})}
    static = find_loops([BranchRow(r.index, r.pc, r.asm, r.hits, r.codeobj) for r in ordered],
                        headers)
    loops = tuple(_facts(loop, ordered, waves, total_time, total_stall, limits.min_iterations)
                  for loop in static)
    hot = _hot(loops, limits.child_share)
    iterating = [loop for loop in loops if loop.iterates]
    once = [row for row in ordered if row.hits and waves and row.hits <= waves
            and not any(loop.contains(row.index) for loop in iterating)]
    once_time = sum(row.time for row in once)
    before = [row for row in once if hot is None or row.index < hot.first_index]
    return ControlFlow(
        addresses, waves, count_blocks(ordered), loops, hot,
        round(once_time / total_time, 4) if total_time else 0.0,
        round(sum(row.time for row in before) / total_time, 4) if total_time else 0.0,
        time_basis,
    )
