"""Barrier causes from the wave files: the rows the stragglers lost time at, as causes.

`waves.stragglers` (analysis/waves/stragglers.py) charges each barrier's wait to the rows where
the last-arriving wave lost more cycles than its partners (and to extra `work`). Here each row
becomes a cause: a counter wait by what it drains (the static drain of `analysis.drains`: a
scratch reload, a global load, an LDS read, a kernel argument …), or the instruction's own class
(an MFMA issue stall: a dependent MFMA chain or a full pipe; an LDS or vector-memory issue stall:
a full queue; VALU / `s_nop`: dependent vector work and hazards). Causes fold into families the
verdict reads: `memory` (global loads, stores, kernel arguments, scalar loads, vector-memory
issue), `lds`, `spill` (scratch), `compute` (MFMA, VALU, `s_nop`, SALU) and `imbalance` (the
straggler simply had more to do). Shares are of the barrier stall the stragglers' partners spent
waiting on traced stragglers (`wait_cycles`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kerneltrace.analysis.control_flow import FlowRow
from kerneltrace.analysis.drains import WaitDrain
from kerneltrace.isa import classify as isa
from kerneltrace.thresholds import DEFAULT_VERDICT

_FAMILY_OF_DRAIN = {"spill": "spill", "private-array": "spill", "global-load": "memory",
                    "lds-dma": "memory", "store": "memory", "kernarg": "memory",
                    "smem": "memory", "lds": "lds"}
_CAUSE_OF_TYPE = {isa.MFMA: "mfma", isa.VALU: "valu", isa.NOP: "s_nop", isa.SALU: "salu",
                  isa.LDS: "lds-issue", isa.VMEM_LOAD: "vmem-issue", isa.VMEM_STORE: "vmem-issue",
                  isa.SMEM: "smem-issue"}
_FAMILY_OF_CAUSE = {"mfma": "compute", "valu": "compute", "s_nop": "compute", "salu": "compute",
                    "lds-issue": "lds", "vmem-issue": "memory", "smem-issue": "memory",
                    "work": "imbalance"}
FAMILIES = ("memory", "lds", "spill", "compute", "imbalance", "other")
TOP_ROWS = 6  # rows listed per cause


def row_cause(row: FlowRow, drain: WaitDrain | None) -> str:
    """The cause a row stands for when a straggler loses cycles there."""
    if drain is not None and drain.primary is not None:
        return f"{drain.primary}-wait"
    kind = isa.classify(row.asm)
    if kind in (isa.VMEM_WAIT, isa.LDS_SMEM_WAIT):
        return "wait"  # a wait that drains nothing traced (counters already low)
    return _CAUSE_OF_TYPE.get(kind, "other")


def family(cause: str) -> str:
    if cause.endswith("-wait"):
        return _FAMILY_OF_DRAIN.get(cause[: -len("-wait")], "other")
    return _FAMILY_OF_CAUSE.get(cause, "other")


def straggler_causes(stragglers: Mapping | None, rows: Iterable[FlowRow],
                     drains: Iterable[WaitDrain]) -> dict | None:
    """The `barriers.stragglers` object (docs/hotspot-json.md): causes and families of the
    barrier waits the wave files saw; None without wave files or barrier events."""
    if not stragglers or not stragglers.get("barriers"):
        return None
    by_index = {row.index: row for row in rows}
    by_wait: dict[int, WaitDrain] = {}
    for drain in drains:  # the counter whose wait stalls most stands for the row
        if drain.index not in by_wait or drain.stall > by_wait[drain.index].stall:
            by_wait[drain.index] = drain
    causes: dict[str, dict] = {}

    def charge(cause: str, index: int | None, cycles: int, barrier: int) -> None:
        entry = causes.setdefault(cause, {"cause": cause, "family": family(cause), "cycles": 0,
                                          "rows": {}, "barriers": set()})
        entry["cycles"] += cycles
        entry["barriers"].add(barrier)
        if index is not None:
            entry["rows"][index] = entry["rows"].get(index, 0) + cycles

    wait_total = stall_total = untraced = unexplained = 0
    for barrier in stragglers["barriers"]:
        wait_total += barrier.get("wait_cycles") or 0
        stall_total += barrier.get("stall_cycles") or 0
        untraced += barrier.get("untraced_wait_cycles") or 0
        unexplained += barrier.get("unexplained_cycles") or 0
        if barrier.get("rest_cycles"):
            charge("other", None, barrier["rest_cycles"], barrier["index"])
        if barrier.get("work_cycles"):
            charge("work", None, barrier["work_cycles"], barrier["index"])
        for item in barrier.get("charged") or []:
            row = by_index.get(item["index"])
            cause = row_cause(row, by_wait.get(item["index"])) if row is not None else "other"
            charge(cause, item["index"], item["cycles"], barrier["index"])
    families = {name: 0 for name in FAMILIES}
    for entry in causes.values():
        families[entry["family"]] += entry["cycles"]
    ordered = sorted(causes.values(), key=lambda e: -e["cycles"])
    top_family = max(families, key=lambda name: families[name]) if wait_total else None
    return {
        "basis": "wave files: the last-arriving wave's lost cycles above its partners' "
                 "(analysis/waves/stragglers.py)",
        "wait_cycles": wait_total,
        "stall_cycles": stall_total,
        "untraced_wait_cycles": untraced,
        "unexplained_cycles": unexplained,
        "families": {name: {"cycles": cycles,
                            "share": round(cycles / wait_total, 4) if wait_total else 0.0}
                     for name, cycles in families.items() if cycles},
        "top_family": top_family,
        "top_family_share": round(families[top_family] / wait_total, 4) if top_family else 0.0,
        "causes": [{"cause": e["cause"], "family": e["family"], "cycles": e["cycles"],
                    "share": round(e["cycles"] / wait_total, 4) if wait_total else 0.0,
                    "barriers": sorted(e["barriers"]),
                    "rows": [i for i, _ in sorted(e["rows"].items(),
                                                  key=lambda kv: -kv[1])[:TOP_ROWS]]}
                   for e in ordered],
        "last_waves": [{"barrier": b["index"], **b["last_wave"]} for b in stragglers["barriers"]
                       if b.get("last_wave")],
    }


MEMORY_FAMILIES = ("memory", "lds", "spill")
_CAUSE_WORDS = {"global-load-wait": "waits on global loads", "lds-dma-wait": "waits on "
                "global→LDS tile loads", "store-wait": "waits on stores", "kernarg-wait":
                "waits on kernel-argument loads", "smem-wait": "waits on scalar loads",
                "spill-wait": "waits on scratch (spill) reloads", "private-array-wait": "waits on "
                "a private array in scratch", "lds-wait": "LDS read waits", "mfma": "MFMA issue "
                "stalls (dependent MFMAs / a full matrix pipe)", "valu": "dependent VALU work",
                "s_nop": "`s_nop` hazard padding", "salu": "scalar ALU work", "lds-issue":
                "LDS issue stalls (a full LDS queue)", "vmem-issue": "vector-memory issue stalls "
                "(a full memory queue)", "smem-issue": "scalar-load issue stalls",
                "work": "more work than its partners (imbalance)", "wait": "waits",
                "other": "other instructions"}


def usable(stragglers: Mapping | None, min_traced: float = DEFAULT_VERDICT.straggler_traced) -> bool:
    """The straggler causes say what the barrier waits are: at least `min_traced` of the
    barrier stall the wave files saw is waiting for a traced last wave (instances of one traced
    wave, or whose last wave ran on an untraced SIMD, leave only the code.json segments)."""
    if not stragglers:
        return False
    traced = stragglers.get("wait_cycles") or 0
    return traced > 0 and traced >= min_traced * (stragglers.get("stall_cycles") or 0)


def memory_share(stragglers: Mapping) -> float:
    """Share of the traced barrier wait the straggler spent on memory, LDS or scratch."""
    families = stragglers.get("families") or {}
    return round(sum((families.get(name) or {}).get("share") or 0.0 for name in MEMORY_FAMILIES), 4)


def cause_sentence(stragglers: Mapping, causes: int = 3) -> str:
    """"waits on global loads 31 % (#243, #215), dependent VALU work 20 % (#959) …"."""
    parts = []
    for cause in (stragglers.get("causes") or [])[:causes]:
        rows = ", ".join(f"#{i}" for i in cause.get("rows", [])[:2])
        words = _CAUSE_WORDS.get(cause["cause"], cause["cause"])
        parts.append(f"{words} {cause['share']:.0%}" + (f" ({rows})" if rows else ""))
    return ", ".join(parts) if parts else "nothing the traced waves show"
