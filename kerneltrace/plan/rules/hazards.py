"""NOP-hazard-stall: `s_nop` stall explained by the hazard that made the compiler insert it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerneltrace.isa import classify as isa
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, hiding_gain
from kerneltrace.plan.spec import plan_rule
from kerneltrace.thresholds import heuristic


@dataclass(frozen=True)
class HazardThresholds:
    """NOP-hazard-stall: `s_nop` stall per hazard cause."""

    CONCERN = "hazards"
    min_share: float = heuristic(0.03, "`s_nop` stall share of one hazard cause from which it is "
                                 "a finding (the issue-dependency verdict needs "
                                 "verdict.nop_share)")
    look_back: int = heuristic(4, "instructions before an `s_nop` searched for its producer")
    hideable: tuple[float, float] = heuristic((0.3, 0.8), "share of the `s_nop` stall that "
                                              "independent work between producer and consumer "
                                              "fills")
    note_share: float = heuristic(0.1, "`s_nop` stall share (all causes) from which the plan "
                                  "notes how much hazard padding each wave executes")
_TRANS = re.compile(r"^v_(exp|log|rcp|rsq|sqrt|sin|cos)_")
_LANE = re.compile(r"^(v_readlane|v_readfirstlane|v_writelane|v_permlane|s_setreg|v_cmpx|v_div_fmas)")

# cause -> (what the hardware needs, what to do)
CAUSES: dict[str, tuple[str, str]] = {
    "transcendental": (
        "a transcendental op (exp/log/rcp/rsq/sqrt/sin/cos) runs on the quarter-rate trans unit; a "
        "dependent VALU read must wait for it, so the compiler pads with `s_nop`",
        "batch the transcendental ops of several elements back to back and consume them later "
        "(software-pipeline softmax: exp of tile k while scaling tile k-1); use exp2 with a "
        "pre-multiplied log2(e) to drop the extra multiply",
    ),
    "mfma": (
        "an MFMA result (or its source registers) is read before the required pass cycles have "
        "elapsed (xdl read/write hazards); the compiler pads with `s_nop`",
        "interleave independent MFMA chains (two accumulators) or independent VALU work between "
        "an MFMA and the instruction reading its result",
    ),
    "lane/sgpr": (
        "a VALU write of an SGPR/VCC/EXEC, `v_readlane`/`v_writelane`/`v_permlane` or `s_setreg` "
        "needs wait states before the dependent read",
        "move the lane/scalar exchange out of the inner loop or separate it from its consumer by "
        "independent instructions",
    ),
    "compare/select": (
        "a VALU compare writes VCC (or an SGPR mask) that the next `v_cndmask` reads as its lane "
        "mask; the compiler inserts wait states between the write and the read (masking, "
        "clamping, causal or boundary selects)",
        "do all compares of a tile first and the selects after them, so independent work fills "
        "the gap; skip masking on tiles that need none (only the diagonal/boundary tiles of a "
        "causal or ragged mask do); use `v_max`/`v_min`/`v_med3` instead of compare+select where "
        "they express the same clamp",
    ),
    "other": (
        "a data hazard the hardware does not interlock; the compiler inserts wait states",
        "separate producer and consumer with independent instructions",
    ),
}


_COMPARE = re.compile(r"^v_cmp|_co_|^v_readfirstlane")


def hazard_cause(before: list[dict], after: list[dict] | None = None) -> tuple[str, dict | None]:
    """The producer kind among the instructions just before an `s_nop` (nearest first); a lane
    op right after it (the consumer) names the lane hazard; a compare right before it that the
    next instruction reads as a mask is a compare/select hazard."""
    nearest = before[-1] if before else None
    if after and _LANE.match(isa.opcode(after[0].get("asm") or "")):
        return "lane/sgpr", nearest
    if nearest is not None and _COMPARE.search(isa.opcode(nearest.get("asm") or "")):
        return "compare/select", nearest
    for ins in reversed(before):
        op = isa.opcode(ins.get("asm") or "")
        if _TRANS.match(op):
            return "transcendental", ins
        if ins.get("type") == isa.MFMA:
            return "mfma", ins
        if _LANE.match(op):
            return "lane/sgpr", ins
    return "other", None


def _in_select_chain(ctx: PlanContext, nops: list[int]) -> tuple[dict, int] | None:
    """(the serial select chain holding most of these `s_nop`s, how many chains hold any) when
    the chains (structure.select_chains: an unrolled top-k runs one per round) hold at least
    half of them."""
    held = []
    for chain in ctx.structure.get("select_chains") or []:
        inside = sum(1 for index in nops if chain["first"] <= index <= chain["last"])
        if inside:
            held.append((inside, chain))
    if not held or sum(count for count, _ in held) * 2 < len(nops):
        return None
    return max(held, key=lambda pair: pair[0])[1], len(held)


@plan_rule(id="NOP-hazard-stall", lever="issue", serves=("issue-dependency",), order=160,
           thresholds=(HazardThresholds,))
def nop_hazards(ctx: PlanContext) -> list[Finding]:
    """`s_nop` hazard padding, by the hazard that made the compiler insert it.

    One finding per hazard cause whose `s_nop` stall is ≥ 3 % of all stall.

    Trigger: `s_nop` stall per hazard cause ≥ 3 % of stall (not counting the `s_nop`s of an exp's
        denormal range guard: EXP-denormal-guard); cause: a lane op right after the `s_nop`
        (lane/SGPR), a compare writing VCC right before it that a `v_cndmask` reads (compare/select:
        fix = compares first, selects after, no masking on tiles that need none, `v_max`/`v_med3`
        clamps), else the nearest producer in the 4 instructions before: transcendental
        (`v_exp/log/rcp/rsq/sqrt/sin/cos`), MFMA, lane/SGPR ops (`v_readlane`, `v_writelane`,
        `v_permlane`, `s_setreg`, …), else other
    Evidence: producer + `s_nop` pairs
    Gain: 30–80 % of that `s_nop` stall
    Fix: put independent work between the hazard's producer and its consumer"""
    limits = ctx.thresholds.of(HazardThresholds)
    # the `s_nop`s of an exp's denormal range guard go with the guard (EXP-denormal-guard):
    # the fix removes them, it does not fill them with other work
    guarded = {index for guard in ctx.exp_guards
               for index in guard.guard_indices}
    nops = [ins for ins in ctx.program_order
            if ins.get("type") == isa.NOP and (ins.get("stall_cycles") or 0) > 0
            and ins["index"] not in guarded]
    by_cause: dict[str, list[tuple[dict, dict | None]]] = {}
    for nop in nops:
        before, after = ctx.neighbours(nop["index"], limits.look_back, 1)
        before = [ins for ins in before if ins.get("type") != isa.NOP]
        cause, producer = hazard_cause(before, after)
        by_cause.setdefault(cause, []).append((nop, producer))
    findings = []
    for cause, items in by_cause.items():
        stall = sum(nop["stall_cycles"] for nop, _ in items)
        share = ctx.share(stall)
        if share < limits.min_share:
            continue
        items.sort(key=lambda item: -item[0]["stall_cycles"])
        need, fix = CAUSES[cause]
        evidence = []
        for nop, producer in items[:3]:
            if producer is not None:
                evidence.append(ctx.evidence(producer, f"{cause} hazard producer"))
            evidence.append(ctx.evidence(nop, "hazard wait states"))
        location = ctx.user_location(evidence)
        if cause == "compare/select":
            found = _in_select_chain(ctx, [nop["index"] for nop, _ in items])
            if found is not None:
                # each compare reads the previous select (running max/argmax): batching the
                # compares ahead would cross a true dependency (issue 21.7)
                chained, chains = found
                more = f", and {chains - 1} more like it" if chains > 1 else ""
                fix = (f"the selects of rows {chained['first']}–{chained['last']} form a serial "
                       f"chain ({chained['length']} selects, each compare reading the previous "
                       f"select's result: a running max/argmax{more}), so the compares cannot be issued "
                       "ahead of the selects; reduce as a tree (pairwise max of halves, log2 n "
                       "steps with independent compares in each) or keep a packed (value, index) "
                       "pair and use `v_max` on it")
        findings.append(ctx.finding(
            "NOP-hazard-stall", share, location=location,
            title=f"`s_nop` hazard padding after {cause} ops: {share:.0%} of stall",
            estimated_gain=hiding_gain(share, *limits.hideable,
                                       f"the `s_nop` stall after {cause} ops"),
            root_cause=f"{len(items)} `s_nop` instruction(s) stall {stall:,} cycles: {need}.",
            fix=f"{fix[0].upper()}{fix[1:]}.",
            evidence=evidence,
            effort="medium",
        ))
    return findings


_NOP_COUNT = re.compile(r"^s_nop\s+(0x[0-9a-fA-F]+|\d+)")


def wait_states(asm: str) -> int:
    """Wait states one `s_nop N` inserts: N + 1 (the immediate counts the extra ones)."""
    match = _NOP_COUNT.match(asm.strip())
    return int(match.group(1), 0) + 1 if match else 1


@plan_rule(id="NOP-padding-note", lever="none", order=165, thresholds=(HazardThresholds,))
def nop_padding_note(ctx: PlanContext) -> list[Finding]:
    """How much hazard padding each wave executes (a note, not ranked).

    When `s_nop` stall is a large share of the kernel's, the per-cause findings say what to
    change; this note states the total: how many `s_nop` instructions, how many wait states per
    wave, and how much of the stall they hold, so a reader sees the size of the issue-bound part.

    Trigger: `s_nop` stall (all causes) ≥ 10 % of all stall
    Evidence: the `s_nop` instructions with the most stall
    Gain: none (the NOP-hazard-stall findings carry the gains)
    Fix: the NOP-hazard-stall findings, cause by cause"""
    limits = ctx.thresholds.of(HazardThresholds)
    nops = [ins for ins in ctx.program_order if ins.get("type") == isa.NOP and ins.get("hits")]
    stall = sum(ins.get("stall_cycles") or 0 for ins in nops)
    share = ctx.share(stall)
    if share < limits.note_share:
        return []
    waves = ctx.wave_count or 1
    states = sum(wait_states(ins.get("asm") or "") * ins["hits"] for ins in nops) / waves
    top = sorted(nops, key=lambda ins: -(ins.get("stall_cycles") or 0))[:5]
    return [ctx.finding(
        "NOP-padding-note", share, priority="LOW", ranked=False, scope="kernel",
        title=(f"Hazard padding: {len(nops)} `s_nop` instruction(s) insert ~{states:,.0f} wait "
               f"states per wave and hold {share:.0%} of stall"),
        estimated_gain=None,
        root_cause=(f"`s_nop` instructions (wait states the compiler inserts between a producer "
                    f"and a dependent consumer the hardware does not interlock) stall "
                    f"{stall:,} cycles over the traced waves, {share:.1%} of all stall."),
        fix="See the NOP-hazard-stall findings: each names the hazard cause and its fix.",
        evidence=[ctx.evidence(ins, f"s_nop, {wait_states(ins.get('asm') or '')} wait state(s)")
                  for ins in top],
        effort="none",
    )]
