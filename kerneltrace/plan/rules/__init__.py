"""Rule registry: every `PlanRule` of the modules in this package, and the tables built from them.

A rule is a function decorated with `@plan_rule` in any module of this package
(kerneltrace/plan/spec.py says what a rule is); this package finds every module and every rule
in it, so adding a rule is one file plus its test. The tables below
(lever, verdict alignment, calibration, attribution, the thresholds concerns) are derived from the
specs only; `spec_for` raises on an unknown finding id instead of guessing a default.
"""

from __future__ import annotations

import importlib
import pkgutil

from kerneltrace.plan.spec import FindingKind, PlanRule
from kerneltrace.thresholds import CORE_CONCERNS, Table


def _discover() -> list[PlanRule]:
    found: list[PlanRule] = []
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_"):
            continue
        name = f"{__name__}.{module.name}"
        found.extend(value for value in vars(importlib.import_module(name)).values()
                     if isinstance(value, PlanRule) and value.apply.__module__ == name)
    return sorted(found, key=lambda rule: rule.order)


ALL_RULES: tuple[PlanRule, ...] = tuple(_discover())
RULES: tuple[PlanRule, ...] = tuple(rule for rule in ALL_RULES if rule.stage == "rules")
KINDS: dict[str, FindingKind] = {kind.id: kind for rule in ALL_RULES for kind in rule.kinds}
RULE_OF: dict[str, PlanRule] = {kind.id: rule for rule in ALL_RULES for kind in rule.kinds}

LEVERS: dict[str, str] = {kind_id: kind.lever for kind_id, kind in KINDS.items()}
VERDICT_RULES: dict[str, frozenset[str]] = {
    verdict: frozenset(k.id for k in KINDS.values() if verdict in k.serves)
    for verdict in sorted({v for k in KINDS.values() for v in k.serves})
}
CALIBRATED_RULES = frozenset(k.id for k in KINDS.values() if k.calibrated)
ATTRIBUTION_RULES = frozenset(k.id for k in KINDS.values() if k.attribution)
WAVE_RULES = frozenset(k.id for r in ALL_RULES for k in r.kinds if "waves" in r.requires)

# every thresholds concern the plan reads: the shared ones, then each family's own
CONCERNS: dict[str, type] = dict(CORE_CONCERNS)
for _rule in ALL_RULES:
    for _kind in _rule.thresholds:
        CONCERNS.setdefault(_kind.CONCERN, _kind)
DEFAULT_TABLE = Table.defaults(CONCERNS)


def spec_for(rule_id: str) -> FindingKind:
    """The kind of finding `rule_id` is; KeyError names the missing spec."""
    try:
        return KINDS[rule_id]
    except KeyError:
        raise KeyError(f"finding rule {rule_id!r} has no PlanRule spec (kerneltrace/plan/rules/)") from None


def rule_named(rule_id: str) -> PlanRule:
    return RULE_OF[rule_id]
