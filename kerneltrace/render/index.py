"""reports/index.html: one row per run under reports/ linking its plan, with kernel time and launch size (Jinja2, autoescaped)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltrace.render.templates import TEMPLATE_DIR

TEMPLATE = "index.html.j2"


@dataclass
class RunRow:
    """What the index shows for one run; links are relative to reports/."""

    name: str
    plan_html: str
    plan_md: str
    kernels: list[dict[str, Any]] = field(default_factory=list)
    synthetic: bool = False
    regression: str | None = None  # verdict of reports/{run}/regression.json, if any
    regression_md: str | None = None


def _triple(value: object) -> str | None:
    """[x, y, z] (or a number) as "x×y×z"; None when it is not a list of integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return "×".join(str(v) for v in value)
    return None


def launch_facts(entry: Mapping[str, Any], hotspot_doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """Kernel time (ns) and launch size of one dispatch: the summary entry's ``launch`` object when
    it has one, else the kernel-trace row its hotspot document carries (metadata.kernel_trace)."""
    sources = []
    if isinstance(entry.get("launch"), Mapping):
        sources.append(entry["launch"])
    meta = (hotspot_doc or {}).get("metadata") if isinstance(hotspot_doc, Mapping) else None
    if isinstance(meta, Mapping) and isinstance(meta.get("kernel_trace"), Mapping):
        sources.append(meta["kernel_trace"])

    def first(*keys: str) -> object:
        for source in sources:
            for key in keys:
                if source.get(key) is not None:
                    return source[key]
        return None

    duration = first("duration_ns", "kernel_time_ns")
    return {
        "duration_ns": duration if isinstance(duration, (int, float)) and not isinstance(duration, bool)
        and duration >= 0 else None,
        "grid": _triple(first("grid_size", "grid")),
        "workgroup": _triple(first("workgroup_size", "workgroup")),
    }


def run_row(
    name: str, summary: Mapping[str, Any] | None, regression: Mapping[str, Any] | None = None,
    hotspot_docs: list[Mapping[str, Any]] | None = None,
) -> RunRow:
    """Build one index row from a run's summary (and regression, and kept hotspot) documents."""
    summary_kernels = (summary or {}).get("kernels") or []
    docs = [doc for doc in hotspot_docs or [] if isinstance(doc, Mapping)]
    doc_of = iter(_hotspot_of_dispatch(
        [[str(d.get("dispatch_dir")) for d in kernel.get("dispatches") or []] for kernel in summary_kernels],
        [str(doc.get("dispatch_dir")) for doc in docs]))
    kernels = []
    for kernel in summary_kernels:
        dispatches = kernel.get("dispatches") or []
        # one value per dispatch, never a sum: dispatches grouped under one name (unknown kernels,
        # truncated template names) need not be the same kernel, and stall is not time
        stalls = []
        for d in dispatches:
            position = next(doc_of)
            stalls.append(
                {"label": _dispatch_label(d), "stall_cycles": (d.get("totals") or {}).get("stall_cycles"),
                 **launch_facts(d, docs[position] if position is not None else None),
                 "launch": _launch_text(d.get("launch"))})
        findings = [f for d in dispatches for f in d.get("findings") or []]
        top = findings[0].get("title") if findings and isinstance(findings[0], Mapping) else None
        kernels.append(
            {
                "name": kernel.get("name") or "(unknown kernel)",
                "dispatches": len(dispatches),
                "stalls": stalls,
                "top_finding": top,
            }
        )
    return RunRow(
        name=name,
        plan_html=f"{name}/plan.html",
        plan_md=f"{name}/plan.md",
        kernels=kernels,
        synthetic=bool((summary or {}).get("synthetic")),
        regression=(regression or {}).get("verdict"),
        regression_md=f"{name}/regression.md" if regression else None,
    )


def _hotspot_of_dispatch(dispatch_dirs: list[list[str]], doc_dirs: list[str]) -> list[int | None]:
    """For every dispatch (kernel by kernel, in order) the position of its kept hotspot document
    (the last one of that dispatch dir), None when none was kept.

    A left join of the dispatch table on the documents' table (pandas merge, which keeps the left
    order); pandas is imported only when there is something to join.
    """
    flat = [directory for dirs in dispatch_dirs for directory in dirs]
    if not flat or not doc_dirs:
        return [None] * len(flat)
    import pandas as pd

    dispatches = pd.DataFrame({"dispatch_dir": pd.Series(flat, dtype=object)})
    kept = pd.DataFrame({"dispatch_dir": pd.Series(doc_dirs, dtype=object),
                         "doc": pd.Series(range(len(doc_dirs)), dtype="int64")})
    kept = kept.drop_duplicates("dispatch_dir", keep="last")
    joined = dispatches.merge(kept, on="dispatch_dir", how="left", sort=False, validate="many_to_one")
    return [None if pd.isna(position) else int(position) for position in joined["doc"]]


def _dispatch_label(entry: Mapping[str, Any]) -> str:
    dispatch = entry.get("dispatch") if isinstance(entry.get("dispatch"), Mapping) else {}
    parts = [f"dispatch {dispatch['id']}" if dispatch.get("id") is not None else "",
             str(entry.get("dispatch_label") or "")]
    return " ".join(part for part in parts if part)


def _launch_text(launch: object) -> str:
    """One-cell launch context: workgroups vs CUs, kernel time, launch-bound flag."""
    if not isinstance(launch, Mapping) or not launch.get("workgroups"):
        return "n/a"
    text = f"{launch['workgroups']:,} WG / {launch.get('cu_count') or '?'} CUs"
    if launch.get("duration_ns"):
        text += f", {launch['duration_ns'] / 1000:.1f} µs"
    return text + (" (launch-bound)" if launch.get("launch_bound") else "")


def _cycles(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "n/a"


def _duration(value: object) -> str:
    """Nanoseconds as µs (ms above 10 ms); "n/a" when unknown."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "n/a"
    return f"{value / 1e6:,.2f} ms" if value >= 1e7 else f"{value / 1e3:,.1f} µs"


def render_index(
    rows: list[RunRow], template_dir: Path = TEMPLATE_DIR, title: str = "kernel-trace-analysis runs"
) -> str:
    """Self-contained HTML (inline CSS, no external resources); every value is escaped."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["cycles"] = _cycles
    env.filters["duration"] = _duration
    return env.get_template(TEMPLATE).render(title=title, runs=rows)
