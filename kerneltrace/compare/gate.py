"""When a before/after change is a regression: thresholds, their parsing, fired checks, verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from kerneltrace.errors import InputError
from kerneltrace.thresholds import DEFAULT_GATE, GateThresholds

# The gate thresholds are the `gate` concern of the thresholds table (kerneltrace/thresholds.py).
Thresholds = GateThresholds


DEFAULT_THRESHOLDS = DEFAULT_GATE


def parse_thresholds(spec: str | Mapping[str, Any] | None,
                     base: Thresholds = DEFAULT_THRESHOLDS, where: str = "--fail-on") -> Thresholds:
    """Override ``base`` from ``"total_stall=5%,line_stall=20%"`` or a mapping (``where``: the
    option or config key errors name).

    Values: ``5%`` or ``0.05`` for fractions, plain numbers for ``min_stall_per_wave``,
    ``off``/``none`` to disable a check.
    """
    if spec is None or spec == "":
        return base
    if isinstance(spec, Mapping):
        items = [(str(k), v) for k, v in spec.items()]
    else:
        items = []
        for part in str(spec).split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise InputError(f"threshold '{part}' has no value", where,
                                 "write NAME=VALUE, e.g. total_stall=5%,line_stall=20%")
            name, value = part.split("=", 1)
            items.append((name.strip(), value.strip()))
    known = {f.name for f in fields(Thresholds)}
    changes: dict[str, float | None] = {}
    for name, value in items:
        if name not in known:
            raise InputError(f"unknown threshold '{name}'", where,
                             f"use one of: {', '.join(sorted(known))}")
        changes[name] = _parse_value(name, value, where)
    return replace(base, **changes)


def _parse_value(name: str, value: Any, where: str) -> float | None:
    if isinstance(value, str) and not value.strip():
        raise InputError(f"threshold {name}= has no value", where,
                         f"write {name}=5% (a percentage), {name}=0.05 (a fraction) or {name}=off")
    # YAML reads a bare `off` as False (config files, --config): treat it as "off" too.
    if value is None or value is False or (
            isinstance(value, str) and value.lower() in ("off", "none")):
        if name in ("min_stall_per_wave", "min_share", "hotspot_share", "time_change",
                    "time_noise"):
            return 0.0
        return None
    try:
        if value is True:
            raise ValueError(value)
        if isinstance(value, str) and value.endswith("%"):
            number = float(value[:-1]) / 100.0
        else:
            number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"threshold {name}={value!r} is not a number", where,
                         "use a percentage (5%), a fraction (0.05) or 'off'") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"threshold {name}={value!r} must be a finite number >= 0", where,
                         "use a non-negative value")
    return number


def checks_fired(th, total_stall, by_type, line_items, instr_pairs, total_before_pw):
    checks = []
    floor_total = th.min_stall_per_wave
    # Items (lines, types, instructions) must also move a noticeable share of the whole kernel.
    floor_item = max(th.min_stall_per_wave, th.min_share * total_before_pw)

    def judge(name, key, rel, delta_pw, threshold, floor):
        if threshold is None:
            return
        outcome = "neutral"
        if delta_pw >= floor and (rel is None or rel >= threshold):
            outcome = "regressed"
        elif -delta_pw >= floor and rel is not None and rel <= -threshold:
            outcome = "improved"
        checks.append({"check": name, "key": key, "relative": rel, "delta_per_wave": delta_pw,
                       "threshold": threshold, "floor_per_wave": floor, "outcome": outcome})

    judge("total_stall", "total", total_stall["relative_per_wave"],
          total_stall["delta_per_wave"], th.total_stall, floor_total)
    for row in by_type:
        judge("type_stall", row["type"], row["relative_per_wave"], row["delta_per_wave"],
              th.type_stall, floor_item)
    for row in line_items:
        if row["status"] == "matched":
            judge("line_stall", row["location"], row["relative_per_wave"], row["delta_per_wave"],
                  th.line_stall, floor_item)
    for entry in instr_pairs:
        if entry["status"] == "matched":
            judge("instruction_stall", entry["key"], entry["relative_per_wave"],
                  entry["delta_per_wave"], th.instruction_stall, floor_item)
    # Keep the document small: every fired check, plus the total check whatever its outcome.
    return [c for c in checks if c["outcome"] != "neutral" or c["check"] == "total_stall"]


def verdict_of(checks: list[dict]) -> tuple[str, list[str]]:
    regressed = [c for c in checks if c["outcome"] == "regressed"]
    reasons = [reason_text(c) for c in regressed]
    if regressed:
        return "regressed", reasons
    total = next((c for c in checks if c["check"] == "total_stall"), None)
    if total is not None and total["outcome"] == "improved":
        return "improved", [reason_text(total)]
    return "neutral", []


def reason_text(check: Mapping[str, Any]) -> str:
    rel = check["relative"]
    rel_text = "new" if rel is None else f"{rel:+.1%}"
    return (f"{check['check']} {check['key']}: {rel_text} "
            f"({check['delta_per_wave']:+.1f} stall cycles/wave; threshold "
            f"{check['threshold']:.0%}, floor {check['floor_per_wave']:.1f}/wave)")
