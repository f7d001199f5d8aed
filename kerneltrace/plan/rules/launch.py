"""Findings from the code.json structure: LAUNCH (grid vs GPU), SETUP (kernarg round trips), BW (bytes).

LAUNCH: an under-filled GPU or a tail round; SETUP: serialized kernel-argument round trips; BW:
request bytes at the HBM peak (docs/summary-json.md, rule catalogue)."""

from __future__ import annotations

from dataclasses import dataclass

from kerneltrace.analysis.bandwidth import bandwidth_estimate
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.findings import Finding, Gain
from kerneltrace.plan.spec import FindingKind, plan_rule
from kerneltrace.plan.verdict import divisible_life, launch_gain
from kerneltrace.thresholds import VerdictThresholds, heuristic

RULE_UNDER = "LAUNCH-under-filled-gpu"
RULE_TAIL = "LAUNCH-tail"
RULE_SETUP = "SETUP-serial-kernarg-round-trips"
RULE_BW = "BW-requests-at-hbm-peak"


@dataclass(frozen=True)
class LaunchThresholds:
    """LAUNCH (grid vs GPU), SETUP (kernel-argument round trips), BW (request bytes)."""

    CONCERN = "launch"
    setup_removable: tuple[float, float] = heuristic(
        (0.6, 1.0), "share of the serialized kernel-argument round trips' wait a hoist into the "
        "first batch removes (what remains is the loads' issue)")
    min_late_share: float = heuristic(0.03, "stall share of the serialized round trips from "
                                      "which they are a finding")
    fewer_bytes: tuple[float, float] = heuristic(
        (0.1, 0.4), "share of a bandwidth-bound kernel's vector-memory stall fewer bytes "
        "(fusion, narrower types) remove")
    min_observed_tail: float = heuristic(0.08, "CU time lost waiting for the longest-busy CU of "
                                         "each traced SE (occupancy.json, no kernel trace) from "
                                         "which the uneven end is a LAUNCH-tail finding")
    observed_tail_removable: tuple[float, float] = heuristic(
        (0.3, 0.7), "share of an observed tail's waiting CU time a re-partition takes back (a "
        "stream-K split adds partial-tile reductions, another tile shape its own efficiency)")
    staircase_spread: float = heuristic(0.6, "least busy CU's cycles over the busiest's below "
                                        "which the observed under-fill names a staircase of "
                                        "workgroup lengths")


def _divided_loop(ctx: PlanContext) -> list:
    """Evidence for a launch finding: the hot loop's header and back edge, the work more, smaller
    workgroups (or a split of the loop's range) would share out (none without an iterating loop)."""
    hot = (ctx.structure.get("control_flow") or {}).get("hot_loop") or {}
    rows = [(hot.get("first_index"), "hot loop header: the work a re-partition shares out"),
            (hot.get("last_index"), "hot loop back edge")]
    return [ctx.evidence(ctx.instructions[index], label) for index, label in rows
            if index in ctx.instructions]


def _launch_finding(ctx: PlanContext, rule: str, title: str, gain: Gain, root_cause: str,
                    fix: str) -> Finding:
    """A launch finding: kernel scope, HIGH before the gains weigh it, the hot loop as evidence."""
    return ctx.finding(rule, 0.0, id=rule, title=title, priority="HIGH", estimated_gain=gain,
                       root_cause=root_cause, fix=fix, scope="kernel", effort="high",
                       evidence=_divided_loop(ctx))


def _lifetime(ctx: PlanContext) -> int:
    return sum((ins.get("latency_cycles") or 0) + (ins.get("idle_cycles") or 0)
               for ins in ctx.program_order)


@plan_rule(id=RULE_UNDER, lever="launch", serves=("launch-bound",), order=5,
           thresholds=(LaunchThresholds,),
           variants=(FindingKind(RULE_TAIL, "launch", ("launch-bound",)),))
def launch_findings(ctx: PlanContext) -> list[Finding]:
    """The grid leaves CUs idle, or a tail round: the first knob is the grid shape.

    Trigger: `structure.launch.launch_bound` (≥ 50 % of the CUs get no workgroup, or the last
        round of resident workgroups leaves ≥ 25 % of the run's capacity idle) with a launch gain
        > 0; `LAUNCH-tail` when most CUs get work but the last round is nearly empty; without
        a kernel trace, `LAUNCH-tail` (observed) when every traced SE's busy CUs sit at two
        levels (occupancy.json: a last round that reached only some CUs) and ≥ 8 % of their time
        waits for the longest
    Evidence: the hot loop's header and back edge (the work a re-partition shares out); the
        reason names workgroups, CUs, rounds
    Gain: the idle share × (1 − the kernel-argument round trips' share of a wave's life, paid by
        every wave however the work is split), low end halved; kernel time; the observed tail:
        its waiting share × that divisible part × 30–70 % (hypothesis)
    Fix: tile/split configuration (split-K / stream-K, smaller tiles, several problems per
        launch), or one more resident workgroup per CU for a tail"""
    launch = ctx.structure.get("launch") or {}
    gain = launch_gain(ctx.hotspots)
    if gain is None and not launch:
        return _observed_tail(ctx)
    if gain is None or gain[1] <= 0:
        return []
    if not launch.get("launch_bound"):
        return _observed_under_fill(ctx, gain)
    low, high, reason = gain
    tail = (launch.get("tail_loss") or 0) > 1 - (launch.get("cu_fill") or 0)
    rule = RULE_TAIL if tail else RULE_UNDER
    title = (f"Tail: {launch['workgroups']} workgroups need {launch['rounds']:.2f} rounds of "
             f"resident workgroups; the last leaves {launch['tail_loss']:.0%} of the GPU idle"
             if tail else
             f"Under-filled GPU: {launch['workgroups']} workgroups on {launch['cu_count']} CUs "
             f"({1 - launch['cu_fill']:.0%} of the CUs idle, {launch['waves_per_simd_grid']} waves "
             "per SIMD from the grid)")
    fix = ("Change the tile/split configuration so the grid fills the GPU: a smaller tile or "
           "split-K / stream-K (more workgroups per output), or batch several problems per launch"
           if not tail else
           "Make the grid a multiple of CUs × resident workgroups per CU: retile, or fit one more "
           "workgroup per CU (the occupancy limiter) so the last round is not nearly empty")
    return [_launch_finding(
        ctx, rule, title,
        Gain(low, high, f"{reason}; the idle share of the GPU times the part of a wave's life "
             "that is divisible work (the kernel-argument round trips are paid by every wave), "
             "halved for the low end: a split adds reduction work and smaller tiles reuse less",
             unit="kernel_time"),
        f"{reason}. Every traced wave runs with the GPU mostly empty, so latency hiding inside "
        "it cannot help the CUs that have no work.", fix)]


def _observed_tail(ctx: PlanContext) -> list[Finding]:
    """LAUNCH-tail from occupancy.json when there are no launch facts: the traced SEs' busy CUs
    sit at two levels, a last round of equal workgroups that reached only some CUs (a staircase
    of unequal workgroups is not a tail: `cu_usage.two_levels`)."""
    usage = ctx.structure.get("cu_usage") or {}
    tail = usage.get("tail_share") or 0.0
    limits = ctx.thresholds.of(LaunchThresholds)
    if usage.get("launch_bound") or not usage.get("two_levels") or tail < limits.min_observed_tail:
        return []
    share, chain = divisible_life(ctx.hotspots, ctx.structure,
                                  ctx.thresholds.of(VerdictThresholds).chain_max_loads)
    low_part, high_part = limits.observed_tail_removable
    low, high = round(tail * share * low_part, 4), round(tail * share * high_part, 4)
    longest, busy = usage["busy_cycles_longest"], usage["busy_cus_per_se"] * usage["traced_shader_engines"]
    reason = (f"on the traced shader engine(s) {usage['longest_cus']} of {busy:g} busy CUs stay "
              f"busy {longest:,} cycles and the others about {usage['busy_cycles_shortest']:,} "
              f"(two levels: a last round of workgroups that reached only some CUs): {tail:.0%} "
              "of the busy CUs' time is spent waiting for the longest (occupancy.json)")
    return [_launch_finding(
        ctx, RULE_TAIL,
        f"Tail (observed): {usage['longest_cus']} of {busy:g} busy CUs run a last round the "
        f"others do not; {tail:.0%} of the busy CUs' time waits for them",
        Gain(low, high, f"{reason}; that share times the part of a wave's life that is divisible "
             "work" + (f" ({chain})" if chain else "") + f", of which a re-partition takes back "
             f"{low_part:.0%}–{high_part:.0%} (hypothesis; no kernel trace: the grid is not "
             "known, only what the traced shader engines show)", unit="kernel_time"),
        f"{reason[:1].upper()}{reason[1:]}. The workgroups are of one length and their count is "
        "not a multiple of CUs × resident workgroups, so the CUs that got the last round's set "
        "the end while the others idle.",
        "Make the work divide evenly: a tile count that is a multiple of CUs × resident "
        "workgroups (retile), stream-K or split-K for the last round's tiles, or, for a "
        "persistent kernel, hand out tiles so every CU ends together")]


def _observed_under_fill(ctx: PlanContext, gain: tuple[float, float, str]) -> list[Finding]:
    """LAUNCH-under-filled-gpu from occupancy.json when there are no launch facts."""
    usage = ctx.structure.get("cu_usage") or {}
    if not usage.get("launch_bound"):
        return []
    low, high, reason = gain
    longest, shortest = usage["busy_cycles_longest"], usage["busy_cycles_shortest"]
    staircase = shortest < ctx.thresholds.of(LaunchThresholds).staircase_spread * longest
    title = (f"Under-filled GPU (observed): {usage['busy_cus_per_se']:g} of {usage['cus_per_se']:g} "
             f"CUs per traced shader engine ran the kernel, busy {usage['busy_share']:.0%} of the "
             "time" + (f"; their work ends between {shortest:,} and {longest:,} cycles" if staircase
                       else ""))
    fix = ("Give the GPU more, smaller pieces of work: a smaller tile or a split of the long "
           "dimension (split-K / split-KV / stream-K), or several problems per launch"
           + ("; and balance them: the busy CUs' work differs by "
              f"{longest / max(shortest, 1):.1f}× (a staircase of workgroup lengths, e.g. a causal "
              "mask), so hand out the longest workgroups first or split them so every CU ends "
              "together" if staircase else ""))
    return [_launch_finding(
        ctx, RULE_UNDER, title,
        Gain(low, high, f"{reason}; the idle share of the traced CU time times the part of a "
             "wave's life that is divisible work, halved for the low end (no kernel trace: the "
             "grid is not known, only what the traced shader engines show)", unit="kernel_time"),
        f"{reason[:1].upper()}{reason[1:]}. The CUs without work, or whose work ended early, "
        "wait for the slowest; latency hiding inside a wave cannot help them.", fix)]


@plan_rule(id=RULE_SETUP, lever="setup-round-trips", order=6, thresholds=(LaunchThresholds,))
def setup_round_trips(ctx: PlanContext) -> list[Finding]:
    """Kernel-argument loads issued in several batches, each waited before the next.

    Trigger: `structure.setup` has a serialized round trip (an `s_load` batch from the kernarg
        pointer issued after an earlier batch's wait) holding ≥ 3 % of stall
    Evidence: the round trips' waits and the late loads
    Gain: 60–100 % of the late trips' share of the waves' lifetime; kernel time
    Fix: issue every kernel-argument `s_load` in the first batch, or preload the arguments"""
    limits = ctx.thresholds.of(LaunchThresholds)
    setup = ctx.structure.get("setup") or {}
    if (not setup.get("serialized_round_trips")
            or (setup.get("late_share") or 0) < limits.min_late_share):
        return []
    trips = setup["trips"]
    late = [t for t in trips if t["serialized"]]
    lifetime = _lifetime(ctx) or 1
    share = setup["late_stall_cycles"] / lifetime
    loads = sorted(i for t in late for i in t["loads"])
    waits = ", ".join(f"#{t['wait_index']}" for t in trips)
    low_part, high_part = limits.setup_removable
    gain = Gain(round(share * low_part, 4), round(min(1.0, share * high_part), 4),
                f"the serialized round trips' waits are {share:.1%} of the waves' lifetime; hoisting "
                f"removes {low_part:.0%}–{high_part:.0%} of them (hypothesis — verify by re-timing)",
                unit="kernel_time")
    first = trips[0]
    location = ctx.evidence(ctx.instructions[first["wait_index"]]).location \
        if first["wait_index"] in ctx.instructions else None
    return [ctx.finding(
        RULE_SETUP, setup["late_share"], id=RULE_SETUP, priority="MED",
        title=(f"{len(trips)} kernel-argument round trips, {len(late)} of them after an earlier "
               f"one's wait: hoist the late `s_load`s (rows {', '.join(map(str, loads[:8]))}) into "
               "the first batch"),
        estimated_gain=gain, location=location, scope="kernel", effort="low",
        root_cause=(f"The wave reads its kernel arguments from {', '.join(setup['bases'])} in "
                    f"{len(trips)} batches, each drained by its own `s_waitcnt lgkmcnt` ({waits}); "
                    f"the later batches are issued only after an earlier wait, though their address "
                    f"is the kernarg pointer itself (no data dependency on the first batch). Each is "
                    "a full scalar-memory round trip the wave sits through: "
                    f"{setup['late_stall_cycles']:,} stall cycles ({setup['late_share']:.0%} of all "
                    "stall) on the late ones."),
        fix=("Issue every kernel-argument `s_load` in the first batch, before the first wait (load "
             "the arguments a branch needs up front too), or preload them into SGPRs (kernarg "
             "preload, `.amdhsa_user_sgpr_kernarg_preload_length` on gfx942/gfx950): one round trip "
             "instead of several. Needs the SGPRs to stay live; check the SGPR count."),
        evidence=[ctx.evidence(ctx.instructions[t["wait_index"]],
                               f"round trip {k + 1}{' (serialized)' if t['serialized'] else ''}")
                  for k, t in enumerate(trips[:6]) if t["wait_index"] in ctx.instructions]
                 + [ctx.evidence(ctx.instructions[i], "late kernel-argument load")
                    for i in loads[:4] if i in ctx.instructions],
    )]


@plan_rule(id=RULE_BW, lever="memory-bytes", serves=("memory-bandwidth",), order=7,
           thresholds=(LaunchThresholds,))
def request_bandwidth(ctx: PlanContext) -> list[Finding]:
    """The requested bytes reach the HBM peak: only fewer bytes (or requests, or a better grid) help.

    Trigger: verdict `memory-bandwidth` decided from request bytes: `structure.traffic` (code.json
        × the grid over the kernel time), else the capture's own request rate per busy CU scaled
        to the GPU (`bandwidth`, analysis/bandwidth.py)
    Evidence: the costliest vector-memory instructions
    Gain: 10–40 % of the vector-memory stall
    Fix: move fewer bytes (reuse, narrower or compressed data, no re-reads), fewer and larger
        requests, a grid without a nearly empty last round; confirm with PMC counters"""
    limits = ctx.thresholds.of(LaunchThresholds)
    if ctx.verdict.kind != "memory-bandwidth":
        return []
    traffic = ctx.structure.get("traffic") or {}
    fraction = traffic.get("fraction_of_peak")
    estimate = bandwidth_estimate(ctx.hotspots, ctx.structure) if fraction is None else None
    if fraction is None and estimate is None:
        return []
    memory = ctx.type_share("VMEM-wait", "VMEM-load", "VMEM-store")
    low, high = memory * limits.fewer_bytes[0], memory * limits.fewer_bytes[1]
    per_wave = (traffic.get("load_bytes_per_wave") or 0) + (traffic.get("store_bytes_per_wave") or 0)
    if estimate is None:
        title = (f"Bandwidth-bound: {per_wave / 1024:.1f} KiB per wave × {traffic['grid_waves']:,} "
                 f"waves = {traffic['dispatch_bytes'] / 1e6:,.0f} MB requested in "
                 f"{ctx.structure['launch']['duration_ns'] / 1000:.1f} µs ({fraction:.0%} of HBM peak)")
        rate, peak = traffic["request_gbps"], traffic["peak_gbps"]
    else:
        title = (f"Bandwidth-bound: {estimate.bytes_per_wave / 1024:.1f} KiB per wave, "
                 f"{estimate.per_cu_bytes_per_clk:.1f} B/clk per busy CU ≈ "
                 f"{estimate.device_gbps / 1000:.1f} TB/s on {estimate.busy_cus} CUs "
                 f"({estimate.fraction_of_peak:.0%} of HBM peak, from the capture"
                 + (", all CUs assumed busy" if estimate.cus_assumed else "") + ")")
        rate, peak = estimate.device_gbps, estimate.peak_gbps
    tail = (ctx.structure.get("launch") or {}).get("tail_loss") or 0.0
    return [ctx.finding(
        RULE_BW, memory, id=RULE_BW, priority="HIGH",
        title=title,
        estimated_gain=Gain(round(low, 4), round(high, 4),
                            f"fewer bytes shorten the {memory:.0%} vector-memory stall by "
                            f"{limits.fewer_bytes[0]:.0%}–{limits.fewer_bytes[1]:.0%} (hypothesis)",
                            unit="stall_cycles"),
        scope="kernel", effort="medium",
        root_cause=(f"The kernel's loads and stores request {rate / 1000:.1f} TB/s against a "
                    f"{peak / 1000:.1f} TB/s HBM peak"
                    + (f" ({estimate.basis})" if estimate is not None else "")
                    + ": the memory path is saturated, so loads wait for it or cannot issue "
                    "(a full request queue is back-pressure), and prefetching or more waves only "
                    "queue more requests."),
        fix=("Move fewer bytes: reuse what is loaded (larger tiles, operands shared through LDS), "
             "narrower or compressed types, no re-reads of the same input, fusion with the "
             "producer or consumer kernel; issue fewer, larger requests (dwordx4); "
             + (f"make the grid a multiple of CUs × resident workgroups (the last round leaves "
                f"{tail:.0%} idle); " if tail else "check the grid's last round (tile count vs "
                "CUs × resident workgroups); ")
             + "capture PMC counters (TCC_EA_RDREQ) to confirm the HBM traffic."),
        evidence=[ctx.evidence(ins, "vector memory") for ins in sorted(
            (i for i in ctx.program_order if i.get("type") in ("VMEM-wait", "VMEM-load", "VMEM-store")
             and (i.get("stall_cycles") if i.get("stall_cycles") is not None
                  else i.get("latency_cycles"))),
            key=lambda i: -(i["stall_cycles"] if i.get("stall_cycles") is not None
                            else i.get("latency_cycles") or 0))[:4]],
    )]
