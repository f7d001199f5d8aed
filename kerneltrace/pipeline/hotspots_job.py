"""The pipeline's hotspots job, run inside the Snakemake process (a `run:` block, no new interpreter).

Does what ``scripts/hotspot_analyzer.py DIR --json J [--waves] [--kernel-trace C] [--agent-info C]
--topk N > TXT`` does, plus the copy kept under reports/; warnings and the one-line error go to
the job's log. Pure per call (no shared state), so jobs may run in parallel threads.
"""

from __future__ import annotations

from pathlib import Path

from kerneltrace.errors import InputError


def hotspots_job(dispatch_dir: str, *, json_path: str, text_path: str, kept_path: str,
                 log_path: str, topk: int, waves: bool, kernel_trace_csv: str = "",
                 agent_info_csv: str = "") -> None:
    """Analyse one dispatch dir and write its outputs; bad input: `error:` line in the log, re-raised."""
    from kerneltrace.atomic import write_json, write_text
    from kerneltrace.hotspot_report import run_analysis
    from kerneltrace.render.text import render_text

    try:
        result = run_analysis(dispatch_dir, kernel_trace_csv=Path(kernel_trace_csv) if kernel_trace_csv else None,
                              agent_info_csv=Path(agent_info_csv) if agent_info_csv else None, waves=waves)
        text, warnings = render_text(result.document, topk=topk, mode="both", detail=False, context=3,
                                     sources=result.sources)
    except InputError as err:
        write_text(log_path, f"error: {err}\n")
        raise
    write_json(json_path, result.document)
    write_json(kept_path, result.document)
    write_text(text_path, text)
    write_text(log_path, "".join(f"warning: {warning}\n" for warning in warnings))
