"""Register spills: scratch loads/stores of a hotspot document, their stall and the waits they cause.

A spill is a store of live registers to the per-lane private (scratch) segment and the load
that brings them back. gfx94x/gfx950 compilers emit ``scratch_store_*`` / ``scratch_load_*``;
older gfx9 (gfx90a) ones emit MUBUF ``buffer_store_* vN, off, s[0:3], …`` on the private
segment buffer descriptor s[0:3], recognised here as a likely spill. The cost a spill shows is
its own stall plus the ``s_waitcnt`` cycles the wave analysis attributes to its reloads
(``waves.waitcnt``, youngest drained producer rule), or, without wave files, the same rule applied
to code.json (``structure.waits.charged``, kerneltrace/analysis/drains.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kerneltrace.isa.classify import opcode
from kerneltrace.isa.registers import operands

# MUBUF on the private segment buffer (s[0:3]) with no VGPR address: the gfx90a spill form.
_MUBUF_SCRATCH = re.compile(r"^buffer_(load|store)_\w+\s+[^,]+,\s*off,\s*s\[0:3\]", re.IGNORECASE)


def _scratch_access(text: str) -> tuple[str, bool] | None:
    """("load"|"store", has a VGPR address) for a scratch_* instruction, None otherwise.

    Operand order: ``scratch_load_* vdst, vaddr, saddr`` and ``scratch_store_* vaddr, vdata, saddr``;
    a vaddr of ``off`` means a constant offset (the compiler's spill slots)."""
    op = opcode(text)
    kind = "load" if op.startswith("scratch_load") else "store" if op.startswith("scratch_store") else None
    if kind is None:
        return None
    parts = operands(text)
    position = 1 if kind == "load" else 0
    vaddr = parts[position] if len(parts) > position else "off"
    return kind, vaddr != "off"


def spill_kind(asm: str) -> str | None:
    """"load" / "store" for a spill access (scratch at a constant offset), None otherwise.

    A scratch access through a VGPR address is a dynamically indexed private array, not a spill
    (see ``private_array_kind``)."""
    text = asm.strip().lower()
    scratch = _scratch_access(text)
    if scratch is not None:
        return None if scratch[1] else scratch[0]
    match = _MUBUF_SCRATCH.match(text)
    return match.group(1) if match else None


def private_array_kind(asm: str) -> str | None:
    """"load" / "store" for a scratch access through a VGPR address: a private (per-lane) array
    the compiler could not keep in registers because it is indexed at run time."""
    scratch = _scratch_access(asm.strip().lower())
    return scratch[0] if scratch is not None and scratch[1] else None


@dataclass(frozen=True)
class SpillAccess:
    """One scratch instruction with what it costs."""

    index: int
    asm: str
    kind: str  # "load" | "store"
    hits: int
    own_cycles: int  # its own stall (code.json), or its latency in captures without stall
    wait_cycles: int  # s_waitcnt cycles attributed to it (loads; waves.waitcnt)
    in_loop: bool
    in_hot_loop: bool

    @property
    def cost(self) -> int:
        return self.own_cycles + self.wait_cycles


@dataclass(frozen=True)
class Spills:
    """Every scratch access of one dispatch, most costly first, and the totals."""

    accesses: tuple[SpillAccess, ...]
    waits: tuple[int, ...]  # indexes of the s_waitcnt rows whose cycles went to reloads
    scratch_bytes: int | None  # per-lane private segment size from the kernel-trace row
    basis: str = "stall_cycles"  # what own_cycles counts: "stall_cycles" or "latency_cycles"

    @property
    def loads(self) -> int:
        return sum(1 for a in self.accesses if a.kind == "load")

    @property
    def stores(self) -> int:
        return sum(1 for a in self.accesses if a.kind == "store")

    @property
    def executed(self) -> int:
        return sum(a.hits for a in self.accesses)

    @property
    def own_cycles(self) -> int:
        return sum(a.own_cycles for a in self.accesses)

    @property
    def wait_cycles(self) -> int:
        return sum(a.wait_cycles for a in self.accesses)

    @property
    def cost(self) -> int:
        return self.own_cycles + self.wait_cycles

    @property
    def in_hot_loop(self) -> bool:
        return any(a.in_hot_loop for a in self.accesses)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def wait_cycles_by_producer(waves: Mapping[str, Any] | None) -> tuple[dict[int, int], dict[int, set]]:
    """Cycles each producer row was charged by the hot waits, and which waits charged it."""
    cycles: dict[int, int] = {}
    waits: dict[int, set] = {}
    for wait in (waves or {}).get("waitcnt") or []:
        for producer in wait.get("producers") or [] if isinstance(wait, Mapping) else []:
            index = producer.get("index") if isinstance(producer, Mapping) else None
            if isinstance(index, int) and _int(producer.get("cycles")) > 0:
                cycles[index] = cycles.get(index, 0) + _int(producer.get("cycles"))
                waits.setdefault(index, set()).add(wait.get("index"))
    return cycles, waits


def charged_by_structure(structure: Mapping[str, Any] | None) -> tuple[dict[int, int], dict[int, set]]:
    """The same charges from code.json alone: `structure.waits.charged` (analysis.drains)."""
    cycles: dict[int, int] = {}
    waits: dict[int, set] = {}
    for entry in ((structure or {}).get("waits") or {}).get("charged") or []:
        index = entry.get("index") if isinstance(entry, Mapping) else None
        if isinstance(index, int) and _int(entry.get("cycles")) > 0:
            cycles[index] = _int(entry.get("cycles"))
            waits[index] = {w for w in entry.get("waits") or [] if isinstance(w, int)}
    return cycles, waits


def find_spills(doc: Mapping[str, Any], in_loop: Callable[[int], bool],
                in_hot_loop: Callable[[int], bool], basis: str = "stall_cycles",
                classify: Callable[[str], str | None] = spill_kind,
                structure: Mapping[str, Any] | None = None) -> Spills | None:
    """The scratch accesses of a hotspot document, most costly first; None when there are none.

    ``basis`` is the per-instruction column an access's own cost is read from: stall, or latency
    for captures without a stall column (rocprofv2 legacy). ``classify`` picks the accesses:
    spills (the default) or dynamically indexed private arrays (``private_array_kind``)."""
    waves = doc.get("waves") if isinstance(doc.get("waves"), Mapping) else None
    charged, charging = wait_cycles_by_producer(waves)
    if not charged:  # no wave files (or no waitcnt in them): the static attribution
        charged, charging = charged_by_structure(structure or doc.get("structure"))
    accesses = []
    waits: set[int] = set()
    for ins in doc.get("instructions") or []:
        kind = classify(str(ins.get("asm") or ""))
        index = ins.get("index")
        if kind is None or not isinstance(index, int):
            continue
        wait = charged.get(index, 0) if kind == "load" else 0
        if wait:
            waits |= {w for w in charging.get(index, ()) if isinstance(w, int)}
        accesses.append(SpillAccess(index, str(ins.get("asm")), kind, _int(ins.get("hits")),
                                    _int(ins.get(basis)), wait, in_loop(index),
                                    in_hot_loop(index)))
    if not accesses:
        return None
    accesses.sort(key=lambda a: (-a.cost, -a.hits, a.index))
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    row = metadata.get("kernel_trace") if isinstance(metadata.get("kernel_trace"), Mapping) else {}
    scratch = row.get("scratch_bytes")
    return Spills(tuple(accesses), tuple(sorted(waits)),
                  scratch if isinstance(scratch, int) and not isinstance(scratch, bool) else None,
                  basis)
