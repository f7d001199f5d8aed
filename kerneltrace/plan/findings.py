"""Finding dataclass (one plan item with evidence and a gain hypothesis) and its helpers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kerneltrace.sourceloc import short_location
from kerneltrace.thresholds import DEFAULT_GAINS, GainThresholds

PRIORITIES: tuple[str, ...] = ("HIGH", "MED", "LOW")
HYPOTHESIS = "hypothesis — verify by re-timing"


# Umbrella findings cover stall that line findings also explain; their share is not what a fix
# removes, so their titles say what the share counts.
SCOPES: dict[str, str] = {"line": "", "loop": "scope: whole loop", "kernel": "scope: whole kernel"}


def scoped_title(title: str, scope: str, share_of: str) -> str:
    """`title (scope: whole kernel; share = all …)` for loop- and kernel-wide findings."""
    return f"{title} ({SCOPES[scope]}; share = {share_of})" if SCOPES.get(scope) else title


@dataclass(frozen=True)
class Evidence:
    """One instruction (or line) that supports a finding, with its measured cost."""

    location: str | None
    instruction_index: int | None
    asm: str = ""
    stall_cycles: int | None = None
    stall_rate: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Gain:
    """Estimated reduction, as a fraction range [low, high] of ``unit``: the kernel's stall
    cycles (a hypothesis), or its kernel time once calibrated against re-timed pairs."""

    low: float
    high: float
    basis: str
    status: str = HYPOTHESIS
    # "stall_cycles" | "kernel_time" (plan/gains.py CALIBRATED) | "latency_cycles" (captures
    # without stall) | "wave_time" (a share of the traced waves' lifetime); only like units add up
    unit: str = "stall_cycles"
    # a calibrated gain keeps the stall-cycle upper end it replaced, so that calibrating one
    # kind of finding does not reorder it among the (stall-cycle) hypotheses
    ranking: float | None = None

    @property
    def rank_value(self) -> float:
        return self.high if self.ranking is None else self.ranking

    @classmethod
    def of_wave_time(cls, share: float, parts: tuple[float, float], what: str,
                     change: str) -> Gain:
        """`parts` of a `share` of the waves' time (a hypothesis): `what` is that share, `change`
        removes those parts of it."""
        low, high = parts
        return cls(round(share * low, 4), round(share * high, 4),
                   f"{what} {share:.1%} of the waves' time; {change} removes {low:.0%}–{high:.0%} "
                   "of it (hypothesis)", unit="wave_time")


@dataclass
class Finding:
    """One plan item: what is wrong, why, how to fix it, what it may gain, and the evidence."""

    id: str
    rule: str
    title: str
    priority: str
    stall_share: float
    estimated_gain: Gain | None
    root_cause: str
    fix: str
    schematic: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    location: str | None = None
    effort: str = "medium"
    ranked: bool = True  # False for artifacts that are explained but excluded from the ranking
    scope: str = "line"  # what stall_share is a share of: "line" | "loop" | "kernel" (SCOPES)
    # set by kerneltrace.plan.gains.bound_findings
    overlap_group: str | None = None  # id of the first finding claiming the same stall cycles
    contradicts_verdict: bool = False  # its lever is ruled out by the bottleneck verdict
    verdict_aligned: bool = False  # the finding that states the verdict's own lever
    once_per_wave: bool = False  # every evidence instruction runs at most once per wave
    # set by kerneltrace.plan.dependencies: the def-use checks of a fix that reorders
    dependencies: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.priority not in PRIORITIES:
            raise ValueError(f"priority must be one of {PRIORITIES}, not {self.priority!r}")
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {tuple(SCOPES)}, not {self.scope!r}")

    def to_dict(self) -> dict:
        return asdict(self)


def make_finding(rule: str, share: float, *, limits: GainThresholds = DEFAULT_GAINS,
                 location: str | None = None, priority: str | None = None,
                 cap: str | None = None, id: str | None = None, **fields: Any) -> Finding:
    """The one way rules build a Finding (through `PlanContext.finding`): `stall_share` is the
    rounded `share`; the id is rule@location unless given; without an explicit `priority` it
    follows the share, never above `cap` (default: MED without a location — nothing to point
    the reader at — else HIGH)."""
    if priority is None:
        priority = priority_for_share(share, cap=cap or ("HIGH" if location else "MED"),
                                      limits=limits)
    return Finding(id=finding_id(rule, location) if id is None else id, rule=rule,
                   location=location, priority=priority, stall_share=round(share, 4), **fields)


def priority_for_share(share: float, *, cap: str = "HIGH",
                       limits: GainThresholds = DEFAULT_GAINS) -> str:
    """HIGH/MED/LOW from a share of all stall cycles (`limits.high_share`/`med_share`), never
    above ``cap``."""
    if share >= limits.high_share:
        level = "HIGH"
    elif share >= limits.med_share:
        level = "MED"
    else:
        level = "LOW"
    return max(level, cap, key=PRIORITIES.index)


def hiding_gain(share: float, hideable_low: float, hideable_high: float, what: str) -> Gain:
    """Gain from hiding a fraction of a stall share; the basis spells the arithmetic out."""
    low, high = share * hideable_low, share * hideable_high
    basis = (
        f"hiding {hideable_low:.0%}–{hideable_high:.0%} of {what} "
        f"({share:.1%} of all stall cycles × fraction hideable); stall cycles are summed over "
        f"traced waves, so wall-time gain is at most this"
    )
    return Gain(low=round(low, 4), high=round(high, 4), basis=basis)


def finding_id(rule: str, location: str | None) -> str:
    return f"{rule}@{short_location(location)}" if location is not None else rule




def rank_score(finding: Finding) -> float:
    """What the ranking sorts by (one currency, issue 21.1): the kernel-time gain's high end,
    weighted by the fix's effort (when gains are comparable, the local fix goes first)."""
    gain = finding.estimated_gain
    low, medium, high = DEFAULT_GAINS.effort_weight
    weight = {"low": low, "none": low, "medium": medium, "high": high}.get(finding.effort, medium)
    return (gain.rank_value if gain else 0.0) * weight


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Ranked first, findings the verdict rules out last among them, then the rank score
    (desc), stall share (desc); ties keep their rule order. One currency (issue 21.1): the
    verdict's own finding leads only by its own kernel-time gain, never because it matches the
    verdict (a 0.1 % MFMA chain under an MFMA-bound verdict, a 3 % exp guard under a VALU one,
    stood first before). Priority follows the same gain."""
    order = sorted(
        enumerate(findings),
        key=lambda pair: (
            not pair[1].ranked,
            pair[1].contradicts_verdict,
            -rank_score(pair[1]),
            -pair[1].stall_share,
            pair[0],
        ),
    )
    return [finding for _, finding in order]


def lines_before_umbrellas(findings: list[Finding],
                           carries: float = DEFAULT_GAINS.umbrella_line_share,
                           names_its_rows: frozenset[str] = frozenset()) -> list[Finding]:
    """An umbrella (a loop- or kernel-scope finding citing instructions) and the line finding
    that carries most of its cited stall, among those claiming at least `carries` of its
    kernel-time gain on the same instructions, are one change stated twice: the scope-wide view
    and the instruction to edit. The line takes the umbrella's place and the umbrella follows
    it, so the plan never leads with an umbrella over the line that carries its cycles (nor with
    a barrier finding over the line of the straggler's wait it blames: the cause first). Only
    the order changes: each keeps the priority of its own kernel-time gain (one currency). An
    umbrella whose cycles are spread over lines that each claim less is the only finding naming
    that set and keeps its rank; the verdict's own finding keeps its place (it states the bound),
    and so does an umbrella whose rule is in `names_its_rows` (it names the rows to change itself:
    the SETUP finding's late loads, not the first round trip's wait its evidence also shows)."""
    out = list(findings)
    for umbrella in [f for f in findings if f.ranked and f.scope != "line" and f.estimated_gain
                     and not f.verdict_aligned and not f.contradicts_verdict
                     and f.rule not in names_its_rows]:
        stall = {e.instruction_index: e.stall_cycles or 0 for e in umbrella.evidence
                 if e.instruction_index is not None}
        floor = carries * umbrella.estimated_gain.high

        def covered(line: Finding, stall: dict = stall) -> int:
            return sum(stall.get(i, 0) for i in {e.instruction_index for e in line.evidence})

        lines = [f for f in out if f.ranked and f.scope == "line" and f.estimated_gain
                 and not f.contradicts_verdict and f.estimated_gain.high >= floor
                 and stall.keys() & {e.instruction_index for e in f.evidence}]
        if not lines:
            continue
        lead = max(lines, key=covered)  # the line carrying most of the umbrella's cited stall
        if out.index(lead) > out.index(umbrella):
            out.remove(lead)
            out.insert(out.index(umbrella), lead)
    return out


def dedupe_ids(findings: list[Finding]) -> list[Finding]:
    """Make ids unique by suffixing `#2`, `#3` in the given order (stable across runs)."""
    seen: dict[str, int] = {}
    for finding in findings:
        count = seen.get(finding.id, 0) + 1
        seen[finding.id] = count
        if count > 1:
            finding.id = f"{finding.id}#{count}"
    return findings


def merge_duplicates(findings: list[Finding]) -> list[Finding]:
    """One finding per line and stall: a ranked finding citing the same line and at least half
    of the same instructions as an earlier, larger one is folded into it (its title kept as a
    note), so the same cycles are never listed twice on one line."""
    kept: list[Finding] = []
    for finding in sorted(findings, key=lambda f: -f.stall_share):
        cited = {e.instruction_index for e in finding.evidence if e.instruction_index is not None}
        twin = next(
            (
                k for k in kept
                if finding.ranked and k.ranked and finding.scope == k.scope == "line"
                and finding.location and k.location == finding.location
                and cited and len(cited & {e.instruction_index for e in k.evidence}) * 2 >= len(cited)
            ),
            None,
        )
        if twin is None:
            kept.append(finding)
        else:
            twin.root_cause = f"{twin.root_cause} Also on this line: {finding.title} ({finding.rule})."
    order = {id(f): i for i, f in enumerate(findings)}
    return sorted(kept, key=lambda f: order[id(f)])
