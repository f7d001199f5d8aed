"""The pipeline's hotspots job, run inside the Snakemake process (a `run:` block, no new interpreter).

Does what ``scripts/hotspot_analyzer.py DIR --json J --text T [--waves] [--arch A]
[--capture-report R] --topk N`` does
(the CSV metadata found by the analysis itself, as on the command line), plus the copy kept under
reports/; warnings and the one-line error go to the job's log. No shared state, so jobs may run in
parallel threads; the wave reader's forked second process is turned off here
(``KERNELTRACE_WAVE_WORKERS=1``, set by the workflow): forking a threaded process is unsafe.
"""

from __future__ import annotations

from pathlib import Path

from kerneltrace.errors import InputError


def hotspots_job(dispatch_dir: str, *, json_path: str, text_path: str, kept_path: str,
                 log_path: str, topk: int, waves: bool, arch: str = "",
                 capture_report: str = "") -> None:
    """Analyse one dispatch dir and write its outputs; bad input: `error:` line in the log, re-raised."""
    from kerneltrace.atomic import write_json, write_text
    from kerneltrace.hotspot_report import run_analysis
    from kerneltrace.render.text import render_text

    try:
        result = run_analysis(dispatch_dir, arch=arch or None, waves=waves,
                              capture_report=Path(capture_report) if capture_report else None)
        text, warnings = render_text(result.document, topk=topk, mode="both", detail=False, context=3,
                                     sources=result.sources)
    except InputError as err:
        write_text(log_path, f"error: {err}\n")
        raise
    write_json(json_path, result.document)
    write_json(kept_path, result.document)
    write_text(text_path, text)
    write_text(log_path, "".join(f"warning: {warning}\n" for warning in warnings))
