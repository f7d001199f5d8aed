"""Render plan.md (Markdown, sanitised) and plan.html (autoescaped, self-contained) with Jinja2."""

from __future__ import annotations

import re

from kerneltrace.analysis.hotspots import user_lines
from kerneltrace.render.markdown import md_cell, md_code, md_fence, md_prose, md_text
from kerneltrace.render.templates import TEMPLATE_DIR

TOP_LINES = 5
HEAT_LINES = 15

def html_prose(value: object):
    """HTML-escaped prose with `code spans` turned into <code> elements."""
    from markupsafe import Markup, escape

    parts = re.split(r"`([^`]*)`", str(value))
    return Markup("").join(
        Markup("<code>{}</code>").format(part) if i % 2 else escape(part)
        for i, part in enumerate(parts)
    )


def fmt_cycles(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return "n/a"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}"


def fmt_pct(value: object, digits: int = 1) -> str:
    return f"{value:.{digits}%}" if isinstance(value, int | float) else "n/a"


def fmt_gain(gain: dict | None) -> str:
    if not gain:
        return "not estimated"
    if not gain.get("high"):
        return "none expected"
    unit = {"kernel_time": "of kernel time", "latency_cycles": "of latency cycles",
            "wave_time": "of the waves' time"}.get(gain.get("unit"), "of stall cycles")
    return f"{gain['low']:.1%}–{gain['high']:.1%} {unit} ({gain.get('status', 'hypothesis')})"


def _environment(autoescape: bool):
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        md=md_text,
        hprose=html_prose,
        prose=md_prose,
        code=md_code,
        cell=md_cell,
        fence=md_fence,
        cycles=fmt_cycles,
        pct=fmt_pct,
        gain=fmt_gain,
    )
    return env


def _hotspot_index(hotspot_docs: list[dict]) -> dict[str, dict]:
    return {doc.get("dispatch_dir"): doc for doc in hotspot_docs}


def source_heat(hotspot_doc: dict | None, snippets: dict[str, dict] | None) -> list[dict]:
    """Snippet windows merged per file, every source line with its stall and heat (0..1)."""
    from kerneltrace.sourceloc import split_location

    if not snippets:
        return []
    lines = (hotspot_doc or {}).get("source_lines") or []
    stats = {split_location(line.get("location") or ""): line for line in lines}
    top_share = max(
        (line.get("share") or 0 for line in lines if not line.get("artifact")), default=0
    )
    hot = {split_location(location) for location in snippets}
    windows: dict[str, list[tuple[int, list[str]]]] = {}
    for snippet in snippets.values():
        windows.setdefault(snippet["path"], []).append((snippet["first_line"], snippet["lines"]))
    blocks = []
    for path, spans in windows.items():
        text: dict[int, str] = {}
        for first, block_lines in spans:
            text.update((first + offset, line) for offset, line in enumerate(block_lines))
        numbers = sorted(text)
        runs: list[list[int]] = [[numbers[0]]]
        for number in numbers[1:]:
            if number == runs[-1][-1] + 1:
                runs[-1].append(number)
            else:
                runs.append([number])
        for run in runs:
            rows = []
            for number in run:
                line = stats.get((path, number)) or {}
                share = line.get("share") or 0.0
                rows.append(
                    {
                        "number": number,
                        "text": text[number],
                        "stall_cycles": line.get("stall_cycles"),
                        "share": share if line else None,
                        "artifact": line.get("artifact"),
                        "hot": (path, number) in hot,
                        "intensity": min(share / top_share, 1.0) if top_share else 0.0,
                    }
                )
            blocks.append({"path": path, "rows": rows, "peak": max(r["share"] or 0 for r in rows)})
    return sorted(
        blocks, key=lambda block: (-block["peak"], block["path"], block["rows"][0]["number"])
    )


def occupancy_view(dispatch: dict, hotspot_doc: dict | None) -> dict:
    """Arch candidates, the occupancy they agree on (if they all do), and the measured one."""
    occ = dispatch.get("occupancy") or {}
    arch = dispatch.get("arch") or {}
    per = occ.get("per_candidate") or {}
    values = {(v or {}).get("waves_per_simd") for v in per.values()}
    agreed = next(iter(values)) if len(values) == 1 and None not in values else None
    measured = ((hotspot_doc or {}).get("waves") or {}).get("occupancy") or {}
    return {
        "candidates": arch.get("candidates") or list(per),
        "agreed_waves_per_simd": agreed,
        "agreed_limited_by": sorted({(v or {}).get("limited_by") or "?" for v in per.values()})
        if agreed is not None else [],
        "measured": measured if measured.get("available") else None,
    }


def dispatch_view(dispatch: dict, hotspot_doc: dict | None, snippets: dict | None = None) -> dict:
    """Everything a template needs for one dispatch, in display order."""
    doc = hotspot_doc or {}
    findings = dispatch["findings"]
    lines = [
        line
        for line in doc.get("source_lines") or []
        if (line.get("stall_cycles") or 0) > 0 or (line.get("share") or 0) > 0
    ]
    real = user_lines(lines, TOP_LINES)
    by_location: dict[str, list[dict]] = {}
    for finding in findings:
        if finding.get("location"):
            by_location.setdefault(finding["location"], []).append(finding)
    shown = {line["location"] for line in real}
    top_share = max((line.get("share") or 0 for line in lines), default=0)
    stall_by_type = dispatch.get("stall_by_type") or []
    totals = dispatch.get("totals") or {}
    return {
        "dispatch": dispatch,
        "bottleneck": dispatch.get("bottleneck"),
        "gain_bound": dispatch.get("gain_bound"),
        "gain_bound_kernel_time": dispatch.get("gain_bound_kernel_time"),
        "no_stall": not totals.get("stall_cycles") and dispatch.get("format") != "pcsampling",
        "occupancy": occupancy_view(dispatch, doc),
        "kernel_doc": doc,
        "top_type": stall_by_type[0] if stall_by_type else None,
        "hotspots": [
            {"line": line, "findings": by_location.get(line["location"], [])} for line in real
        ],
        "other_findings": [f for f in findings if f.get("location") not in shown],
        "ranked": [f for f in findings if f.get("ranked", True)],
        "heat": [
            {
                "line": line,
                "intensity": (line.get("share") or 0) / top_share if top_share else 0,
            }
            for line in lines[:HEAT_LINES]
        ],
        "warnings": doc.get("warnings") or [],
        "source_heat": source_heat(doc, snippets),
    }


def _views(
    summary: dict, hotspot_docs: list[dict], snippets: dict[str, dict] | None = None
) -> list[dict]:
    index = _hotspot_index(hotspot_docs)
    snippets = snippets or {}
    kernels = []
    for kernel in summary.get("kernels") or []:
        dispatches = [
            dispatch_view(d, index.get(d.get("dispatch_dir")), snippets.get(d.get("dispatch_dir")))
            for d in kernel["dispatches"]
        ]
        kernels.append({"name": kernel["name"], "dispatches": dispatches})
    return kernels


def render_markdown(summary: dict, hotspot_docs: list[dict]) -> str:
    template = _environment(autoescape=False).get_template("plan.md.j2")
    return template.render(summary=summary, kernels=_views(summary, hotspot_docs))


def render_charts(dispatch: dict, doc: dict) -> dict[str, str]:
    """Inline SVG charts for one summary dispatch and its hotspot document ({} when missing);
    empty strings are skipped by the template."""
    from kerneltrace.render import charts

    return {
        "Stall by type": charts.stall_by_type_chart(dispatch.get("stall_by_type") or []),
        "Top lines": charts.top_lines_chart(doc.get("source_lines") or []),
        "Occupancy limiters": charts.occupancy_chart(dispatch.get("occupancy") or {}),
        "L2 / HBM": charts.l2_chart(dispatch.get("l2") or {}),
    }


def plan_charts(summary: dict, hotspot_docs: list[dict]) -> list[list[dict[str, str]]]:
    """Every chart of the plan, drawn once: ``[kernel][dispatch] -> {title: SVG}`` (summary order)."""
    index = _hotspot_index(hotspot_docs)
    return [
        [
            render_charts(dispatch, index.get(dispatch.get("dispatch_dir")) or {})
            for dispatch in kernel["dispatches"]
        ]
        for kernel in summary.get("kernels") or []
    ]


def chart_files(charts: list[list[dict[str, str]]]) -> dict[str, str]:
    """{file name: SVG} of every non-empty chart of :func:`plan_charts`, named
    k<kernel>_d<dispatch>_<chart slug>.svg."""
    files = {}
    for k, kernel in enumerate(charts):
        for n, drawn in enumerate(kernel):
            for title, svg in drawn.items():
                if svg:
                    slug = title.lower().replace(" / ", "_").replace(" ", "_")
                    files[f"k{k}_d{n}_{slug}.svg"] = svg + "\n"
    return files


def render_html(
    summary: dict,
    hotspot_docs: list[dict],
    l2_docs: list[dict] | None = None,
    snippets: dict[str, dict[str, dict]] | None = None,
    charts: list[list[dict[str, str]]] | None = None,
) -> str:
    """plan.html; `snippets`: {dispatch_dir: {location: snippet}} from readers.snippets (optional);
    `charts`: the plan's charts from :func:`plan_charts` (drawn here when not given)."""
    from markupsafe import Markup

    kernels = _views(summary, hotspot_docs, snippets)
    for k, kernel in enumerate(kernels):
        for n, view in enumerate(kernel["dispatches"]):
            drawn = (charts[k][n] if charts is not None
                     else render_charts(view["dispatch"], view["kernel_doc"]))
            # render/charts.py output: self-contained SVG whose text is XML-escaped.
            view["charts"] = {title: Markup(svg) for title, svg in drawn.items() if svg}
    template = _environment(autoescape=True).get_template("plan.html.j2")
    return template.render(summary=summary, kernels=kernels, l2_docs=l2_docs or [])


def plan_outputs(summary: dict, hotspot_docs: list[dict], l2_docs: list[dict], *,
                 charts: bool = False) -> dict[str, str]:
    """Every file of a plan folder by relative name (summary.json, plan.md, plan.html, and
    charts/*.svg when asked) for a summary the plan layer built (plan.summary.build_summary),
    all rendered before anything is written."""
    from kerneltrace.atomic import json_text
    from kerneltrace.plan.inputs import plan_snippets

    drawn = plan_charts(summary, hotspot_docs)  # drawn once: inline in plan.html and as files
    files = {"summary.json": json_text(summary),
             "plan.md": render_markdown(summary, hotspot_docs),
             "plan.html": render_html(summary, hotspot_docs, l2_docs, plan_snippets(hotspot_docs), drawn)}
    if charts:
        files.update({f"charts/{name}": svg for name, svg in chart_files(drawn).items()})
    return files
