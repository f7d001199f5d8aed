"""Before/after comparison of two hotspot (or summary) documents: deltas, alignment, verdict."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from kerneltrace.errors import InputError
from kerneltrace.isa.classify import opcode
from kerneltrace.sourceloc import UNMAPPED
from kerneltrace.sourceloc import innermost_location as innermost

SCHEMA = "kerneltrace.compare/1"
ALIGNMENT_METHOD = (
    "difflib.SequenceMatcher (autojunk off) over the opcode tokens of both instruction "
    "sequences in program order; 'equal' blocks pair instructions, every other block counts "
    "as deleted (before) / inserted (after)"
)
TOTAL_METRICS = ("stall_cycles", "latency_cycles", "idle_cycles", "hits", "executed_instructions")
# Totals that grow with the number of traced waves (and so are normalized per wave).
PER_WAVE_METRICS = ("stall_cycles", "latency_cycles", "idle_cycles", "hits")
UNALIGNED = "<not aligned>"


@dataclass(frozen=True)
class Thresholds:
    """When a change counts as a regression (or improvement); relative values are fractions.

    A check fires only when the relative change reaches its threshold AND the absolute change
    clears the floor, so tiny kernels and cold lines do not flip the verdict on noise.
    ``None`` disables a check.
    """

    total_stall: float | None = 0.10  # per-wave total stall cycles, relative change
    line_stall: float | None = 0.25  # per-wave stall of one matched source line, relative change
    type_stall: float | None = None  # per-wave stall of one stall type, relative change
    instruction_stall: float | None = None  # per-wave stall of one aligned instruction
    min_stall_per_wave: float = 50.0  # absolute floor for every check, stall cycles per wave
    min_share: float = 0.02  # line/type/instruction delta must be >= this share of before total
    hotspot_share: float = 0.05  # share of total stall at which a line/instruction is a hotspot

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


DEFAULT_THRESHOLDS = Thresholds()
_FRACTION_KEYS = ("total_stall", "line_stall", "type_stall", "instruction_stall", "min_share",
                  "hotspot_share")


def parse_thresholds(spec: str | Mapping[str, Any] | None,
                     base: Thresholds = DEFAULT_THRESHOLDS) -> Thresholds:
    """Override ``base`` from ``"total_stall=5%,line_stall=20%"`` or a mapping.

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
                raise InputError(f"threshold '{part}' has no value", "--fail-on",
                                 "write NAME=VALUE, e.g. total_stall=5%,line_stall=20%")
            name, value = part.split("=", 1)
            items.append((name.strip(), value.strip()))
    known = {f.name for f in fields(Thresholds)}
    changes: dict[str, float | None] = {}
    for name, value in items:
        if name not in known:
            raise InputError(f"unknown threshold '{name}'", "--fail-on",
                             f"use one of: {', '.join(sorted(known))}")
        changes[name] = _parse_value(name, value)
    return replace(base, **changes)


def _parse_value(name: str, value: Any) -> float | None:
    # YAML reads a bare `off` as False (config files, --config): treat it as "off" too.
    if value is None or value is False or (
            isinstance(value, str) and value.lower() in ("off", "none", "")):
        if name in ("min_stall_per_wave", "min_share", "hotspot_share"):
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
        raise InputError(f"threshold {name}={value!r} is not a number", "--fail-on",
                         "use a percentage (5%), a fraction (0.05) or 'off'") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"threshold {name}={value!r} must be a finite number >= 0", "--fail-on",
                         "use a non-negative value")
    return number


# ---------------------------------------------------------------------------- helpers


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _relative(before: float, after: float) -> float | None:
    if before == 0:
        return 0.0 if after == 0 else None
    return (after - before) / before


def _delta(before: float, after: float, scale_before: float, scale_after: float) -> dict:
    """Raw and per-wave delta of one quantity (scales are traced-wave counts or 1)."""
    before_pw, after_pw = before / scale_before, after / scale_after
    return {
        "before": before,
        "after": after,
        "delta": after - before,
        "relative": _relative(before, after),
        "before_per_wave": before_pw,
        "after_per_wave": after_pw,
        "delta_per_wave": after_pw - before_pw,
        "relative_per_wave": _relative(before_pw, after_pw),
    }


def traced_waves(doc: Mapping[str, Any]) -> tuple[int | None, str]:
    """Number of traced waves of a hotspot document, and how it was found.

    Prefer the wave analysis (``waves`` object of /2 documents); otherwise the hit count of the
    kernel's first executed instruction: every wave executes the entry instruction exactly once.
    """
    waves = doc.get("waves")
    if isinstance(waves, Mapping):
        for key in ("count", "wave_count", "traced_waves", "n_waves"):
            value = waves.get(key)
            if isinstance(value, int) and value > 0:
                return value, f"waves.{key}"
    ordered = _program_order(doc)
    for instr in ordered:
        hits = instr.get("hits")
        if isinstance(hits, int) and hits > 0:
            return hits, "hits of the first executed instruction"
    return None, "unknown (no executed instruction)"


def _program_order(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    instrs = doc.get("instructions") or []
    return sorted(instrs, key=lambda item: (item.get("index") is None, item.get("index") or 0))


def _mapped_fraction(doc: Mapping[str, Any]) -> float:
    mapping = doc.get("source_mapping")
    if isinstance(mapping, Mapping) and isinstance(mapping.get("mapped_fraction"), int | float):
        return float(mapping["mapped_fraction"])
    instrs = doc.get("instructions") or []
    if not instrs:
        return 0.0
    return sum(1 for item in instrs if item.get("source")) / len(instrs)


def _check_hotspot_doc(doc: Any, side: str) -> None:
    if not isinstance(doc, Mapping):
        raise InputError("is not a JSON object", side, "pass a kerneltrace.hotspots document")
    schema = str(doc.get("schema", ""))
    if not schema.startswith("kerneltrace.hotspots/"):
        raise InputError(f"schema '{schema}' is not a hotspot document", side,
                         "pass the JSON written by scripts/hotspot_analyzer.py --json")
    if not isinstance(doc.get("totals"), Mapping) or not isinstance(doc.get("instructions"), list):
        raise InputError("hotspot document lacks 'totals' or 'instructions'", side,
                         "re-run scripts/hotspot_analyzer.py to regenerate it")


# ---------------------------------------------------------------------------- alignment


@dataclass(frozen=True)
class Alignment:
    """Pairs of (before position, after position) in program order; None = no partner."""

    pairs: list[tuple[int | None, int | None]]
    matched: int
    deleted: int
    inserted: int
    identical: bool


def align_opcodes(before_tokens: list[str], after_tokens: list[str]) -> Alignment:
    """Align two opcode sequences (PCs move between builds; opcode order is what survives)."""
    if before_tokens == after_tokens:
        pairs: list[tuple[int | None, int | None]] = [(i, i) for i in range(len(before_tokens))]
        return Alignment(pairs, len(pairs), 0, 0, True)
    # Trim the common prefix and suffix first: SequenceMatcher is quadratic on repetitive code.
    prefix = 0
    limit = min(len(before_tokens), len(after_tokens))
    while prefix < limit and before_tokens[prefix] == after_tokens[prefix]:
        prefix += 1
    suffix = 0
    while (suffix < limit - prefix
           and before_tokens[-1 - suffix] == after_tokens[-1 - suffix]):
        suffix += 1
    mid_before = before_tokens[prefix:len(before_tokens) - suffix]
    mid_after = after_tokens[prefix:len(after_tokens) - suffix]
    pairs = [(i, i) for i in range(prefix)]
    matcher = difflib.SequenceMatcher(None, mid_before, mid_after, autojunk=False)
    for tag, b0, b1, a0, a1 in matcher.get_opcodes():
        if tag == "equal":
            pairs.extend((prefix + b0 + k, prefix + a0 + k) for k in range(b1 - b0))
        else:
            pairs.extend((prefix + k, None) for k in range(b0, b1))
            pairs.extend((None, prefix + k) for k in range(a0, a1))
    offset_before = len(before_tokens) - suffix
    offset_after = len(after_tokens) - suffix
    pairs.extend((offset_before + k, offset_after + k) for k in range(suffix))
    matched = sum(1 for b, a in pairs if b is not None and a is not None)
    deleted = sum(1 for b, a in pairs if a is None)
    inserted = sum(1 for b, a in pairs if b is None)
    return Alignment(pairs, matched, deleted, inserted, False)


def _stable_keys(tokens: list[str]) -> list[str]:
    """``opcode#k``: the k-th occurrence of that opcode in program order (PC-independent)."""
    seen: dict[str, int] = {}
    keys = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        keys.append(f"{token}#{seen[token]}")
    return keys


# ---------------------------------------------------------------------------- hotspot compare


def compare(before: Mapping[str, Any], after: Mapping[str, Any],
            thresholds: Thresholds | None = None, *, max_items: int = 50,
            l2_before: Mapping[str, Any] | None = None,
            l2_after: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Compare two hotspot documents (one kernel dispatch each) → kerneltrace.compare/1."""
    th = thresholds or DEFAULT_THRESHOLDS
    _check_hotspot_doc(before, "BEFORE")
    _check_hotspot_doc(after, "AFTER")
    notes: list[str] = []
    if before.get("kernel") and after.get("kernel") and before["kernel"] != after["kernel"]:
        notes.append(f"different kernels: '{before['kernel']}' vs '{after['kernel']}'")

    waves_before, waves_source_before = traced_waves(before)
    waves_after, waves_source_after = traced_waves(after)
    if waves_before and waves_after:
        scale_before, scale_after = float(waves_before), float(waves_after)
        basis = "per_wave"
        if waves_before != waves_after:
            notes.append(f"traced waves differ ({waves_before} vs {waves_after}): cycle sums are "
                         "compared per traced wave")
    else:
        scale_before = scale_after = 1.0
        basis = "none"
        notes.append("traced wave count unknown: raw sums compared without normalization")

    totals_before, totals_after = before["totals"], after["totals"]
    totals = {}
    for metric in TOTAL_METRICS:
        per_wave = metric in PER_WAVE_METRICS
        totals[metric] = _delta(_num(totals_before.get(metric)), _num(totals_after.get(metric)),
                                scale_before if per_wave else 1.0,
                                scale_after if per_wave else 1.0)
    total_stall_before_pw = totals["stall_cycles"]["before_per_wave"]
    total_stall_after_pw = totals["stall_cycles"]["after_per_wave"]

    by_type = _compare_types(before, after, scale_before, scale_after,
                             total_stall_before_pw, total_stall_after_pw)
    alignment, instr_section, instr_pairs = _compare_instructions(
        before, after, scale_before, scale_after, max_items)
    lines = _compare_lines(before, after, scale_before, scale_after, instr_pairs, alignment)
    hotspots = _hotspot_changes(lines, instr_pairs, th, total_stall_before_pw,
                                total_stall_after_pw)
    occupancy = _compare_occupancy(before.get("occupancy"), after.get("occupancy"))
    l2 = compare_metrics(l2_before, l2_after)

    checks = _checks(th, totals["stall_cycles"], by_type, lines["items"], instr_pairs,
                     total_stall_before_pw)
    verdict, reasons = _verdict(checks)
    if lines["status"] != "matched" and lines.get("reason"):
        notes.append(lines["reason"])
    if occupancy.get("changed"):
        notes.append(f"occupancy changed: {occupancy['before'].get('waves_per_simd')} → "
                     f"{occupancy['after'].get('waves_per_simd')} waves/SIMD")
    lines_out = dict(lines)
    lines_out["items"] = lines["items"][:max_items] if max_items else lines["items"]
    lines_out["count"] = len(lines["items"])
    return {
        "schema": SCHEMA,
        "kind": "hotspots",
        "verdict": verdict,
        "reasons": reasons,
        "thresholds": th.as_dict(),
        "checks": checks,
        "before": _side_info(before, waves_before, waves_source_before),
        "after": _side_info(after, waves_after, waves_source_after),
        "normalization": {
            "basis": basis,
            "before_waves": waves_before,
            "after_waves": waves_after,
            "why": "ATT traces a sample of waves (one CU, selected SIMDs) and its size varies "
                   "between captures; cycle and hit sums scale with it, per-wave values do not",
        },
        "totals": totals,
        "stall_by_type": by_type,
        "lines": lines_out,
        "instructions": instr_section,
        "hotspots": hotspots,
        "occupancy": occupancy,
        "l2": l2,
        "notes": notes,
    }


def _side_info(doc: Mapping[str, Any], waves: int | None, waves_source: str) -> dict:
    dispatch = doc.get("dispatch") if isinstance(doc.get("dispatch"), Mapping) else {}
    arch = doc.get("arch") if isinstance(doc.get("arch"), Mapping) else {}
    return {
        "kernel": doc.get("kernel"),
        "dispatch_dir": doc.get("dispatch_dir"),
        "dispatch_id": dispatch.get("id"),
        "format": doc.get("format"),
        "arch": arch.get("name"),
        "traced_waves": waves,
        "traced_waves_source": waves_source,
        "mapped_fraction": _mapped_fraction(doc),
    }


def _compare_types(before, after, scale_before, scale_after, total_before_pw, total_after_pw):
    def stalls(doc):
        return {row.get("type"): _num(row.get("stall_cycles"))
                for row in doc.get("stall_by_type") or [] if isinstance(row, Mapping)}

    stall_before, stall_after = stalls(before), stalls(after)
    rows = []
    for stall_type in sorted(set(stall_before) | set(stall_after), key=str):
        row = _delta(stall_before.get(stall_type, 0.0), stall_after.get(stall_type, 0.0),
                     scale_before, scale_after)
        row["type"] = stall_type
        row["share_before"] = row["before_per_wave"] / total_before_pw if total_before_pw else None
        row["share_after"] = row["after_per_wave"] / total_after_pw if total_after_pw else None
        rows.append(row)
    rows.sort(key=lambda r: -abs(r["delta_per_wave"]))
    return rows


def _compare_instructions(before, after, scale_before, scale_after, max_items):
    order_before, order_after = _program_order(before), _program_order(after)
    tokens_before = [opcode(str(item.get("asm", ""))) for item in order_before]
    tokens_after = [opcode(str(item.get("asm", ""))) for item in order_after]
    alignment = align_opcodes(tokens_before, tokens_after)
    keys_before = _stable_keys(tokens_before)
    keys_after = _stable_keys(tokens_after)

    pairs = []
    for pos_before, pos_after in alignment.pairs:
        item_before = order_before[pos_before] if pos_before is not None else None
        item_after = order_after[pos_after] if pos_after is not None else None
        stall_before = _num(item_before.get("stall_cycles")) if item_before else 0.0
        stall_after = _num(item_after.get("stall_cycles")) if item_after else 0.0
        hits_before = _num(item_before.get("hits")) if item_before else 0.0
        hits_after = _num(item_after.get("hits")) if item_after else 0.0
        entry = {
            "status": "matched" if item_before and item_after
            else ("deleted" if item_before else "inserted"),
            "key": keys_before[pos_before] if pos_before is not None else keys_after[pos_after],
            "opcode": (tokens_before[pos_before] if pos_before is not None
                       else tokens_after[pos_after]),
            "asm_before": item_before.get("asm") if item_before else None,
            "asm_after": item_after.get("asm") if item_after else None,
            "index_before": item_before.get("index") if item_before else None,
            "index_after": item_after.get("index") if item_after else None,
            "pc_before": item_before.get("pc") if item_before else None,
            "pc_after": item_after.get("pc") if item_after else None,
            "source_before": innermost(item_before.get("source")) if item_before else None,
            "source_after": innermost(item_after.get("source")) if item_after else None,
            "stall_before": stall_before,
            "stall_after": stall_after,
            "stall_before_per_wave": stall_before / scale_before,
            "stall_after_per_wave": stall_after / scale_after,
            "delta_per_wave": stall_after / scale_after - stall_before / scale_before,
            "relative_per_wave": _relative(stall_before / scale_before, stall_after / scale_after),
            "stall_per_hit_before": stall_before / hits_before if hits_before else None,
            "stall_per_hit_after": stall_after / hits_after if hits_after else None,
            "hits_before": hits_before,
            "hits_after": hits_after,
        }
        pairs.append(entry)

    def top(entries: Iterable[dict]) -> list[dict]:
        ranked = sorted(entries, key=lambda e: -abs(e["delta_per_wave"]))
        return ranked[:max_items] if max_items else ranked

    section = {
        "method": ALIGNMENT_METHOD,
        "identical_sequence": alignment.identical,
        "before_count": len(order_before),
        "after_count": len(order_after),
        "matched": alignment.matched,
        "deleted": alignment.deleted,
        "inserted": alignment.inserted,
        "items": top(e for e in pairs if e["status"] == "matched"),
        "deleted_items": top(e for e in pairs if e["status"] == "deleted"),
        "inserted_items": top(e for e in pairs if e["status"] == "inserted"),
    }
    return alignment, section, pairs


def _line_stalls(doc: Mapping[str, Any]) -> dict[str, float]:
    """Per innermost location stall sums from the document's source_lines (unmapped dropped)."""
    result: dict[str, float] = {}
    for row in doc.get("source_lines") or []:
        if not isinstance(row, Mapping) or row.get("artifact") == "unmapped":
            continue
        location = innermost(row.get("location"))
        if not location or location.startswith("<"):
            continue
        result[location] = result.get(location, 0.0) + _num(row.get("stall_cycles"))
    return result


def _compare_lines(before, after, scale_before, scale_after, instr_pairs, alignment):
    if before.get("summary_level") or after.get("summary_level"):
        return {"status": "unavailable", "basis": None,
                "reason": "only summary.json available: line deltas need the hotspot JSONs",
                "matched_stall_fraction_before": None, "matched_stall_fraction_after": None,
                "items": []}
    mapped_before, mapped_after = _mapped_fraction(before), _mapped_fraction(after)
    status, reason = "matched", None
    if mapped_before > 0 and mapped_after > 0:
        stall_before, stall_after = _line_stalls(before), _line_stalls(after)
    elif mapped_before == 0 and mapped_after == 0:
        return {"status": "unavailable", "basis": None,
                "reason": "neither capture has source mapping: line matching impossible; "
                          "compared by instruction alignment only",
                "matched_stall_fraction_before": None, "matched_stall_fraction_after": None,
                "items": []}
    else:
        unmapped_side = "BEFORE" if mapped_before == 0 else "AFTER"
        if alignment.matched == 0:
            return {"status": "unavailable", "basis": None,
                    "reason": f"{unmapped_side} has no source mapping and no instruction aligned: "
                              "line matching impossible",
                    "matched_stall_fraction_before": None, "matched_stall_fraction_after": None,
                    "items": []}
        # Project the mapped side's source locations onto the unmapped side through the
        # instruction alignment: same binary code → same lines.
        status = "projected"
        reason = (f"{unmapped_side} has no source mapping: line matching by location impossible; "
                  "lines projected through the instruction alignment (locations of the mapped "
                  "capture), unaligned instructions under '" + UNALIGNED + "'")
        mapped_key = "source_before" if mapped_before else "source_after"
        stall_before, stall_after = {}, {}
        for entry in instr_pairs:
            # An instruction present on the mapped side carries its own location; one present
            # only on the unmapped side has none to borrow.
            has_mapped_side = entry["index_before" if mapped_before else "index_after"] is not None
            location = (innermost(entry[mapped_key]) or UNMAPPED) if has_mapped_side else UNALIGNED
            if entry["index_before"] is not None:
                stall_before[location] = stall_before.get(location, 0.0) + entry["stall_before"]
            if entry["index_after"] is not None:
                stall_after[location] = stall_after.get(location, 0.0) + entry["stall_after"]

    items = []
    for location in set(stall_before) | set(stall_after):
        in_before, in_after = location in stall_before, location in stall_after
        row = _delta(stall_before.get(location, 0.0), stall_after.get(location, 0.0),
                     scale_before, scale_after)
        row["location"] = location
        row["status"] = "matched" if in_before and in_after else ("new" if in_after else "vanished")
        items.append(row)
    items.sort(key=lambda r: (-abs(r["delta_per_wave"]), r["location"]))
    total_before = sum(stall_before.values())
    total_after = sum(stall_after.values())
    matched_before = sum(r["before"] for r in items if r["status"] == "matched")
    matched_after = sum(r["after"] for r in items if r["status"] == "matched")
    frac_before = matched_before / total_before if total_before else None
    frac_after = matched_after / total_after if total_after else None
    if status == "matched" and frac_before is not None and frac_before < 0.5:
        status = "partial"
        reason = (f"only {frac_before:.0%} of BEFORE's line stall sits on locations present in "
                  "AFTER: source attribution changed between the captures (compare the "
                  "instruction alignment instead)")
    return {"status": status, "basis": "location (innermost file:line)", "reason": reason,
            "matched_stall_fraction_before": frac_before,
            "matched_stall_fraction_after": frac_after, "items": items}


def _hotspot_changes(lines, instr_pairs, th, total_before_pw, total_after_pw):
    """Lines/instructions that crossed the hotspot share (new) or fell below it (vanished)."""
    new, vanished = [], []

    def classify(kind, key, before_pw, after_pw):
        share_before = before_pw / total_before_pw if total_before_pw else 0.0
        share_after = after_pw / total_after_pw if total_after_pw else 0.0
        record = {"kind": kind, "key": key, "share_before": share_before,
                  "share_after": share_after}
        if share_after >= th.hotspot_share > share_before:
            new.append(record)
        elif share_before >= th.hotspot_share > share_after:
            vanished.append(record)

    for row in lines["items"]:
        classify("line", row["location"], row["before_per_wave"], row["after_per_wave"])
    for entry in instr_pairs:
        classify("instruction", entry["key"], entry["stall_before_per_wave"],
                 entry["stall_after_per_wave"])
    for bucket in (new, vanished):
        bucket.sort(key=lambda r: -max(r["share_before"], r["share_after"]))
    return {"share_threshold": th.hotspot_share, "new": new, "vanished": vanished}


def _compare_occupancy(before: Any, after: Any) -> dict:
    def pick(doc: Any) -> dict:
        if not isinstance(doc, Mapping):
            return {"waves_per_simd": None, "limited_by": None}
        return {"waves_per_simd": doc.get("waves_per_simd"), "limited_by": doc.get("limited_by")}

    side_before, side_after = pick(before), pick(after)
    wb, wa = side_before["waves_per_simd"], side_after["waves_per_simd"]
    known = isinstance(wb, int | float) and isinstance(wa, int | float)
    return {
        "before": side_before,
        "after": side_after,
        "delta_waves_per_simd": (wa - wb) if known else None,
        "changed": bool(known and wa != wb) or side_before["limited_by"] != side_after["limited_by"],
    }


def compare_metrics(before: Mapping[str, Any] | None,
                    after: Mapping[str, Any] | None) -> dict[str, Any]:
    """Numeric metric-by-metric change of two flat metric mappings (e.g. L2 metrics)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return {"status": "unavailable", "metrics": []}
    metrics = []
    for name in sorted(set(before) & set(after)):
        vb, va = before[name], after[name]
        if isinstance(vb, bool) or isinstance(va, bool):
            continue
        if isinstance(vb, int | float) and isinstance(va, int | float):
            metrics.append({"metric": name, "before": vb, "after": va, "delta": va - vb,
                            "relative": _relative(float(vb), float(va))})
    return {"status": "compared" if metrics else "unavailable", "metrics": metrics}


# ---------------------------------------------------------------------------- verdict


def _checks(th, total_stall, by_type, line_items, instr_pairs, total_before_pw):
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


def _verdict(checks: list[dict]) -> tuple[str, list[str]]:
    regressed = [c for c in checks if c["outcome"] == "regressed"]
    reasons = [_reason(c) for c in regressed]
    if regressed:
        return "regressed", reasons
    total = next((c for c in checks if c["check"] == "total_stall"), None)
    if total is not None and total["outcome"] == "improved":
        return "improved", [_reason(total)]
    return "neutral", []


def _reason(check: Mapping[str, Any]) -> str:
    rel = check["relative"]
    rel_text = "new" if rel is None else f"{rel:+.1%}"
    return (f"{check['check']} {check['key']}: {rel_text} "
            f"({check['delta_per_wave']:+.1f} stall cycles/wave; threshold "
            f"{check['threshold']:.0%}, floor {check['floor_per_wave']:.1f}/wave)")


# ---------------------------------------------------------------------------- sets of dispatches


def summary_level_doc(kernel: str | None, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A hotspot-shaped document from one summary dispatch entry (no lines, no instructions).

    Used when only a run's summary.json is available: totals, stall types, occupancy and L2
    can still be compared; line and instruction deltas cannot.
    """
    return {
        "schema": "kerneltrace.hotspots/1",
        "summary_level": True,
        "kernel": kernel,
        "dispatch_dir": entry.get("dispatch_dir"),
        "dispatch": entry.get("dispatch") or {},
        "arch": entry.get("arch") or {},
        "format": entry.get("format"),
        "totals": entry.get("totals") or {},
        "stall_by_type": entry.get("stall_by_type") or [],
        "occupancy": entry.get("occupancy"),
        "source_mapping": entry.get("source_mapping") or {},
        "source_lines": [],
        "instructions": [],
        "l2": entry.get("l2"),
    }


def _to_summary_level(doc: Mapping[str, Any]) -> dict[str, Any]:
    return doc if doc.get("summary_level") else summary_level_doc(doc.get("kernel"), doc)


def keyed_dispatches(docs: Iterable[Mapping[str, Any]], prefix: str = "") -> dict[str, Mapping]:
    """Key documents as ``[prefix:]kernel#n`` (n-th dispatch of that kernel by dispatch id).

    Dispatch ids and directory names change between runs; kernel name and order do not.
    """
    def order(doc: Mapping[str, Any]) -> tuple:
        dispatch = doc.get("dispatch") if isinstance(doc.get("dispatch"), Mapping) else {}
        ident = dispatch.get("id")
        return (ident is None, ident if isinstance(ident, int) else 0,
                str(doc.get("dispatch_dir") or ""))

    counts: dict[str, int] = {}
    keyed: dict[str, Mapping] = {}
    for doc in sorted(docs, key=order):
        name = str(doc.get("kernel") or "(unknown kernel)")
        counts[name] = counts.get(name, 0) + 1
        keyed[f"{prefix}{name}#{counts[name]}"] = doc
    return keyed


def compare_sets(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]],
                 thresholds: Thresholds | None = None, *, max_items: int = 50) -> dict[str, Any]:
    """Compare keyed dispatches of two runs; the worst matched verdict is the overall verdict."""
    th = thresholds or DEFAULT_THRESHOLDS
    kernels, notes = [], []
    for key in list(before) + [k for k in after if k not in before]:
        if key not in after:
            kernels.append({"key": key, "status": "vanished", "verdict": None, "comparison": None})
            continue
        if key not in before:
            kernels.append({"key": key, "status": "new", "verdict": None, "comparison": None})
            continue
        doc_before, doc_after = before[key], after[key]
        if doc_before.get("summary_level") or doc_after.get("summary_level"):
            doc_before, doc_after = _to_summary_level(doc_before), _to_summary_level(doc_after)
        result = compare(doc_before, doc_after, th, max_items=max_items,
                         l2_before=doc_before.get("l2"), l2_after=doc_after.get("l2"))
        if doc_before.get("summary_level"):
            result["notes"].append("summary-level comparison (no hotspot JSON found): totals, "
                                   "stall types, occupancy and L2 only")
        kernels.append({"key": key, "status": "matched", "verdict": result["verdict"],
                        "comparison": result})
    verdicts = [k["verdict"] for k in kernels if k["verdict"]]
    verdict = ("regressed" if "regressed" in verdicts
               else "improved" if "improved" in verdicts else "neutral")
    reasons = [f"{k['key']}: {reason}" for k in kernels if k["comparison"]
               for reason in k["comparison"]["reasons"] if k["verdict"] == verdict != "neutral"]
    for status in ("new", "vanished"):
        keys = [k["key"] for k in kernels if k["status"] == status]
        if keys:
            notes.append(f"{status} kernels/dispatches (not judged): {', '.join(keys)}")
    if not verdicts:
        notes.append("no kernel/dispatch present in both: nothing compared")
    return {"schema": SCHEMA, "kind": "set", "verdict": verdict, "reasons": reasons,
            "thresholds": th.as_dict(), "kernels": kernels, "notes": notes}
