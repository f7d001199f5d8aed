"""reports/index.html for a batch: one row per run linking its plan (Jinja2, autoescaped)."""

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


def run_row(
    name: str, summary: Mapping[str, Any] | None, regression: Mapping[str, Any] | None = None
) -> RunRow:
    """Build one index row from a run's summary (and regression) documents."""
    kernels = []
    for kernel in (summary or {}).get("kernels") or []:
        dispatches = kernel.get("dispatches") or []
        stall = sum(int((d.get("totals") or {}).get("stall_cycles") or 0) for d in dispatches)
        findings = [f for d in dispatches for f in d.get("findings") or []]
        top = findings[0].get("title") if findings and isinstance(findings[0], Mapping) else None
        kernels.append(
            {
                "name": kernel.get("name") or "(unknown kernel)",
                "dispatches": len(dispatches),
                "stall_cycles": stall,
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
    return env.get_template(TEMPLATE).render(title=title, runs=rows)
