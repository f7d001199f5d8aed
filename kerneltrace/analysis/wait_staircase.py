"""Wait staircases: one loop's repeated identical `s_waitcnt`, each pacing the load after it.

A software-pipelined load sequence often reads `s_waitcnt vmcnt(N)` → load → … → `s_waitcnt
vmcnt(N)` → load: each wait lets the load N issues back retire before the next one goes out, so
the loop never has more than N loads in flight. Cut at every wait (analysis/regions.py), the
pattern falls apart into regions that each hold a few percent while together they hold the loop
(review_blind.md weakness 5: eight `vmcnt(9)` rows, 42 % of the loop, ranked at 5.6 %). A
staircase is that pattern found whole: the same wait text (`vmcnt(N)`, N ≥ 1) at least `min_steps`
times in one loop body, each followed by a vector load before the next vector-memory wait.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from kerneltrace.isa import classify as isa


@dataclass(frozen=True)
class Staircase:
    """The repeated wait of one loop and the loads it paces."""

    wait: str  # the wait's text, e.g. "s_waitcnt vmcnt(9)"
    waits: tuple[int, ...]  # its rows (code.json indices), ascending
    loads: tuple[int, ...]  # the vector load right after each wait
    loop: tuple[int, int]  # the loop body's first and last row


_VMCNT = re.compile(r"vmcnt\((\d+)\)")


def _text(asm: str) -> str:
    return " ".join(asm.split())


def _pipelined(asm: str) -> bool:
    """A wait that leaves loads in flight (`vmcnt(N)`, N ≥ 1). `vmcnt(0)` before each load is a
    serialized sequence (a reload after each spill, a dependent chain), not a staircase."""
    found = _VMCNT.search(asm)
    return found is not None and int(found.group(1)) > 0


def staircases(rows: list[dict], loop: tuple[int, int], min_steps: int) -> list[Staircase]:
    """The staircases of one loop body (`rows` in index order, executed rows only count)."""
    executed = [ins for ins in rows if ins.get("hits")]
    paced: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for position, ins in enumerate(executed):
        if ins.get("type") != isa.VMEM_WAIT or not _pipelined(ins.get("asm") or ""):
            continue
        for after in executed[position + 1:]:
            if after.get("type") == isa.VMEM_WAIT:
                break
            if after.get("type") == isa.VMEM_LOAD:
                paced[_text(ins.get("asm") or "")].append((ins["index"], after["index"]))
                break
    return [Staircase(wait, tuple(w for w, _ in steps), tuple(load for _, load in steps), loop)
            for wait, steps in sorted(paced.items()) if len(steps) >= min_steps]


def loop_staircases(program: list[dict], loops: list[tuple[int, int]],
                    min_steps: int) -> list[Staircase]:
    """Staircases of every loop body (innermost first: a wait set found in an inner loop is
    not reported again for the loop around it)."""
    found: list[Staircase] = []
    seen: set[frozenset[int]] = set()
    for first, last in sorted(loops, key=lambda bounds: bounds[1] - bounds[0]):
        body = [ins for ins in program if first <= ins["index"] <= last]
        for stair in staircases(body, (first, last), min_steps):
            key = frozenset(stair.waits)
            if not any(key <= other for other in seen):
                seen.add(key)
                found.append(stair)
    return found
