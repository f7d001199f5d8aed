"""Failure signatures in rocprofv3 logs → structured findings with the fix for each."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Signature:
    """A known rocprofv3/decoder message (docs/rocprof-outputs.md §9.2/§10)."""

    code: str
    pattern: str  # regular expression searched line by line
    severity: str  # "fatal": no usable trace; "degraded": trace partial; "info"
    meaning: str
    fix: str


@dataclass(frozen=True)
class LogFinding:
    code: str
    severity: str
    meaning: str
    fix: str
    line_number: int
    line: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


SIGNATURES: tuple[Signature, ...] = (
    Signature("decoder-missing",
              r"rocprof-trace-decoder library path not found|Decoder library not found|Error loading decoder",
              "fatal", "rocprofv3 could not find or load the thread-trace decoder library",
              "install the rocprof-trace-decoder release matching your ROCm version (bundled from "
              "ROCm 7.13) and pass its directory as att_library_path (or ROCPROF_ATT_LIBRARY_PATH)"),
    Signature("invalid-shader-data", r"INVALID_SHADER_DATA|Agent not supported",
              "fatal", "the decoder rejected the trace data (aqlprofile/decoder version mismatch or "
              "unsupported agent)",
              "use the aqlprofile and rocprof-trace-decoder that match your ROCm 7.x release"),
    Signature("buffer-full", r"Thread trace buffer full!",
              "degraded", "the ATT buffer filled up; the trace is truncated",
              'increase att_buffer_size (e.g. "0xC000000"), trace fewer shader engines, or '
              "profile a smaller problem"),
    Signature("data-lost", r"\bData Lost\b|DATA_LOST",
              "degraded", "trace bandwidth exceeded; the dispatch's results are partial",
              "trace fewer shader engines (att_shader_engine_mask), use a larger buffer"),
    Signature("stitch-incomplete", r"STITCH_INCOMPLETE|Stitch Incomplete|WAVE_INCOMPLETE",
              "degraded", "some waves could not be fully reconstructed", "treat the dispatch as degraded"),
    Signature("yaml-missing", r"YAML package is not installed",
              "fatal", "the Python that runs rocprofv3 lacks pyyaml, so it cannot read YAML job files",
              "set job_format: json in the config (or install pyyaml for rocprofv3's Python)"),
    Signature("conflicting-value", r"conflicting value for|has conflicting values",
              "fatal", "an option is set both on the command line (or ROCPROF_OUTPUT_* env) and in the job file",
              "set output locations in one place only and unset ROCPROF_OUTPUT_PATH / ROCPROF_OUTPUT_FILE_NAME"),
    Signature("pmc-multipass", r"error code 38",
              "fatal", "the counter set needs more than one hardware pass",
              "at most 4 TCC events per job; validate with rocprofv3-avail pmc-check"),
    Signature("missing-counters", r"Unable to find all counters for agent",
              "degraded", "a requested counter does not exist on this GPU (wrong-arch name)",
              "use the per-arch counter names (kerneltrace/counters/table.py)"),
    Signature("no-tracing-for-stats", r"No tracing options were enabled for --stats",
              "fatal", "--stats was given without a tracing option", "add --kernel-trace"),
    Signature("att-unsupported", r"Thread trace context not present",
              "fatal", "no thread trace was produced on this architecture/configuration",
              "report the target as unsupported; do not retry endlessly"),
    Signature("fetch-incomplete", r"Could not fetch some instructions!",
              "degraded", "some instructions could not be read for decoding", "affected rows are incomplete"),
)

_COMPILED = tuple((sig, re.compile(sig.pattern)) for sig in SIGNATURES)

# Not a log message: the decoded directories exist but hold no executed instruction.
EMPTY_TRACE = Signature(
    "empty-trace", "", "fatal", "no wave ran on the traced CU (att_target_cu) of the traced shader engines",
    "retry with another att_target_cu (att_retries), a wider att_shader_engine_mask, more waves "
    "(bigger problem), or check kernel_include_regex against the discovery table")
NO_DISPATCH_DIRS = Signature(
    "no-dispatch-dirs", "", "fatal", "the capture produced no ui_output_agent_*_dispatch_* directory",
    "the kernel regex matched no kernel name or the requested iteration never ran: compare with "
    "results/<run>/discover/kernels.tsv and lower `iterations`")


def scan_log(text: str) -> list[LogFinding]:
    """Every known signature in ``text``, first occurrence per code, in log order."""
    seen: dict[str, LogFinding] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        for sig, regex in _COMPILED:
            if sig.code not in seen and regex.search(line):
                seen[sig.code] = LogFinding(sig.code, sig.severity, sig.meaning, sig.fix, number,
                                            line.strip()[:300])
    return sorted(seen.values(), key=lambda finding: finding.line_number)


def fatal(findings: list[LogFinding]) -> list[LogFinding]:
    return [finding for finding in findings if finding.severity == "fatal"]


def describe(findings: list[LogFinding]) -> str:
    """One line per finding: 'code: meaning -- fix: ...'."""
    return "\n".join(f"{f.code}: {f.meaning} -- fix: {f.fix}" for f in findings)
