"""What each agent tool answers, as bounded dicts built from a loaded analysis (pure functions)."""

from __future__ import annotations

import json
import re
from typing import Any

from kerneltrace.readers.codejson import CodeFormat

# The stated bound of summary(): an agent can read it whole without paging.
SUMMARY_LIMIT = 4000
# The other answers are drill-downs: larger, still bounded.
DRILL_LIMIT = 8000
TEXT_CAP = 240  # one sentence of evidence or advice
TOP_FINDINGS = 5

GAIN_UNITS = {
    "kernel_time": "of kernel time",
    "stall_cycles": "of stall cycles",
    "latency_cycles": "of latency cycles",
    "wave_time": "of wave time",
}


def clip(text: Any, limit: int = TEXT_CAP) -> str:
    """One line of at most ``limit`` characters (whitespace folded)."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def size(answer: dict) -> int:
    """Characters of the answer as the agent receives it: the SDK sends a tool's dict as JSON
    indented by two spaces (and the same dict as structured content)."""
    return len(json.dumps(answer, ensure_ascii=False, indent=2))


def bounded(answer: dict, limit: int, lists: tuple[str, ...]) -> dict:
    """Drop items from the end of the named lists (longest first) until the answer fits ``limit``;
    each shortened list is counted in ``truncated`` so the agent knows to ask for more."""
    answer = dict(answer)
    dropped: dict[str, int] = {}
    while size(answer) > limit:
        candidates = [key for key in lists if isinstance(answer.get(key), list) and answer[key]]
        if not candidates:
            break
        key = max(candidates, key=lambda name: size({name: answer[name]}))
        answer[key] = answer[key][:-1]
        dropped[key] = dropped.get(key, 0) + 1
        answer["truncated"] = dict(dropped)
    return answer


def gain_text(gain: dict | None) -> str:
    if not gain:
        return "no estimate"
    unit = GAIN_UNITS.get(gain.get("unit") or "stall_cycles", f"of {gain.get('unit')}")
    return f"{float(gain.get('low') or 0):.1%}–{float(gain.get('high') or 0):.1%} {unit}"


def evidence_line(finding: dict) -> str:
    """The finding's strongest evidence row as one line: `#N asm (stall C)`."""
    rows = finding.get("evidence") or []
    if not rows:
        return clip(finding.get("root_cause"))
    row = max(rows, key=lambda item: item.get("stall_cycles") or 0)
    parts = []
    if row.get("instruction_index") is not None:
        parts.append(f"#{row['instruction_index']}")
    if row.get("asm"):
        parts.append(f"`{clip(row['asm'], 80)}`")
    if row.get("stall_cycles") is not None:
        parts.append(f"stall {row['stall_cycles']:,} cycles")
    if row.get("location"):
        parts.append(f"at {row['location']}")
    if len(rows) > 1:
        parts.append(f"(+{len(rows) - 1} more rows)")
    return clip(" ".join(parts))


def arch_text(document: dict) -> str:
    """`gfx950 from big_agent_info.csv`: the arch and the file (or evidence) it came from."""
    arch = document.get("arch") or {}
    candidates = ", ".join(arch.get("candidates") or [])
    if not arch.get("name"):
        return f"unknown (candidates: {candidates})" if candidates else "unknown"
    source = arch.get("source_file") or arch.get("source")
    csv = (document.get("metadata") or {}).get("agent_info_csv")
    if source == "agent_info" and csv:
        source = str(csv).replace("\\", "/").rsplit("/", 1)[-1]
    text = f"{arch['name']} from {source}" if source and source != "unknown" else arch["name"]
    return text if arch.get("certain", True) else f"{text} (uncertain: {candidates})"


def quality_notes(document: dict, plan: dict) -> list[str]:
    """Capture-quality notes: what the capture lacks or may distort, never ranked as changes."""
    given = plan.get("capture_quality")
    if isinstance(given, list) and given:
        return [clip(note.get("note") or note.get("kind") if isinstance(note, dict) else note) for note in given]
    notes: list[str] = []
    mapping = document.get("source_mapping") or {}
    if mapping.get("hint"):
        notes.append(clip(mapping["hint"]))
    if document.get("format") == CodeFormat.LEGACY:
        notes.append("legacy rocprofv2 capture: no stall column, ranked by latency")
    if document.get("format") == CodeFormat.PCSAMPLING:
        notes.append("PC-sampling capture: ranked by stalled samples, no cycle counts")
    if not document.get("waves") and document.get("format") == CodeFormat.V3:
        notes.append("no wave files: per-hit timing, wave states and wait→load links are unavailable")
    arch = document.get("arch") or {}
    if not arch.get("name") or not arch.get("certain", True):
        notes.append("architecture uncertain: occupancy and latency tables are not arch-specific")
    notes.extend(clip(warning) for warning in document.get("capture_warnings") or [])
    return notes


def _findings(plan: dict) -> list[dict]:
    return [f for f in plan.get("findings") or [] if f.get("ranked", True)]


def summary(name: str, loaded_document: dict, plan: dict) -> dict:
    """Verdict, capture quality and the top findings of one dispatch, ≤ SUMMARY_LIMIT characters."""
    verdict = plan.get("bottleneck") or {}
    findings = _findings(plan)
    top = [
        {
            "id": finding.get("id"),
            "priority": finding.get("priority"),
            "title": clip(finding.get("title"), 160),
            "gain": gain_text(finding.get("estimated_gain")),
            "evidence": evidence_line(finding),
        }
        for finding in findings[:TOP_FINDINGS]
    ]
    answer: dict[str, Any] = {
        "dir": name,
        "kernel": clip(loaded_document.get("kernel"), 120),
        "arch": clip(arch_text(loaded_document), 160),
        "verdict": {
            "kind": verdict.get("kind"),
            "confidence": verdict.get("confidence"),
            "why": clip(verdict.get("sentence") or verdict.get("evidence"), 400),
        },
    }
    launch = plan.get("launch")
    if isinstance(launch, dict) and launch:
        answer["launch"] = {key: launch[key] for key in list(launch)[:8]
                            if isinstance(launch[key], int | float | str | None)}
    answer["capture_quality"] = quality_notes(loaded_document, plan)[:5]
    answer["findings"] = top
    if len(findings) > TOP_FINDINGS:
        answer["more_findings"] = len(findings) - TOP_FINDINGS
    first = top[0]["id"] if top else None
    answer["next"] = [
        *([f"explain(dir={name!r}, id={first!r})"] if first else []),
        f"hotspots(dir={name!r}, by='line')",
        f"next_capture(dir={name!r})",
    ]
    answer = bounded(answer, SUMMARY_LIMIT, ("capture_quality", "findings"))
    return answer


def _metric(document: dict) -> str:
    ranked = document.get("ranked_by") or "stall_cycles"
    return "pc_stalled" if ranked == "pc_stalled" else ranked


def _instruction_row(ins: dict, metric: str) -> dict:
    row = {"id": f"#{ins.get('index')}", "asm": clip(ins.get("asm"), 100), "type": ins.get("type"),
           "hits": ins.get("hits"), metric: ins.get(metric)}
    if metric != "latency_cycles" and ins.get("latency_cycles") is not None:
        row["latency_cycles"] = ins.get("latency_cycles")
    if ins.get("source"):
        row["source"] = ins["source"]
    return row


def hotspots(name: str, document: dict, by: str, top: int) -> dict:
    """The ``top`` source lines, instructions or instruction regions by the capture's ranking metric."""
    metric = _metric(document)
    rows: list[dict]
    if by == "line":
        rows = []
        for line in (document.get("source_lines") or [])[:top]:
            row = {"id": line.get("location"), metric: line.get(metric), "share": round(line.get("share") or 0, 4),
                   "hits": line.get("hits"), "dominant_type": line.get("dominant_type")}
            if line.get("artifact"):
                row["artifact"] = line["artifact"]
            rows.append(row)
    elif by == "instruction":
        ranked = sorted(document.get("instructions") or [], key=lambda ins: -(ins.get(metric) or 0))
        rows = [_instruction_row(ins, metric) for ins in ranked[:top]]
    elif by == "region":
        from kerneltrace.analysis.regions import split_regions

        program = sorted(document.get("instructions") or [], key=lambda ins: ins.get("index") or 0)
        artifacts = {line.get("location") for line in document.get("source_lines") or [] if line.get("artifact")}
        regions = split_regions(program, {a for a in artifacts if a}, metric)
        total = sum(region.metric_cycles for region in regions) or 1
        rows = [{"id": f"#{region.first_index}-#{region.last_index}", "rows": region.name, metric: region.metric_cycles,
                 "share": round(region.metric_cycles / total, 4)} for region in regions[:top]]
    else:
        raise ValueError(by)
    answer = {"dir": name, "by": by, "metric": metric, "rows": rows,
              "next": [f"explain(dir={name!r}, id={rows[0]['id']!r})"] if rows else []}
    return bounded(answer, DRILL_LIMIT, ("rows",))


INSTRUCTION_ID = re.compile(r"#?(\d+)")
REGION_ID = re.compile(r"(?:REGION-hotspot@)?(?:rows)?#?(\d+)[-–]#?(\d+)")


def _snippet(sources, location: str | None, context: int = 3) -> dict | None:
    """The source lines around ``location`` (`path:line`) from the dispatch dir's own copies."""
    if not location or ":" not in location:
        return None
    path, _, number = location.rpartition(":")
    if not number.isdigit():
        return None
    local = sources.resolve(path)
    if local is None:
        return None
    try:
        lines, _ = sources.lines(local)
    except Exception:  # an unreadable copy is no snippet, not an error
        return None
    line = int(number)
    first = max(1, line - context)
    return {"path": path, "first_line": first,
            "lines": [clip(text, 160) for text in lines[first - 1: line + context]]}


def _waits_and_loads(document: dict, index: int) -> dict:
    """For an s_waitcnt: the loads it drains; for a load: the waits that drain it (wave files)."""
    waitcnt = (document.get("waves") or {}).get("waitcnt") or []
    related: dict[str, list] = {}
    for wait in waitcnt:
        producers = wait.get("producers") or []
        if wait.get("index") == index:
            related["drains"] = [{"id": f"#{p.get('index')}", "asm": clip(p.get("asm"), 80),
                                  "cycles": p.get("cycles"), "share": p.get("share")} for p in producers[:8]]
        for producer in producers:
            if producer.get("index") == index:
                related.setdefault("drained_by", []).append(
                    {"id": f"#{wait.get('index')}", "asm": clip(wait.get("asm"), 60), "cycles": producer.get("cycles")})
    return related


def _findings_citing(plan: dict, index: int | None = None, location: str | None = None) -> list[str]:
    cited = []
    for finding in plan.get("findings") or []:
        rows = finding.get("evidence") or []
        if (index is not None and any(row.get("instruction_index") == index for row in rows)) or (
                location is not None and (finding.get("location") == location
                                          or any(row.get("location") == location for row in rows))):
            cited.append(finding.get("id"))
    return cited


def explain_instruction(name: str, document: dict, plan: dict, sources, index: int) -> dict | None:
    program = {ins.get("index"): ins for ins in document.get("instructions") or []}
    ins = program.get(index)
    if ins is None:
        return None
    metric = _metric(document)
    around = [_instruction_row(program[i], metric) for i in range(index - 3, index + 4) if i in program and i != index]
    answer = {"dir": name, "kind": "instruction", "id": f"#{index}", "instruction": _instruction_row(ins, metric),
              **_waits_and_loads(document, index), "findings": _findings_citing(plan, index=index),
              "around": around}
    snippet = _snippet(sources, ins.get("source"))
    if snippet:
        answer["source_snippet"] = snippet
    answer["next"] = [f"explain(dir={name!r}, id={fid!r})" for fid in answer["findings"][:2]] + (
        [f"explain(dir={name!r}, id={ins['source']!r})"] if ins.get("source") else [])
    return bounded(answer, DRILL_LIMIT, ("around", "drained_by", "drains"))


def explain_line(name: str, document: dict, plan: dict, sources, location: str) -> dict | None:
    line = next((item for item in document.get("source_lines") or [] if item.get("location") == location), None)
    if line is None:
        matches = [item for item in document.get("source_lines") or []
                   if (item.get("location") or "").endswith(location)]
        line = matches[0] if len(matches) == 1 else None
    if line is None:
        return None
    metric = _metric(document)
    program = {ins.get("index"): ins for ins in document.get("instructions") or []}
    members = sorted((program[i] for i in line.get("instructions") or [] if i in program),
                     key=lambda ins: -(ins.get(metric) or 0))
    answer = {"dir": name, "kind": "line", "id": line.get("location"),
              "line": {metric: line.get(metric), "share": round(line.get("share") or 0, 4), "hits": line.get("hits"),
                       "dominant_type": line.get("dominant_type"), "artifact": line.get("artifact"),
                       "instruction_count": len(members)},
              "instructions": [_instruction_row(ins, metric) for ins in members[:12]],
              "findings": _findings_citing(plan, location=line.get("location"))}
    snippet = _snippet(sources, line.get("location"))
    if snippet:
        answer["source_snippet"] = snippet
    answer["next"] = [f"explain(dir={name!r}, id={row['id']!r})" for row in answer["instructions"][:2]]
    return bounded(answer, DRILL_LIMIT, ("instructions",))


def explain_finding(name: str, document: dict, plan: dict, sources, finding_id: str) -> dict | None:
    finding = next((f for f in plan.get("findings") or [] if f.get("id") == finding_id), None)
    if finding is None:
        return None
    rows = finding.get("evidence") or []
    evidence = []
    for row in rows[:10]:
        item = {key: row.get(key) for key in ("instruction_index", "location", "stall_cycles", "stall_rate")
                if row.get(key) is not None}
        if row.get("asm"):
            item["asm"] = clip(row["asm"], 100)
        if row.get("note"):
            item["note"] = clip(row["note"], 160)
        if row.get("instruction_index") is not None:
            item.update(_waits_and_loads(document, row["instruction_index"]))
        evidence.append(item)
    answer = {"dir": name, "kind": "finding", "id": finding_id, "rule": finding.get("rule"),
              "priority": finding.get("priority"), "title": clip(finding.get("title"), 300),
              "gain": gain_text(finding.get("estimated_gain")),
              "gain_basis": clip((finding.get("estimated_gain") or {}).get("basis"), 400),
              "root_cause": clip(finding.get("root_cause"), 800), "fix": clip(finding.get("fix"), 800),
              "evidence": evidence, "evidence_rows": len(rows)}
    for flag in ("contradicts_verdict", "verdict_aligned", "once_per_wave", "overlap_group"):
        if finding.get(flag):
            answer[flag] = finding[flag]
    snippet = _snippet(sources, finding.get("location"))
    if snippet:
        answer["source_snippet"] = snippet
    cited = [f"#{row['instruction_index']}" for row in rows if row.get("instruction_index") is not None]
    answer["next"] = [f"explain(dir={name!r}, id={ref!r})" for ref in cited[:2]]
    return bounded(answer, DRILL_LIMIT, ("evidence",))


def explain_region(name: str, document: dict, plan: dict, first: int, last: int) -> dict | None:
    metric = _metric(document)
    members = [ins for ins in document.get("instructions") or [] if first <= (ins.get("index") or -1) <= last]
    if not members:
        return None
    ranked = sorted(members, key=lambda ins: -(ins.get(metric) or 0))
    total = sum(ins.get(metric) or 0 for ins in document.get("instructions") or []) or 1
    cycles = sum(ins.get(metric) or 0 for ins in members)
    cited = sorted({fid for ins in ranked[:12] for fid in _findings_citing(plan, index=ins.get("index"))})
    answer = {"dir": name, "kind": "region", "id": f"#{first}-#{last}",
              "region": {metric: cycles, "share": round(cycles / total, 4), "instruction_count": len(members)},
              "instructions": [_instruction_row(ins, metric) for ins in ranked[:12]], "findings": cited,
              "next": [f"explain(dir={name!r}, id={row['id']!r})" for row in
                       [_instruction_row(ins, metric) for ins in ranked[:2]]]}
    return bounded(answer, DRILL_LIMIT, ("instructions", "findings"))


def explain(name: str, document: dict, plan: dict, sources, ident: str) -> dict | None:
    """A finding id, an instruction (`#123`), a region (`#10-#20`) or a source line (`file.py:42`);
    None when unknown."""
    ident = str(ident).strip()
    found = explain_finding(name, document, plan, sources, ident)
    if found is None:
        match = INSTRUCTION_ID.fullmatch(ident)
        if match:
            found = explain_instruction(name, document, plan, sources, int(match.group(1)))
    if found is None:
        match = REGION_ID.fullmatch(ident)
        if match:
            found = explain_region(name, document, plan, int(match.group(1)), int(match.group(2)))
    if found is None:
        found = explain_line(name, document, plan, sources, ident)
    return found


def next_capture(name: str, document: dict, plan: dict) -> dict:
    """What the capture lacks for a sharper plan and the exact settings that would get it."""
    steps: list[dict] = []
    fmt = document.get("format")
    if fmt == CodeFormat.LEGACY:
        steps.append({"missing": "stall and idle columns (legacy rocprofv2 trace)",
                      "get_it": "re-capture with rocprofv3 --att (ROCm 7.x) and the rocprof-trace-decoder",
                      "config": "snakemake -c all --config cmd='YOUR BENCHMARK'"})
    if fmt == CodeFormat.PCSAMPLING:
        steps.append({"missing": "per-instruction cycles (PC sampling counts samples only)",
                      "get_it": "capture ATT: rocprofv3 --att --att-target-cu 1 -d OUT -- CMD",
                      "config": "snakemake -c all --config cmd='YOUR BENCHMARK'"})
    mapping = document.get("source_mapping") or {}
    if (mapping.get("mapped_fraction") or 0) < 0.5:
        steps.append({"missing": "source line tables (instructions map to no source line)",
                      "get_it": "FlyDSL: FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1 and a cleared JIT cache; HIP: -g or "
                                "-gline-tables-only; Triton: keep line info (no -g0)",
                      "config": "env: {FLYDSL_DEBUG_ENABLE_DEBUG_INFO: '1'}"})
    if fmt == CodeFormat.V3 and not document.get("waves"):
        steps.append({"missing": "wave files (se*_sm*_sl*_wv*.json): per-hit timing, wave states, wait→load links",
                      "get_it": "keep the whole ui_output_agent_*_dispatch_* folder the decoder writes (the wave "
                                "files are often dropped when captures are copied), then re-run with --waves",
                      "config": "scripts/hotspot_analyzer.py DIR --waves"})
    arch = document.get("arch") or {}
    if not arch.get("name") or not arch.get("certain", True):
        steps.append({"missing": "the GPU architecture",
                      "get_it": "keep rocprofv3's <pid>_agent_info.csv beside the capture, or name it",
                      "config": "arch: gfx942 (config) / --arch gfx942 (CLI)"})
    truncated = [w for w in document.get("capture_warnings") or [] if "trunc" in str(w).lower()
                 or "buffer" in str(w).lower() or "lost" in str(w).lower()]
    if truncated:
        steps.append({"missing": "a complete trace (the buffer filled or data was lost)",
                      "get_it": "rocprofv3 --att-buffer-size 0xC000000, or fewer shader engines",
                      "config": "att_buffer_size: '0xC000000'  att_shader_engine_mask: '0x1'"})
    if not plan.get("l2"):
        steps.append({"missing": "PMC counters (L2 hit rate, HBM bytes: bandwidth- vs latency-bound)",
                      "get_it": "single-pass counter jobs: rocprofv3 --pmc TCC_HIT_sum TCC_MISS_sum ... -- CMD",
                      "config": "pmc: {enabled: true}"})
    waves = (document.get("waves") or {}).get("waves") or 0
    if document.get("waves") and waves and waves < 8:
        steps.append({"missing": f"steady state: only {waves} waves were traced on one CU",
                      "get_it": "trace another CU or a larger problem size to check the CU is representative",
                      "config": "att_target_cu: 2"})
    answer = {"dir": name, "steps": steps, "complete": not steps,
              "next": [f"summary(dir={name!r})"]}
    return bounded(answer, DRILL_LIMIT, ("steps",))


def comparison(before_name: str, after_name: str, result: dict) -> dict:
    """Verdict and estimated kernel-time change of a before/after pair (kerneltrace.compare/1)."""
    estimate = result.get("estimated_time_change") or {}
    answer: dict[str, Any] = {"before": before_name, "after": after_name, "kind": result.get("kind"),
                              "verdict": result.get("verdict"), "verdict_basis": result.get("verdict_basis")}
    if result.get("kind") == "set":
        answer["pairs"] = [{"key": pair.get("key"), "verdict": pair.get("verdict"),
                            "time_change": (pair.get("estimated_time_change") or {}).get("value")}
                           for pair in (result.get("pairs") or result.get("dispatches") or [])[:20]]
    if estimate.get("value") is not None and result.get("verdict") != "not-comparable":
        answer["estimated_time_change"] = {key: estimate.get(key) for key in ("value", "low", "high", "basis")}
        answer["visible"] = estimate.get("visible", True)
    work = result.get("work_per_wave")
    if isinstance(work, dict) and work:
        answer["work_per_wave"] = {key: work.get(key) for key in ("hits_per_wave_before", "hits_per_wave_after",
                                                                  "ratio", "comparable_per_wave") if key in work}
    answer["reasons"] = [clip(reason, 300) for reason in result.get("reasons") or []][:5]
    answer["notes"] = [clip(note, 240) for note in result.get("notes") or []][:5]
    changes = (result.get("lines") or {}).get("items") or []
    answer["top_line_changes"] = [{"location": item.get("location"), "status": item.get("status"),
                                   "delta_per_wave": item.get("delta_per_wave"),
                                   "relative_per_wave": item.get("relative_per_wave")} for item in changes[:5]]
    answer["next"] = [f"summary(dir={after_name!r})", f"summary(dir={before_name!r})"]
    return bounded(answer, DRILL_LIMIT, ("top_line_changes", "notes", "reasons", "pairs"))
