"""Capture health: truncated or partial captures (buffer full, data lost, missing wave files) as warnings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TYPE_CHECKING = False  # typing's flag without importing typing (CLI start-up path)
if TYPE_CHECKING:
    from typing import Any

# logscan finding codes that mean a truncated trace; the one list (pipeline.decode and rocprof.capture use it)
TRUNCATING_CODES = ("buffer-full", "data-lost")


def capture_warnings(report: Mapping[str, Any] | None, listed: set[str] | None, present: Iterable[str],
                     listed_problem: str = "") -> list[str]:
    """Sentences saying how a capture is incomplete; empty when nothing is known to be missing.

    ``report`` is the decode stage's report (``truncated``, ``findings``), ``listed`` the wave files
    named in filenames.json and ``present`` those in the dispatch dir."""
    warnings = []
    if report:
        codes = {f.get("code") for f in report.get("findings") or [] if isinstance(f, Mapping)}
        if report.get("truncated") or codes & set(TRUNCATING_CODES):
            what = " and ".join(c.replace("-", " ") for c in TRUNCATING_CODES if c in codes) or "buffer full"
            warnings.append(f"truncated capture ({what}): the ATT buffer could not hold the whole trace even "
                            "after the retry with a bigger buffer; stall and latency totals undercount the "
                            "kernel and late waves may be absent (raise att_buffer_size or trace fewer SEs)")
    if listed:
        missing = sorted(listed - set(present))
        if missing and len(missing) == len(listed):
            warnings.append(f"no wave files: none of the {len(listed)} wave files listed in filenames.json "
                            "is in the dispatch dir (e.g. " + ", ".join(missing[:3]) + "); code.json's "
                            "totals cover every traced wave, but wave-level results (timelines, wave "
                            "lifetimes, stragglers) are not available")
        elif missing:
            warnings.append(f"partial capture: {len(missing)} of {len(listed)} wave files listed in "
                            f"filenames.json are missing (e.g. {', '.join(missing[:3])}); wave-level "
                            "results cover only the waves present")
    if listed_problem:
        warnings.append(f"{listed_problem}: whether wave files are missing is unknown")
    return warnings
