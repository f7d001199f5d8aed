"""Findings that state the verdict's own lever: STREAM (streaming kernels), PRO (prologue)."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.launch import bytes_per_lane, doc_wave_size
from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain, hiding_gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.plan.verdict import (
    SETUP_TYPES,
    cost_cycles,
    once_per_wave,
    prologue_share,
    total_stall,
)
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class VerdictRuleThresholds:
    """STREAM (streaming kernels), PRO (prologue), MEM-narrow-loads."""

    CONCERN = "verdict_rules"
    stream_hideable: tuple[float, float] = heuristic((0.1, 0.4), "share of a streaming kernel's "
                                                     "vector-memory stall more bytes in flight "
                                                     "hide")
    prologue_amortised: tuple[float, float] = heuristic((0.2, 0.5), "share of the once-per-wave "
                                                        "setup cost 2–4× more work per wave "
                                                        "amortises")
    narrow_min_share: float = heuristic(0.1, "stall share of sub-dword vector loads from which "
                                        "they are a finding")
    narrow_hideable: tuple[float, float] = heuristic((0.3, 0.7), "share of the narrow loads' "
                                                     "stall fewer, wider requests hide")


def load_bytes(asm: str, lanes: int) -> int | None:
    """Bytes one vector load moves for a full wave of `lanes` (analysis.launch.bytes_per_lane ×
    lanes; the wave size from `analysis.launch.doc_wave_size`)."""
    per_lane = bytes_per_lane(asm)
    return per_lane * lanes if per_lane else None


def _user_location(ctx: PlanContext, instructions: list[dict]) -> str | None:
    for ins in instructions:
        line = ctx.line_of.get(ins["index"])
        if line and not line.get("artifact"):
            return line["location"]
    return None


@plan_rule(id="STREAM-memory-bound", lever="memory-latency", serves=("memory-streaming",),
           order=30, thresholds=(VerdictRuleThresholds,))
def streaming_kernel(ctx: PlanContext) -> list[Finding]:
    """A streaming kernel bound by bytes in flight: what helps and what does not.

    STREAM: a streaming kernel is bound by bytes in flight; say what helps and what does not.

    Trigger: verdict memory-streaming; kernel-wide, located at the first user load line
    Evidence: the top vector-memory stalls
    Gain: 10–40 % of the vector-memory stall; text: loads, bytes per wave in flight, load width,
        occupancy; what helps (16-byte loads, several elements per thread with all loads before the
        first wait, enough waves) and what does not (loop prefetch, LDS staging, scale-load
        reordering)
    Fix: more bytes in flight per wave: 16-byte loads, several elements per thread, all loads before
        the first wait"""
    verdict = ctx.verdict
    if verdict.kind != "memory-streaming":
        return []
    loads = [ins for ins in ctx.program_order if ins.get("type") == isa.VMEM_LOAD and ins.get("hits")]
    waits = sorted((ins for ins in ctx.program_order
                    if ins.get("type") in (isa.VMEM_WAIT, isa.VMEM_LOAD, isa.VMEM_STORE)
                    and ins.get("stall_cycles")), key=lambda ins: -ins["stall_cycles"])
    share = ctx.type_share(isa.VMEM_WAIT, isa.VMEM_LOAD, isa.VMEM_STORE)
    waves = ctx.wave_count or 1
    lanes = doc_wave_size(ctx.hotspots)
    widths = sorted({b for b in (load_bytes(ins["asm"], lanes) for ins in loads) if b})
    in_flight = sum((load_bytes(ins["asm"], lanes) or 0) * ins["hits"] for ins in loads) / waves
    narrow = widths and widths[0] < 16 * lanes
    occ = (ctx.hotspots.get("occupancy") or {}).get("waves_per_simd")
    return [ctx.finding(
        "STREAM-memory-bound", share, location=_user_location(ctx, loads + waits),
        title=(f"Streaming kernel bound by memory: {len(loads)} load instruction(s), "
               f"~{in_flight / 1024:.1f} KiB per wave in flight"),
        estimated_gain=hiding_gain(share, *ctx.thresholds.of(VerdictRuleThresholds).stream_hideable,
                                   "the vector-memory stall (more bytes in flight per wave and "
                                   "per CU)"),
        scope="kernel",
        root_cause=(f"{verdict.sentence} Each wave loads ~{in_flight:,.0f} bytes "
                    f"({', '.join(f'{w // lanes} B/lane' for w in widths)} per load) and then "
                    "waits the full memory latency with nothing else to issue"
                    + (f"; {occ} wave(s)/SIMD are resident to overlap it." if occ else ".")),
        fix=("Raise memory-level parallelism: "
             + ("use 16-byte loads (`dwordx4`: 4 floats per thread) and " if narrow else "")
             + "process several elements per thread with all loads issued before the first wait; "
             "keep enough waves per CU (grid ≥ several waves per SIMD, registers low enough for "
             "full occupancy). What does not help: prefetching inside a loop (there is none), "
             "LDS staging (no reuse), reordering scale loads, optimising the wait line itself."),
        schematic="for i in range(4): x[i] = load4(X + 4*(tid + i*stride))   # all loads first\n"
                  "for i in range(4): store4(Y + ..., a * x[i] + y[i])",
        evidence=[ctx.evidence(ins, "vector-memory stall") for ins in waits[:5]],
        effort="low",
    )]


@plan_rule(id="PRO-once-per-wave-setup", lever="prologue", serves=("prologue",), order=40,
           thresholds=(VerdictRuleThresholds,))
def prologue_setup(ctx: PlanContext) -> list[Finding]:
    """Once-per-wave setup dominates: too little work per wave.

    PRO: once-per-wave setup dominates: the fix is more work per wave, not the loads.

    Trigger: verdict prologue; kernel-wide
    Evidence: the once-per-wave scalar loads and waits by cost
    Gain: 20–50 % of their cost share (more work per wave amortises them)
    Fix: give each wave more work (several tiles per wave, persistent grid) or fuse"""
    if ctx.verdict.kind != "prologue":
        return []
    doc = ctx.hotspots
    setup = sorted((ins for ins in ctx.program_order
                    if ins.get("type") in SETUP_TYPES and once_per_wave(ctx.wave_count, ins)
                    and (ins.get("latency_cycles") or 0)),
                   key=lambda ins: -cost_cycles(ins))
    share = prologue_share(doc, ctx.wave_count)
    low, high = ctx.thresholds.of(VerdictRuleThresholds).prologue_amortised
    return [ctx.finding(
        "PRO-once-per-wave-setup", ctx.share(total_stall(setup)),
        title=f"Once-per-wave setup is {share:.0%} of the waves' cost: too little work per wave",
        priority="HIGH",
        estimated_gain=Gain(
            low=round(share * low, 4), high=round(share * high, 4),
            basis=(f"amortising {share:.0%} of the cost (latency + idle of once-per-wave scalar "
                   f"loads and their waits) over 2–4× more work per wave removes "
                   f"{low * 100:.0f}–{high:.0%} of it; cost, not stall, because the waits are the "
                   "wave's lifetime")),
        scope="kernel",
        root_cause=(f"{ctx.verdict.sentence} The kernel-argument and setup loads cost the same "
                    "whatever the wave does afterwards; with little work per wave they dominate."),
        fix=("Give each wave more work (several tiles or rows per wave, a persistent grid) or fuse "
             "the kernel with its neighbour; do not try to speed the setup loads themselves."),
        evidence=[ctx.evidence(ins, "once per wave") for ins in setup[:5]],
        location=None,
        effort="medium",
    )]


NARROW_BYTES_PER_LANE = 2  # ushort/ubyte loads: one 16-bit element per lane per instruction


@plan_rule(id="MEM-narrow-loads", lever="memory-bytes", order=50,
           thresholds=(VerdictRuleThresholds,))
def narrow_loads(ctx: PlanContext) -> list[Finding]:
    """Sub-dword vector loads hold much of the stall.

    MEM-narrow-loads: sub-dword vector loads (one bf16/fp16/byte element per lane) hold much of the
    stall: each instruction moves 64–128 bytes per wave, so the memory pipe issues many small
    requests; widen them (several elements per lane).

    Trigger: sub-dword vector loads (≤ 2 bytes per lane: `ushort`, `ubyte`, `short`, `b16`, `b8`)
        hold ≥ 10 % of stall
    Evidence: the narrow loads by stall
    Gain: 30–70 % of their stall
    Fix: several elements per lane per load (`dwordx4`), unpacked in registers"""
    lanes = doc_wave_size(ctx.hotspots)
    narrow = [ins for ins in ctx.program_order
              if ins.get("type") == isa.VMEM_LOAD and ins.get("hits")
              and (load_bytes(ins["asm"], lanes) or 1 << 30) <= NARROW_BYTES_PER_LANE * lanes]
    stall = total_stall(narrow)
    share = ctx.share(stall)
    limits = ctx.thresholds.of(VerdictRuleThresholds)
    if share < limits.narrow_min_share:
        return []
    narrow.sort(key=lambda ins: -(ins.get("stall_cycles") or 0))
    return [ctx.finding(
        "MEM-narrow-loads", share, location=_user_location(ctx, narrow),
        title=f"Sub-dword vector loads ({isa.opcode(narrow[0]['asm'])}) hold {share:.0%} of stall",
        estimated_gain=hiding_gain(share, *limits.narrow_hideable, "the narrow loads' stall "
                                   "(fewer, wider requests)"),
        root_cause=(f"{len(narrow)} load instruction(s) move {load_bytes(narrow[0]['asm'], lanes)} bytes "
                    "per wave each (one 8/16-bit element per lane): the kernel issues 4–8× more "
                    "memory instructions than 16-byte loads would, and each waits the full latency."),
        fix=("Load several elements per lane with one instruction: `buffer_load_dwordx4` (8 bf16 "
             "per lane) over a contiguous chunk per thread, then unpack in registers."),
        schematic="x8 = load_b128(row + 8*lane)   # 8 bf16 per lane, one request\n"
                  "for i in range(8): use(x8[i])",
        evidence=[ctx.evidence(ins, "narrow load") for ins in narrow[:5]],
        effort="medium",
    )]
