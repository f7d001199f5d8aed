"""One ATT capture's decoded dispatch dirs: the capture log scanned for known failures, then discovery → manifest rows."""

from __future__ import annotations

import os
from pathlib import Path

from kerneltrace.analysis.capture_health import TRUNCATING_CODES
from kerneltrace.errors import InputError
from kerneltrace.model import dispatchdir
from kerneltrace.pipeline import manifest
from kerneltrace.rocprof import decoder, logscan


def decode(*, capture_dir: Path, capture_log: Path | None, kernel_id: str, att_library_path: list[str],
           truncated: bool = False) -> tuple[list[dict[str, str]], dict[str, object]]:
    """The manifest rows of one capture's usable dispatch dirs and the decode report.

    Known fatal failures in the capture log (decoder missing, …) and a capture without a usable
    dispatch dir are InputErrors; dropped entries and truncation are reported.
    """
    log_text = ""
    if capture_log is not None and capture_log.is_file():
        log_text = capture_log.read_text(encoding="utf-8", errors="replace")
    findings = logscan.scan_log(log_text)
    codes = {f.code for f in findings}
    if "decoder-missing" in codes:
        lookup = decoder.find_decoder(att_library_path, os.environ)
        raise InputError(decoder.missing_message(lookup, decoder.rocm_version()), str(capture_log),
                         "install the decoder and re-run")
    fatal = logscan.fatal(findings)
    if fatal:
        raise InputError(logscan.describe(fatal), str(capture_log), fatal[0].fix)
    found = dispatchdir.find_dispatch_dirs(capture_dir)
    if not found.kept:
        sig = logscan.EMPTY_TRACE if found.notes else logscan.NO_DISPATCH_DIRS
        raise InputError(f"{sig.meaning} ({'; '.join(found.notes) or 'no dispatch dir'})",
                         str(capture_dir), sig.fix)
    rows = manifest.manifest_rows(found.kept, id_prefix=f"{kernel_id}_", kernel_id=kernel_id,
                                      source="capture")
    report = {"capture_dir": str(capture_dir), "kernel_id": kernel_id, "dispatch_dirs": len(rows),
              "dropped": found.notes, "truncated": truncated or bool(codes.intersection(TRUNCATING_CODES)),
              "findings": [f.to_dict() for f in findings]}
    return rows, report
