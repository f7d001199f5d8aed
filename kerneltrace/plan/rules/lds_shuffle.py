"""LDS-narrow-write-shuffle: runs of sub-dword LDS writes drained and fenced by a barrier (a layout change through LDS)."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.isa.classify import opcode
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic

NARROW_WRITES = ("ds_write_b8", "ds_write_b16", "ds_store_b8", "ds_store_b16")


@dataclass(frozen=True)
class LdsShuffleThresholds:
    """LDS-narrow-write-shuffle: what a run is and when the runs are worth a finding."""

    CONCERN = "lds_shuffle"
    min_run: int = heuristic(8, "sub-dword LDS writes in one run (each at most `max_gap` rows "
                             "after the previous) from which it is a layout shuffle")
    max_gap: int = heuristic(12, "rows between two writes of one run (the conversions between them)")
    fence_window: int = heuristic(6, "rows after a run's last write searched for its drain wait "
                                  "and barrier")
    min_share: float = heuristic(0.05, "share of the waves' time the runs, their drain waits and "
                                 "barriers take from which they are a finding")
    removable: tuple[float, float] = heuristic(
        (0.3, 0.7), "share of that time packed writes (4–8× fewer) or a register-layout "
        "conversion without LDS remove; the barrier stays unless the round trip goes")


def _runs(program: list[dict], limits: LdsShuffleThresholds) -> list[tuple[list[int], list[int]]]:
    """(write positions, fence positions: the drain wait and the barrier) of every run."""
    writes = [p for p, ins in enumerate(program) if opcode(ins.get("asm") or "").startswith(NARROW_WRITES)]
    runs, current = [], []
    for position in writes:
        fenced = current and any(opcode(program[p].get("asm") or "") == "s_barrier"
                                 for p in range(current[-1] + 1, position))
        if current and (position - current[-1] > limits.max_gap or fenced):
            runs.append(current)
            current = []
        current.append(position)
    if current:
        runs.append(current)
    out = []
    for run in runs:
        if len(run) < limits.min_run:
            continue
        fence = []
        for position in range(run[-1] + 1, min(len(program), run[-1] + 1 + limits.fence_window)):
            op = opcode(program[position].get("asm") or "")
            if op == "s_waitcnt" and "lgkmcnt" in (program[position].get("asm") or ""):
                fence.append(position)
            elif op == "s_barrier":
                fence.append(position)
                break
        if any(opcode(program[p].get("asm") or "") == "s_barrier" for p in fence):
            out.append((run, fence))
    return out


@plan_rule(id="LDS-narrow-write-shuffle", lever="sync", order=125,
           thresholds=(LdsShuffleThresholds,))
def lds_narrow_write_shuffle(ctx: PlanContext) -> list[Finding]:
    """Data moved between register layouts through LDS one 1–2-byte element at a time.

    Trigger: runs of ≥ 8 `ds_write_b16`/`ds_write_b8` (a few rows apart) each followed by an
        `s_waitcnt lgkmcnt` and an `s_barrier` (the write → fence → read of a layout conversion,
        e.g. Triton's convert_layout), together with those waits and barriers ≥ 5 % of the
        waves' time
    Evidence: the first run's first write, its wait and barrier, and the costliest run's
    Gain: 30–70 % of that time (hypothesis)
    Fix: pack the elements before writing (`v_perm`/`v_pack` into dwords, `ds_write_b64`/`b128`),
        or produce the consumer's register layout directly (no LDS round trip)"""
    limits = ctx.thresholds.of(LdsShuffleThresholds)
    program = [ins for ins in ctx.program_order if ins.get("hits")]
    runs = _runs(program, limits)
    total = ctx.waves_time
    if not runs or not total:
        return []

    def cost(run: tuple[list[int], list[int]]) -> int:
        return sum(program[p].get("latency_cycles") or 0 for p in [*run[0], *run[1]])

    share = sum(cost(run) for run in runs) / total
    if share < limits.min_share:
        return []
    chosen = [runs[0], *(r for r in sorted(runs, key=lambda r: -cost(r)) if r is not runs[0])][:2]
    evidence = []
    for writes, fence in sorted(chosen, key=lambda r: r[0][0]):
        evidence.append(ctx.evidence(program[writes[0]], f"first of {len(writes)} sub-dword LDS writes"))
        evidence.extend(ctx.evidence(program[p], "drain and fence of the layout change") for p in fence)
    writes_total = sum(len(r[0]) for r in runs)
    stall = sum(program[p].get("stall_cycles") or 0 for r in runs for p in [*r[0], *r[1]])
    return [ctx.finding(
        "LDS-narrow-write-shuffle", ctx.share(stall), location=ctx.user_location(evidence),
        title=(f"{len(runs)} layout changes through LDS, {writes_total} one- or two-byte LDS writes "
               f"each drained and fenced by a barrier: {share:.0%} of the waves' time"),
        estimated_gain=Gain.of_wave_time(share, limits.removable,
                                         "the runs, their drain waits and barriers are",
                                         "packing or a register-layout conversion"),
        root_cause=(f"{len(runs)} times the wave writes values to LDS one element per lane per "
                    f"instruction (`ds_write_b16`/`b8`, {writes_total} in all), waits for the writes "
                    "(`s_waitcnt lgkmcnt(0)`), meets the workgroup at a barrier and reads the data "
                    "back wide: a change of register layout between two matrix operations done "
                    "through LDS. Each sub-dword write is a full LDS instruction, and the wait and "
                    "barrier serialize the workgroup around it."),
        fix=("Pack the elements into dwords before writing (`v_perm_b32`/`v_pack_b32_f16`, then "
             "`ds_write_b64`/`ds_write_b128`), or keep the data in the layout the consumer reads "
             "(in Triton: choose the dot operand / MFMA layout for the tensor, or "
             "`tl.permute`/`tl.reshape` that maps to registers; in HIP: a warp shuffle or "
             "`v_permlane` instead of LDS); merge adjacent conversions so one barrier serves them."),
        evidence=evidence, scope="loop", effort="medium",
    )]
