"""The expert annotations of the real shared captures (tests/data/expert_annotations.yaml) and
the check of one plan against one annotation (issue 21.9: verdict, first two findings, ruled out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ANNOTATIONS = Path(__file__).parent / "data" / "expert_annotations.yaml"
# the bounds an annotation may name (plan/verdict.py kinds)
KNOWN_KINDS = ("launch-bound", "compute-mfma", "compute-valu", "memory-bandwidth", "memory-streaming",
               "synchronisation", "issue-dependency", "prologue", "tail", "memory-latency",
               "latency-only", "mixed")


@dataclass(frozen=True)
class Target:
    """What a finding may point at: evidence rows, or a rule-id prefix."""

    rows: frozenset[int] = frozenset()
    rules: tuple[str, ...] = ()

    def hit(self, finding: dict) -> bool:
        cited = {e.get("instruction_index") for e in finding.get("evidence") or []}
        return bool(cited & self.rows) or finding["rule"].startswith(self.rules or ("\0",))


@dataclass(frozen=True)
class Annotation:
    name: str
    dir: str
    verdict: tuple[str, ...]
    first: Target
    second: Target
    not_first: tuple[str, ...]
    reading: str
    measured: dict = field(default_factory=dict)
    group: str = "captures"


def _target(raw: dict | None) -> Target:
    raw = raw or {}
    return Target(frozenset(raw.get("rows") or ()), tuple(raw.get("rules") or ()))


def load_annotations() -> list[Annotation]:
    import yaml

    data = yaml.safe_load(ANNOTATIONS.read_text(encoding="utf-8"))
    out = []
    for group in ("captures", "calibration"):
        for raw in data[group]:
            first = _target(raw["first"])
            second = _target(raw.get("second"))
            out.append(Annotation(
                name=raw["name"], dir=raw["dir"], verdict=tuple(raw["verdict"]), first=first,
                second=Target(first.rows | second.rows, first.rules + second.rules),
                not_first=tuple(raw.get("not_first") or ()), reading=raw.get("reading", ""),
                measured=raw.get("measured") or {}, group=group))
    return out


def check(annotation: Annotation, dispatch: dict) -> list[str]:
    """Every way one summary dispatch entry disagrees with the annotation ([] = agrees)."""
    problems = []
    kind = (dispatch.get("bottleneck") or {}).get("kind")
    if kind not in annotation.verdict:
        problems.append(f"verdict {kind!r} not in {list(annotation.verdict)}")
    ranked = [f for f in dispatch.get("findings") or [] if f.get("ranked", True)]
    if not ranked:
        return [*problems, "no ranked finding"]
    first = ranked[0]
    if first["rule"].startswith(annotation.not_first or ("\0",)):
        problems.append(f"first finding {first['rule']} is ruled out")
    if not annotation.first.hit(first):
        problems.append(f"first finding {first['rule']} ({first['title'][:60]}) misses the target")
    # a LOW second finding is not a change the engineer makes: the plan has one thing to do
    if len(ranked) > 1 and ranked[1].get("priority") != "LOW" and not annotation.second.hit(ranked[1]):
        problems.append(f"second finding {ranked[1]['rule']} ({ranked[1]['title'][:60]}) misses")
    return problems
