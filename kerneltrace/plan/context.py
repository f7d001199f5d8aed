"""What plan rules see: one hotspot document, its optional L2 document and waves, plus lookups."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from kerneltrace.analysis.hotspots import stall_rate, user_lines
from kerneltrace.analysis.loops import (
    StaticLoop,
    find_loops,
    innermost_loop,
    rows_from_instructions,
)
from kerneltrace.isa.registers import operands, reads, registers
from kerneltrace.plan.findings import Evidence, Finding, make_finding
from kerneltrace.plan.l2_metrics import l2_metrics
from kerneltrace.plan.verdict import type_share, wave_count
from kerneltrace.thresholds import CoverageThresholds, GainThresholds, Table, VerdictThresholds

if TYPE_CHECKING:
    from kerneltrace.analysis.exp_guard import ExpGuard


@dataclass
class PlanContext:
    """One dispatch's documents; rules read it, never modify it."""

    hotspots: dict
    l2: dict | None = None
    top_lines: int = 10  # how many real lines the per-line rules look at
    # the thresholds in use (kerneltrace/thresholds.py; plan.thresholds: overrides applied)
    thresholds: Table = field(default_factory=Table)

    @property
    def waves(self) -> dict | None:
        return self.hotspots.get("waves")

    @property
    def total_stall(self) -> int:
        return int((self.hotspots.get("totals") or {}).get("stall_cycles") or 0)

    @property
    def waves_time(self) -> int:
        """The traced waves' time summed over instructions (latency + idle: the document's cost
        total, else its latency total), the denominator of a share of the waves' time."""
        costs = self.hotspots.get("costs") or {}
        return int(costs.get("total_cycles") or (self.hotspots.get("totals") or {}).get(
            "latency_cycles") or 0)

    @property
    def ranking_basis(self) -> tuple[str, int]:
        """The per-instruction column the plan ranks by and its total: stall, or latency when the
        capture records no stall (rocprofv2 legacy, stall-free decodes)."""
        if self.total_stall:
            return "stall_cycles", self.total_stall
        return "latency_cycles", int((self.hotspots.get("totals") or {}).get("latency_cycles") or 0)

    @property
    def kernel(self) -> str:
        return self.hotspots.get("kernel") or "(unknown kernel)"

    @property
    def arch_name(self) -> str | None:
        return (self.hotspots.get("arch") or {}).get("name")

    @cached_property
    def l2_metrics(self) -> dict:
        """The L2/HBM metrics of the L2 document for this kernel ({} without one)."""
        return l2_metrics(self.l2, self.hotspots.get("kernel"))

    @cached_property
    def wave_count(self) -> int | None:
        """Waves traced (kerneltrace.plan.verdict.wave_count), computed once."""
        return wave_count(self.hotspots)

    @cached_property
    def structure(self) -> dict:
        """The document's code.json-only `structure` (recomputed for documents without it)."""
        from kerneltrace.plan.verdict import doc_structure

        return doc_structure(self.hotspots)

    @cached_property
    def verdict(self):
        """The bottleneck verdict (kerneltrace.plan.verdict.decide) of this dispatch."""
        from kerneltrace.plan.coverage import with_early_exit
        from kerneltrace.plan.occupancy_check import without_occupancy_advice
        from kerneltrace.plan.verdict import decide

        verdict = decide(self.hotspots, self.l2_metrics or None, self.thresholds.of(VerdictThresholds))
        # what the trace itself says about the verdict: no work traced, no occupancy headroom
        verdict = with_early_exit(verdict, self.coverage)
        return without_occupancy_advice(verdict, self.hotspots)

    @cached_property
    def barrier_caused(self) -> bool:
        """Whether the barrier stall is explained by the waits before the barriers (verdict
        Facts.barrier_caused: the straggler's waits, else code.json's segments, or a ping-pong
        partner's memory phase): its barrier rows are then a symptom."""
        from kerneltrace.plan.verdict import Facts

        return Facts(self.hotspots, self.l2_metrics or None,
                     self.thresholds.of(VerdictThresholds)).barrier_caused

    @cached_property
    def coverage(self):
        """The judged trace coverage (kerneltrace.plan.coverage), or None."""
        from kerneltrace.plan.coverage import judged

        return judged(self.hotspots, self.thresholds.of(CoverageThresholds))

    @cached_property
    def instructions(self) -> dict[int, dict]:
        return {ins["index"]: ins for ins in self.hotspots.get("instructions") or []}

    @cached_property
    def program_order(self) -> list[dict]:
        return sorted(self.instructions.values(), key=lambda ins: ins["index"])

    @cached_property
    def exp_guards(self) -> list[ExpGuard]:
        """The denormal range guards around `v_exp_f32` (kerneltrace.analysis.exp_guard), found
        once: the exp-guard rule ranks them and the hazard rule leaves their `s_nop`s to it."""
        from kerneltrace.analysis.exp_guard import find_exp_guards

        return find_exp_guards(self.program_order)

    @cached_property
    def _position(self) -> dict[int, int]:
        return {ins["index"]: pos for pos, ins in enumerate(self.program_order)}

    @cached_property
    def line_of(self) -> dict[int, dict]:
        """Instruction index → its source-line entry."""
        owner: dict[int, dict] = {}
        for line in self.hotspots.get("source_lines") or []:
            for index in line.get("instructions") or []:
                owner[index] = line
        return owner

    def finding(self, rule: str, share: float, **fields) -> Finding:
        """Build a finding (kerneltrace.plan.findings.make_finding) with this plan's thresholds."""
        return make_finding(rule, share, limits=self.thresholds.of(GainThresholds), **fields)

    def share(self, stall_cycles: int | None) -> float:
        return (stall_cycles or 0) / self.total_stall if self.total_stall else 0.0

    def type_share(self, *types: str) -> float:
        return type_share(self.hotspots, *types)

    def is_artifact(self, location: str | None) -> bool:
        return any(line.get("location") == location for line in self.artifact_lines())

    def user_location(self, evidence: list[Evidence]) -> str | None:
        """The first evidence location that is set and not an artifact line (entry glue etc.)."""
        return next((e.location for e in evidence if e.location and not self.is_artifact(e.location)),
                    None)

    def evidence(self, ins: dict, note: str = "") -> Evidence:
        """Evidence entry for one instruction, located at its source line."""
        latency = ins.get("latency_cycles") or 0
        stall = ins.get("stall_cycles")
        line = self.line_of.get(ins["index"])
        rate = stall_rate(stall, latency)
        return Evidence(
            location=line.get("location") if line else (ins.get("source") or None),
            instruction_index=ins["index"],
            asm=ins.get("asm", ""),
            stall_cycles=stall,
            stall_rate=None if rate is None else round(rate, 4),
            note=note,
        )

    def real_lines(self, limit: int | None = None) -> list[dict]:
        """Top source lines by stall that carry user code (no artifact) and some stall."""
        return user_lines(self.hotspots.get("source_lines") or [], self.top_lines if limit is None else limit)

    def artifact_lines(self) -> list[dict]:
        return [line for line in self.hotspots.get("source_lines") or [] if line.get("artifact")]

    def line_instructions(self, line: dict) -> list[dict]:
        """A line's instructions in program order."""
        found = [
            self.instructions[i] for i in line.get("instructions") or [] if i in self.instructions
        ]
        return sorted(found, key=lambda ins: ins["index"])

    def neighbours(self, index: int, before: int, after: int) -> tuple[list[dict], list[dict]]:
        """Up to `before` instructions preceding and `after` following `index` in program order."""
        pos = self._position.get(index)
        if pos is None:
            return [], []
        order = self.program_order
        return order[max(0, pos - before) : pos], order[pos + 1 : pos + 1 + after]

    @cached_property
    def static_loops(self) -> list[StaticLoop]:
        """Loop bodies from backward branches (kerneltrace/analysis/loops.py) that really iterate.

        Headers the wave analysis observed win over decoded branch targets; loops whose hit
        counts are inconsistent, or show the back edge never taken, behave as straight-line code.
        """
        from kerneltrace.analysis.waves.loops import HOT_LOOPS

        reported = (self.waves or {}).get("loops")
        observed = {
            loop["last_index"]: loop["first_index"]
            for loop in reported or []
            if isinstance(loop.get("first_index"), int) and isinstance(loop.get("last_index"), int)
        }
        loops = find_loops(rows_from_instructions(self.program_order), observed)
        if not loops:  # no Vaddr (legacy): the structure's loops, from rebuilt addresses
            loops = [StaticLoop(loop["first_index"], loop["last_index"], (loop["last_index"],),
                                loop["depth"], loop["parent"], loop["header_hits"], None,
                                loop["entries"], True)
                     for loop in (self.structure.get("control_flow") or {}).get("loops") or []
                     if loop.get("iterates")]
        # a complete wave-observed list (fewer than its cap) that lacks a back edge means the
        # traced waves never looped there (e.g. a rotated loop each wave passes through once)
        complete = isinstance(reported, list) and len(reported) < HOT_LOOPS
        return [
            loop
            for loop in loops
            if loop.hits_consistent is not False
            and loop.iterates
            and (not complete or loop.last_index in observed or loop.trip_count is not None)
        ]

    def loop_of(self, index: int) -> StaticLoop | None:
        """The innermost static loop whose body holds instruction `index`."""
        return innermost_loop(self.static_loops, index)

    def following(self, index: int, limit: int) -> list[dict]:
        """Up to `limit` instructions executed after `index`: inside a loop body the walk wraps
        from the latch to the header (the next iteration), so it never leaves the body and stops
        before reaching `index` again; outside loops it is plain program order."""
        pos = self._position.get(index)
        if pos is None:
            return []
        loop = self.loop_of(index)
        order = self.program_order
        if loop is None:
            return order[pos + 1 : pos + 1 + limit]
        # loop bounds are rows of this document (find_loops ran over its instructions)
        first, last = self._position[loop.first_index], self._position[loop.last_index]
        wrapped = order[pos + 1 : last + 1] + order[first:pos]
        return wrapped[:limit]

    def distance_to_use(self, index: int, window: int = 64) -> tuple[int, dict] | None:
        """Instructions between a producer and the first later instruction reading its result."""
        producer = self.instructions.get(index)
        if producer is None:
            return None
        ops = operands(producer["asm"])
        if not ops:
            return None
        written = registers(ops[0])
        if not written:
            return None
        _, following = self.neighbours(index, 0, window)
        for gap, ins in enumerate(following):
            if written & reads(ins["asm"]):
                return gap, ins
        return None
