"""The hotspot document restricted to the busy waves: code.json − the empty waves' per-row cost.

When many traced waves did no work (`waves.work_split`: they ran the kernel-argument setup, met
the work-range check and left), the code.json totals sum their prologue waits with the busy waves'
work, so the prologue outranks the work that sets the kernel's time. `busy_view` subtracts the
empty waves' per-row sums (`work_split.empty_rows`, from their own wave files) from every row and
rebuilds what derives from the rows (instruction and line ranking, stall by type, totals, costs,
structure) with the same functions as the document itself. Dispatch-level facts (the launch, the
request traffic of the grid, the trace coverage) stay those of the whole trace; the wait
attribution is the busy waves' (`work_split.busy_waitcnt`); the peer figures (`waves.peers`:
pipe busy, non-hidden share) and the loops stay over all waves (the empty waves run no loop).

Only when the split is exact: the wave files sum to code.json (`waves.consistency.ok`).
"""

from __future__ import annotations

from kerneltrace.analysis.costs import cost_summary
from kerneltrace.analysis.hotspots import InstructionStat, aggregate
from kerneltrace.analysis.structure import structure_of
from kerneltrace.analysis.waves.work_split import BUSY_BASIS
from kerneltrace.document.hotspot_report import instruction_dicts, line_dicts, type_dicts
from kerneltrace.isa.classify import opcode, wait_kinds
from kerneltrace.readers.codejson import CodeFormat
from kerneltrace.sourceloc import UNMAPPED, innermost_location
from kerneltrace.thresholds import StructureThresholds, one_concern

COLUMNS = ("hits", "latency_cycles", "stall_cycles", "idle_cycles")  # what the empty waves add
# dispatch-level facts: the whole grid's, not the busy waves' (launch.py, bandwidth, coverage)
WHOLE_TRACE = ("launch", "traffic", "trace_coverage")


def usable_split(doc: dict, min_empty_share: float) -> dict | None:
    """The document's work split when a busy view applies: at least `min_empty_share` of the
    traced waves empty, their per-row cost recorded, and the wave files summing to code.json."""
    waves = doc.get("waves") or {}
    split = waves.get("work_split")
    if (not split or not split.get("empty_rows") or not split.get("busy_waves")
            or split.get("cost_basis") or split["empty_share"] < min_empty_share):
        return None
    if not (waves.get("consistency") or {}).get("ok"):
        return None
    if doc.get("format") == CodeFormat.PCSAMPLING:
        return None
    return split


def _stat(ins: dict, empty: dict | None) -> InstructionStat:
    values = {}
    for key in COLUMNS:
        value = ins.get(key)
        less = (empty or {}).get(key) or 0
        values[key] = value if value is None else max(0, int(value) - int(less))
    asm, source = ins.get("asm") or "", ins.get("source") or ""
    mixed = opcode(asm).startswith("s_wait") and len(wait_kinds(asm)) > 1
    return InstructionStat(ins["index"], ins.get("pc"), asm, ins.get("type"), source,
                           innermost_location(source) or UNMAPPED, values["hits"],
                           values["latency_cycles"], values["stall_cycles"],
                           values["idle_cycles"], mixed)


def _totals(doc: dict, rows: list[dict], busy: int) -> dict:
    def optional(key: str) -> int | None:
        present = [row[key] for row in rows if row.get(key) is not None]
        return sum(present) if present else None

    return {**(doc.get("totals") or {}),
            "executed_instructions": sum(1 for row in rows if (row.get("hits") or 0) > 0),
            "stall_cycles": optional("stall_cycles"),
            "latency_cycles": sum(row.get("latency_cycles") or 0 for row in rows),
            "idle_cycles": optional("idle_cycles"),
            "hits": sum(row.get("hits") or 0 for row in rows),
            "busy_waves": busy}  # the sums are the busy waves' (the renderers say so)


def busy_view(doc: dict, min_empty_share: float) -> dict | None:
    """The document as the busy waves alone ran it (module docstring), or None when the split
    does not apply (`usable_split`)."""
    split = usable_split(doc, min_empty_share)
    if split is None:
        return None
    empty = {row["index"]: row for row in split["empty_rows"]}
    limits = one_concern(StructureThresholds,
                         {"structure": (doc.get("thresholds") or {}).get("structure") or {}},
                         f"{doc.get('dispatch_dir')}: thresholds")
    metric = {"latency_cycles": "latency"}.get(doc.get("ranked_by"), "stall")
    stats = sorted((_stat(ins, empty.get(ins["index"])) for ins in doc.get("instructions") or []),
                   key=lambda stat: stat.index)
    analysis = aggregate(stats, metric, kernel_entry_min_types=limits.kernel_entry_min_types,
                         dominant_line_share=limits.dominant_line_share)
    legacy = doc.get("format") == CodeFormat.LEGACY
    instructions = instruction_dicts(analysis, False)
    busy, waves = split["busy_waves"], doc["waves"]
    per_wave = dict(waves.get("per_wave") or {})
    if per_wave.get("duration"):
        per_wave["duration"] = {**per_wave["duration"], "mean": split["busy_mean_cycles"]}
    view = {
        **doc,
        "totals": _totals(doc, instructions, busy),
        "stall_by_type": type_dicts(analysis, legacy, False),
        "source_lines": line_dicts(analysis, False),
        "instructions": instructions,
        "waves": {**waves, "waves": busy, "per_wave": per_wave,
                  "waitcnt": split.get("busy_waitcnt", waves.get("waitcnt")),
                  "wait_links": split.get("busy_wait_links", waves.get("wait_links")),
                  "work_split": {**split, "cost_basis": BUSY_BASIS}},
    }
    view["costs"] = cost_summary(instructions, busy)
    whole = doc.get("structure") or structure_of(doc, limits)
    structure = structure_of({k: v for k, v in view.items() if k != "structure"}, limits)
    view["structure"] = {**structure, **{key: whole.get(key) for key in WHOLE_TRACE}}
    return view
