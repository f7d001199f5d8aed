"""What a plan rule is: one self-describing `PlanRule` (facts, inputs, thresholds, docs text, apply).

A rule is its `apply` function decorated with `@plan_rule(...)` in the module of its family
(`kerneltrace/plan/rules/NAME.py`): the decorator takes the facts (id, lever, verdicts served,
calibration, inputs, thresholds concerns, run order) and reads the documentation from the
function's docstring — its first paragraph is the title, then the sections `Trigger:`,
`Evidence:`, `Gain:` and `Fix:`, all required. The registry (`plan/rules/__init__.py`) finds
every `PlanRule` and builds every table the plan consults (levers, verdict alignment,
calibration, attribution, the docs catalogue) from these fields — nothing about a rule is keyed
by its id anywhere else. A rule that can emit another finding id (mutually exclusive
alternatives, e.g. S1 in or outside the hot loop) lists it in `variants`, each with its own
lever and verdicts.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# What a finding's fix acts on (kerneltrace/plan/gains.py weighs it against the verdict).
# "line" / "region": decided per finding from the dominant type of its evidence.
LEVERS = frozenset({
    "memory-pipeline", "memory-latency", "memory-bytes", "occupancy", "sync", "compute", "issue",
    "prologue", "setup-latency", "tail", "register-pressure", "line", "region", "none",
    "launch", "setup-round-trips",
})
# What a rule reads: the hotspot document (always there), its `waves` section (hotspots/2), PMC
# counters (the L2 document), the launch (grid, workgroups, CU count).
INPUTS = frozenset({"hotspots", "waves", "counters", "launch"})
VERDICT_KINDS = frozenset({
    "launch-bound", "latency-only", "compute-mfma", "compute-valu", "memory-bandwidth", "memory-streaming",
    "synchronisation", "issue-dependency", "prologue", "tail", "memory-latency", "mixed",
})
# When the rule runs: in the main pass (`rules`), or as a step of the findings pipeline
# (`fallback`: kerneltrace/plan/pipeline.py calls it with its own arguments).
STAGES = ("rules", "fallback")


@dataclass(frozen=True)
class FindingKind:
    """A finding id a rule emits, with what the plan needs to weigh it."""

    id: str  # the Finding.rule value
    lever: str  # what its fix acts on (LEVERS)
    serves: tuple[str, ...] = ()  # verdict kinds whose own finding this is (HIGH, leads)
    calibrated: bool = False  # its gain is stated in kernel time from re-timed pairs (gains.py)
    attribution: bool = False  # carries stall charged to another line: it covers no line


@dataclass(frozen=True)
class PlanRule:
    """One plan rule: what it finds, what it needs, what it judges by, how to fix, and apply."""

    id: str  # the Finding.rule value of its main finding
    title: str  # one line: what the rule finds
    family: str  # its module under kerneltrace/plan/rules/
    lever: str  # LEVERS
    serves: tuple[str, ...]  # verdict kinds whose own finding this is
    calibrated: bool
    requires: frozenset[str]  # INPUTS the rule cannot run without
    optional: frozenset[str]  # INPUTS it uses when present
    thresholds: tuple[type, ...]  # the thresholds concerns it reads (kerneltrace/thresholds.py)
    trigger: str  # docs: when it fires
    evidence: str  # docs: what it cites
    gain_basis: str  # docs: what its gain estimate is
    advice: str  # docs: the fix, in one line
    apply: Callable  # PlanContext → list[Finding] (stage "fallback": the pipeline's arguments)
    order: int  # position in the run (ties in the ranking keep run order)
    stage: str = "rules"
    attribution: bool = False
    variants: tuple[FindingKind, ...] = ()

    @property
    def kinds(self) -> tuple[FindingKind, ...]:
        """Every finding id the rule may emit: its own, then the variants."""
        own = FindingKind(self.id, self.lever, self.serves, self.calibrated, self.attribution)
        return (own, *self.variants)

    def __call__(self, *args, **kwargs):
        return self.apply(*args, **kwargs)


SECTIONS = {"Trigger": "trigger", "Evidence": "evidence", "Gain": "gain_basis", "Fix": "advice"}
_SECTION = re.compile(rf"^({'|'.join(SECTIONS)}):\s*(.*)$")


def docstring_fields(apply: Callable) -> dict[str, str]:
    """title, trigger, evidence, gain_basis, advice from a rule's docstring (ValueError when a
    section is missing: a rule without its documentation does not import)."""
    text = inspect.cleandoc(apply.__doc__ or "")
    title, _, rest = text.partition("\n\n")
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in rest.splitlines():
        match = _SECTION.match(line.strip())
        if match:
            current = found.setdefault(SECTIONS[match.group(1)], [])
            current.append(match.group(2))
        elif current is not None:
            current.append(line.strip())
    missing = [name for name, field in SECTIONS.items() if not " ".join(found.get(field, [])).strip()]
    if not title.strip() or missing:
        raise ValueError(f"plan rule {apply.__module__}.{apply.__name__}: its docstring needs a "
                         f"title paragraph and the sections {', '.join(missing) or 'above'}")
    fields = {field: " ".join(part for part in lines if part).strip()
              for field, lines in found.items()}
    return {"title": " ".join(title.split()), **fields}


def plan_rule(*, id: str, lever: str, order: int, thresholds: tuple[type, ...],
              serves: tuple[str, ...] = (), calibrated: bool = False,
              requires: Iterable[str] = ("hotspots",), optional: Iterable[str] = (),
              stage: str = "rules", attribution: bool = False,
              variants: tuple[FindingKind, ...] = ()) -> Callable[[Callable], PlanRule]:
    """Make the decorated function a PlanRule (its docstring is its documentation)."""
    def wrap(apply: Callable) -> PlanRule:
        return PlanRule(id=id, family=apply.__module__.rsplit(".", 1)[-1], lever=lever,
                        serves=tuple(serves), calibrated=calibrated,
                        requires=frozenset(requires), optional=frozenset(optional),
                        thresholds=tuple(thresholds), apply=apply, order=order, stage=stage,
                        attribution=attribution, variants=tuple(variants),
                        **docstring_fields(apply))
    return wrap
