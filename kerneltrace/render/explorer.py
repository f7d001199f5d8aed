"""Data of plan.html's source ⇄ ISA explorer: one compact JSON object per dispatch, embedded once.

The page's own script (templates/plan_explorer.js) draws the source and ISA views from it; the
summary and findings are plain HTML and need no script. Columns are parallel arrays in program
order (row index ascending) so a 5,000-instruction kernel stays a few hundred KB. Every string is
data: the page inserts it with textContent, and :func:`script_json` makes the embedding safe.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kerneltrace.analysis.loops import branch_target, find_loops, rows_from_instructions
from kerneltrace.analysis.regions import split_regions
from kerneltrace.isa import classify as isa
from kerneltrace.sourceloc import UNMAPPED, innermost_location, split_location

if TYPE_CHECKING:
    from kerneltrace.plan.context import PlanContext

# Characters that could end the <script> element or start a comment/CDATA inside it, plus the
# two line separators old JavaScript parsers reject: JSON-escaped, so JSON.parse gives them back.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                   "\u2028": "\\u2028", "\u2029": "\\u2029"}
COUNTED = {"vmcnt": (isa.VMEM_LOAD, isa.VMEM_STORE), "lgkmcnt": (isa.LDS, isa.SMEM)}


def script_json(data: object):
    """`data` as JSON text safe inside <script type="application/json"> (Markup: no re-escape)."""
    from markupsafe import Markup

    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return Markup("".join(_SCRIPT_ESCAPES.get(ch, ch) for ch in text))


def _column(instructions: list[dict], key: str) -> list:
    return [ins.get(key) for ins in instructions]


def _taken_ratios(program: list[dict]) -> list[list]:
    """[[branch row, target row or None, taken fraction or None, conditional]] per immediate branch.

    Taken counts come from hits alone: an unconditional branch is always taken; a conditional
    one is taken hits(branch) − hits(fall-through) times when the fall-through row has no other
    way in (it is not a branch target), or hits(target) times when the target can only be reached
    by this branch (the row before it never falls through and no other branch goes there).
    Otherwise the ratio is unknown (None), never guessed.
    """
    by_pc = {ins["pc"]: pos for pos, ins in enumerate(program) if ins.get("pc") is not None}
    edges = []
    for pos, ins in enumerate(program):
        if ins.get("pc") is None or ins.get("type") != isa.BRANCH:
            continue
        target = branch_target(ins["pc"], ins.get("asm") or "")
        if target is not None:
            edges.append((pos, by_pc.get(target), isa.opcode(ins.get("asm") or "") != "s_branch"))
    incoming: dict[int, int] = {}
    for _, target_pos, _ in edges:
        if target_pos is not None:
            incoming[target_pos] = incoming.get(target_pos, 0) + 1
    result = []
    for pos, target_pos, conditional in edges:
        hits = program[pos].get("hits") or 0
        taken: float | None = None
        if not conditional:
            taken = 1.0 if hits else None
        elif hits:
            after = pos + 1
            if after < len(program) and after not in incoming:
                taken = (hits - (program[after].get("hits") or 0)) / hits
            elif target_pos is not None and incoming.get(target_pos) == 1 and target_pos > 0 and (
                    isa.opcode(program[target_pos - 1].get("asm") or "") in ("s_branch", "s_endpgm")):
                taken = (program[target_pos].get("hits") or 0) / hits
        if taken is not None:
            taken = round(min(max(taken, 0.0), 1.0), 4)
        result.append([program[pos]["index"],
                       None if target_pos is None else program[target_pos]["index"],
                       taken, conditional])
    return result


def _static_wait_links(ctx: PlanContext) -> list[list]:
    """[[wait row, [[producer row, None, None]…], None]]: for each memory instruction, the first
    `s_waitcnt` that drains it (the plan rules' in-order counter walk, loop-aware)."""
    from kerneltrace.plan.rules.drain import (
        LGKM_COUNTERS,
        VMEM_COUNTERS,
        PatternThresholds,
        first_draining_wait,
        walk_limit,
    )

    wait_search = ctx.thresholds.of(PatternThresholds).wait_search

    counters = {"vmcnt": VMEM_COUNTERS, "lgkmcnt": LGKM_COUNTERS}
    links: dict[int, list[int]] = {}
    for ins in ctx.program_order:
        kind = next((name for name, types in COUNTED.items() if ins.get("type") in types), None)
        if kind is None:
            continue
        types = COUNTED[kind]
        drain = first_draining_wait(ctx, ins, counters[kind], lambda other, t=types: other.get("type") in t,
                                    walk_limit(ctx, ins["index"], wait_search))
        if drain is not None:
            links.setdefault(drain.wait["index"], []).append(ins["index"])
    return [[wait, [[row, None, None] for row in sorted(rows)], None] for wait, rows in sorted(links.items())]


def _wait_links(doc: dict, ctx: PlanContext) -> tuple[str, list[list]]:
    """(basis, [[wait row, [[producer row, cycles, waits]…], unattributed, basis]…]): the wave
    files' attribution (waves.wait_links) for every wait they list, the static counter walk for
    the others (waits the traced waves never ran, or a capture without wave files)."""
    listed = (doc.get("waves") or {}).get("wait_links")
    links = {w[0]: [*w, "static"] for w in _static_wait_links(ctx)}
    if isinstance(listed, list):
        links.update({w["index"]: [w["index"], w.get("producers") or [], w.get("unattributed_cycles"), "waves"]
                      for w in listed})
    return ("waves" if isinstance(listed, list) else "static"), [links[row] for row in sorted(links)]


def _per_hit(doc: dict, indexes: list[int]) -> tuple[list, list]:
    per_hit = ((doc.get("waves") or {}).get("peers") or {}).get("per_hit") or {}
    known = dict(zip(per_hit.get("index") or [], zip(per_hit.get("p50") or [], per_hit.get("p90") or [],
                                                     strict=False), strict=False))
    pairs = [known.get(index, (None, None)) for index in indexes]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _lines(doc: dict, files: list[str]) -> list[dict]:
    """The document's source lines (ranking order) with their file and line number."""
    file_ids = {path: n for n, path in enumerate(files)}
    out = []
    for line in doc.get("source_lines") or []:
        location = line.get("location") or UNMAPPED
        path, number = split_location(location)
        out.append({"loc": location, "file": file_ids.get(path, -1) if number is not None else -1,
                    "line": number, "metric": line.get(doc.get("ranked_by") or "stall_cycles"),
                    "stall": line.get("stall_cycles"), "hits": line.get("hits"),
                    "artifact": line.get("artifact"), "type": line.get("dominant_type")})
    return out


def _findings(dispatch: dict, line_rows: dict[str, list[int]], known: set[int]) -> list[dict]:
    """Each finding with the rows of its evidence (its line's rows when evidence names none)."""
    out = []
    for finding in dispatch.get("findings") or []:
        evidence = finding.get("evidence") or []
        rows = [e["instruction_index"] for e in evidence if e.get("instruction_index") in known]
        locations = [e.get("location") for e in evidence if e.get("location")]
        if not rows:
            for location in [finding.get("location"), *locations]:
                rows.extend(line_rows.get(location or "", []))
        out.append({"id": finding.get("id"), "title": finding.get("title"),
                    "priority": finding.get("priority"),
                    "rows": sorted(set(rows)),
                    # the finding's own line first: the source view opens there
                    "locations": list(dict.fromkeys(loc for loc in [finding.get("location"), *locations] if loc))})
    return out


def explorer_data(dispatch: dict, doc: dict | None) -> dict | None:
    """The explorer's data for one summary dispatch and its hotspot document (None without one)."""
    from kerneltrace.plan.context import PlanContext

    program = sorted((doc or {}).get("instructions") or [], key=lambda ins: ins["index"])
    if not program:
        return None
    ranked_by = doc.get("ranked_by") or "stall_cycles"
    source_files = doc.get("source_files") or {}
    paths: list[str] = []
    for line in doc.get("source_lines") or []:
        path, number = split_location(line.get("location") or "")
        if number is not None and path not in paths:
            paths.append(path)
    lines = _lines(doc, paths)
    line_id = {line["loc"]: n for n, line in enumerate(lines)}
    indexes = [ins["index"] for ins in program]
    line_rows: dict[str, list[int]] = {}
    for ins in program:
        line_rows.setdefault(innermost_location(ins.get("source") or "") or UNMAPPED, []).append(ins["index"])
    types = sorted({ins.get("type") or "other" for ins in program})
    p50, p90 = _per_hit(doc, indexes)
    ctx = PlanContext(hotspots=doc)  # the loops and program order the plan rules see
    wait_basis, waits = _wait_links(doc, ctx)
    iterated = {loop.first_index for loop in ctx.static_loops}
    loops = [[loop.first_index, loop.last_index, loop.depth, loop.trip_count, loop.first_index in iterated]
             for loop in find_loops(rows_from_instructions(program))]
    blocks = sorted([region.first_index, region.last_index]
                    for region in split_regions(program, set(), ranked_by, at_waits=False))
    return {
        "ranked_by": ranked_by,
        "has_waves": bool(doc.get("waves")),
        "files": [{"path": path, "lines": (source_files.get(path) or {}).get("lines")} for path in paths],
        "lines": lines,
        "isa": {
            "index": indexes,
            "asm": _column(program, "asm"),
            "type": [types.index(ins.get("type") or "other") for ins in program],
            "line": [line_id.get(innermost_location(ins.get("source") or "") or UNMAPPED, -1)
                     for ins in program],
            "hits": _column(program, "hits"),
            "stall": _column(program, "stall_cycles"),
            "latency": _column(program, "latency_cycles"),
            "idle": _column(program, "idle_cycles"),
            "metric": _column(program, ranked_by),
            "p50": p50,
            "p90": p90,
        },
        "types": types,
        "loops": loops,
        "blocks": blocks,
        "branches": _taken_ratios(program),
        "wait_basis": wait_basis,
        "waits": waits,
        "findings": _findings(dispatch, line_rows, set(indexes)),
    }
