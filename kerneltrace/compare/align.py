"""Instruction alignment of two builds by opcode sequence, and the per-instruction stall deltas."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from kerneltrace.compare.values import num, program_order, relative
from kerneltrace.isa.classify import opcode
from kerneltrace.sourceloc import innermost_location as innermost

ALIGNMENT_METHOD = (
    "difflib.SequenceMatcher (autojunk off) over the opcode tokens of both instruction "
    "sequences in program order; 'equal' blocks pair instructions, every other block counts "
    "as deleted (before) / inserted (after)"
)


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


def stable_keys(tokens: list[str]) -> list[str]:
    """``opcode#k``: the k-th occurrence of that opcode in program order (PC-independent)."""
    seen: dict[str, int] = {}
    keys = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        keys.append(f"{token}#{seen[token]}")
    return keys


def compare_instructions(before, after, scale_before, scale_after, max_items):
    order_before, order_after = program_order(before), program_order(after)
    tokens_before = [opcode(str(item.get("asm", ""))) for item in order_before]
    tokens_after = [opcode(str(item.get("asm", ""))) for item in order_after]
    alignment = align_opcodes(tokens_before, tokens_after)
    keys_before = stable_keys(tokens_before)
    keys_after = stable_keys(tokens_after)

    pairs = []
    for pos_before, pos_after in alignment.pairs:
        item_before = order_before[pos_before] if pos_before is not None else None
        item_after = order_after[pos_after] if pos_after is not None else None
        stall_before = num(item_before.get("stall_cycles")) if item_before else 0.0
        stall_after = num(item_after.get("stall_cycles")) if item_after else 0.0
        hits_before = num(item_before.get("hits")) if item_before else 0.0
        hits_after = num(item_after.get("hits")) if item_after else 0.0
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
            "relative_per_wave": relative(stall_before / scale_before, stall_after / scale_after),
            "stall_per_hit_before": stall_before / hits_before if hits_before else None,
            "stall_per_hit_after": stall_after / hits_after if hits_after else None,
            "hits_before": hits_before,
            "hits_after": hits_after,
        }
        pairs.append(entry)

    import pandas as pd

    # The pairs as a frame of their status and rank only: pandas filters and sorts (stable, so
    # program order breaks ties), the entries themselves stay the Python dicts built above.
    table = pd.DataFrame({"status": pd.Series([e["status"] for e in pairs], dtype=object),
                          "rank": pd.Series([-abs(e["delta_per_wave"]) for e in pairs],
                                            dtype="float64")})

    def top(status: str) -> list[dict]:
        ranked = table.loc[table["status"] == status, "rank"].sort_values(kind="mergesort")
        positions = ranked.index[:max_items] if max_items else ranked.index
        return [pairs[i] for i in positions]

    section = {
        "method": ALIGNMENT_METHOD,
        "identical_sequence": alignment.identical,
        "before_count": len(order_before),
        "after_count": len(order_after),
        "matched": alignment.matched,
        "deleted": alignment.deleted,
        "inserted": alignment.inserted,
        "items": top("matched"),
        "deleted_items": top("deleted"),
        "inserted_items": top("inserted"),
    }
    return alignment, section, pairs
