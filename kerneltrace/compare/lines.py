"""Source-line side of the comparison: stall per location (or projected through the alignment), hotspot shifts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kerneltrace.compare.values import delta, mapped_fraction, num
from kerneltrace.sourceloc import UNMAPPED
from kerneltrace.sourceloc import innermost_location as innermost
from kerneltrace.thresholds import DEFAULT_COMPARE

UNALIGNED = "<not aligned>"


def line_stalls(doc: Mapping[str, Any]) -> dict[str, float]:
    """Per innermost location stall sums from the document's source_lines (unmapped dropped)."""
    result: dict[str, float] = {}
    for row in doc.get("source_lines") or []:
        if not isinstance(row, Mapping) or row.get("artifact") == "unmapped":
            continue
        location = innermost(row.get("location"))
        if not location or location.startswith("<"):
            continue
        result[location] = result.get(location, 0.0) + num(row.get("stall_cycles"))
    return result


STATUS_OF_SIDE = {"both": "matched", "right_only": "new", "left_only": "vanished"}


def line_items(stall_before: Mapping[str, float], stall_after: Mapping[str, float],
               scale_before: float, scale_after: float) -> list[dict[str, Any]]:
    """Per-location before/after rows, largest per-wave change first (ties by location).

    pandas joins the two sides (outer merge, the indicator names matched / new / vanished) and
    sorts (stable, with the location as tie key); the numbers of each row come from ``delta``
    on the Python floats of the sums, so no value passes through pandas arithmetic.
    """
    import pandas as pd

    def side(stalls: Mapping[str, float], column: str) -> pd.DataFrame:
        return pd.DataFrame({"location": pd.Series(list(stalls), dtype=object),
                             column: pd.Series(range(len(stalls)), dtype="int64")})

    before_keys, after_keys = list(stall_before), list(stall_after)
    joined = side(stall_before, "pos_before").merge(
        side(stall_after, "pos_after"), on="location", how="outer", indicator="side", sort=False)
    items = []
    for location, pos_before, pos_after, which in joined[
            ["location", "pos_before", "pos_after", "side"]].itertuples(index=False, name=None):
        status = STATUS_OF_SIDE[str(which)]
        before = stall_before[before_keys[int(pos_before)]] if status != "new" else 0.0
        after = stall_after[after_keys[int(pos_after)]] if status != "vanished" else 0.0
        row = delta(before, after, scale_before, scale_after)
        row["location"] = location
        row["status"] = status
        items.append(row)
    if not items:
        return items
    order = pd.DataFrame({"rank": [-abs(r["delta_per_wave"]) for r in items],
                          "location": [r["location"] for r in items]})
    ranked = order.sort_values(["rank", "location"], kind="mergesort").index
    return [items[i] for i in ranked]


def compare_lines(before, after, scale_before, scale_after, instr_pairs, alignment,
                  matched_share=DEFAULT_COMPARE.matched_line_share):
    if before.get("summary_level") or after.get("summary_level"):
        return {"status": "unavailable", "basis": None,
                "reason": "only summary.json available: line deltas need the hotspot JSONs",
                "matched_stall_fraction_before": None, "matched_stall_fraction_after": None,
                "items": []}
    mapped_before, mapped_after = mapped_fraction(before), mapped_fraction(after)
    status, reason = "matched", None
    if mapped_before > 0 and mapped_after > 0:
        stall_before, stall_after = line_stalls(before), line_stalls(after)
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

    items = line_items(stall_before, stall_after, scale_before, scale_after)
    total_before = sum(stall_before.values())
    total_after = sum(stall_after.values())
    matched_before = sum(r["before"] for r in items if r["status"] == "matched")
    matched_after = sum(r["after"] for r in items if r["status"] == "matched")
    frac_before = matched_before / total_before if total_before else None
    frac_after = matched_after / total_after if total_after else None
    if status == "matched" and frac_before is not None and frac_before < matched_share:
        status = "partial"
        reason = (f"only {frac_before:.0%} of BEFORE's line stall sits on locations present in "
                  "AFTER: source attribution changed between the captures (compare the "
                  "instruction alignment instead)")
    return {"status": status, "basis": "location (innermost file:line)", "reason": reason,
            "matched_stall_fraction_before": frac_before,
            "matched_stall_fraction_after": frac_after, "items": items}


def hotspot_changes(lines, instr_pairs, th, total_before_pw, total_after_pw):
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
