"""rocprofv3 ``-i`` job files (one ATT job per file; single-pass PMC plans), written with yaml.safe_dump or json."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kerneltrace.errors import InputError

JOB_FORMATS = ("yaml", "json")


@dataclass(frozen=True)
class AttSettings:
    """ATT job values; defaults per docs/rocprof-outputs.md §2.2 and issue 3."""

    # A set, not a "skip": "[1, [3-4]]" selects iterations {1, 3, 4} (docs/rocprof-outputs.md §2.5).
    kernel_iteration_range: str = "[1, [3-4]]"
    att_target_cu: int = 1
    att_shader_engine_mask: str = "0xf"
    att_simd_select: str = "0xf"
    att_buffer_size: str = "0x6000000"
    truncate_kernels: bool = False
    sys_trace: bool = False
    kernel_trace: bool = True
    output_format: tuple[str, ...] = ("csv",)
    att_library_path: tuple[str, ...] = field(default_factory=tuple)


_ECMA_SYNTAX = frozenset("^$\\.*+?()[]{}|/")
_HEX_OR_INT = re.compile(r"^(0x[0-9a-fA-F]+|[0-9]+)$")


def exact_name_regex(kernel_name: str) -> str:
    """Anchored, escaped ECMAScript regex matching exactly ``kernel_name`` (rocprofv3 uses regex_search)."""
    # Escape only ECMAScript syntax characters: identity escapes of others (e.g. "\\ " from
    # re.escape) are not portable to std::regex.
    return "^" + "".join("\\" + ch if ch in _ECMA_SYNTAX else ch for ch in kernel_name) + "$"


def _check_numeric(key: str, value: object) -> None:
    # rocprofv3 parses a string as hex only if it contains the substring "0x" (capital X fails).
    if isinstance(value, bool) or not (isinstance(value, int) or _HEX_OR_INT.match(str(value))):
        raise InputError(f"{key} must be an integer or a lower-case 0x hex string, got {value!r}",
                         "config", f'e.g. {key}: "0xf" or {key}: 15')


def att_job(kernel_regex: str, settings: AttSettings, *, output_directory: str | None = None,
            output_file: str | None = None) -> dict[str, Any]:
    """One ATT job mapping. Output location only when the command line does not carry it."""
    for key in ("att_target_cu", "att_shader_engine_mask", "att_simd_select", "att_buffer_size"):
        _check_numeric(key, getattr(settings, key))
    job: dict[str, Any] = {
        "advanced_thread_trace": True,
        "kernel_include_regex": kernel_regex,
        "kernel_iteration_range": settings.kernel_iteration_range,
        "kernel_trace": settings.kernel_trace,
        "att_target_cu": settings.att_target_cu,
        "att_shader_engine_mask": settings.att_shader_engine_mask,
        "att_simd_select": settings.att_simd_select,
        "att_buffer_size": settings.att_buffer_size,
        "truncate_kernels": settings.truncate_kernels,
        "sys_trace": settings.sys_trace,
        "output_format": list(settings.output_format),
    }
    if settings.att_library_path:
        job["att_library_path"] = list(settings.att_library_path)
    if output_directory is not None:
        job["output_directory"] = output_directory
    if output_file is not None:
        job["output_file"] = output_file
    return job


def pmc_job(kernel_regex: str, counters: list[str], *, kernel_iteration_range: str | None = None) -> dict[str, Any]:
    """One single-pass PMC job (never mixed with ATT in one file)."""
    job: dict[str, Any] = {"pmc": list(counters), "kernel_include_regex": kernel_regex,
                           "kernel_trace": True, "output_format": ["csv"]}
    if kernel_iteration_range:
        job["kernel_iteration_range"] = kernel_iteration_range
    return job


def pmc_job_document(counters: list[str], kernel_regex: str, output_directory: str | None,
                     output_file: str = "pmc") -> dict[str, Any]:
    """One rocprofv3 -i job mapping for a planned PMC pass (docs/rocprof-outputs.md §2.4).

    Without output_directory the location is left to the command line (-d/-o), which must not
    disagree with the job file.
    """
    document = pmc_job(kernel_regex, list(counters))
    if output_directory is not None:
        document["output_directory"] = output_directory
        document["output_file"] = output_file
    return document


def dump_jobs(jobs: list[dict[str, Any]], job_format: str = "yaml") -> str:
    """Serialise ``{"jobs": [...]}``; YAML via yaml.safe_dump (never templated strings)."""
    document = {"jobs": jobs}
    if job_format == "json":
        return json.dumps(document, indent=2) + "\n"
    if job_format == "yaml":
        import yaml

        return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
    raise InputError(f"unknown job_format {job_format!r}", "config", "use job_format: yaml or json")


def job_suffix(job_format: str) -> str:
    return ".json" if job_format == "json" else ".yaml"


def load_jobs(text: str, suffix: str) -> list[dict[str, Any]]:
    """Read a job file the way rocprofv3 does: only the top-level ``jobs`` list counts."""
    import yaml

    try:
        document = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    except (ValueError, RecursionError, yaml.YAMLError) as err:  # safe_load refuses python/* tags
        raise InputError(f"job file is not valid {suffix.lstrip('.') or 'YAML'}: {str(err).splitlines()[0]}",
                         "job file", "regenerate it with write_input_yaml.py / pmc_plan.py") from None
    jobs = document.get("jobs") if isinstance(document, dict) else None
    if not isinstance(jobs, list) or not all(isinstance(job, dict) for job in jobs):
        raise InputError("job file has no 'jobs' list of mappings", "job file",
                         "write {jobs: [{...}, ...]}")
    return jobs


def att_job_text(kernel_name: str, settings: dict[str, Any], job_format: str) -> str:
    """The job file of one ATT job for the exact kernel name (``settings``: AttSettings fields; None = default)."""
    values = {key: value for key, value in settings.items() if value is not None}
    if "att_library_path" in values:
        values["att_library_path"] = tuple(values["att_library_path"])
    return dump_jobs([att_job(exact_name_regex(kernel_name), AttSettings(**values))], job_format)


PMC_PLAN_SCHEMA = "kerneltrace.pmc-plan/1"


def pmc_plan_files(*, arch: str, kernel_regex: str, metrics: list[str] | None, job_format: str,
                   capture_dir: str | None) -> tuple[dict[str, str], dict[str, Any]]:
    """Single-pass PMC jobs as files: ({file name: job file text}, the plan.json document).

    ``capture_dir`` (a folder) is written into each job as its output_directory; None leaves the
    location to the capture command line.
    """
    from kerneltrace.counters.planner import plan_jobs

    files: dict[str, str] = {}
    entries = []
    for number, job in enumerate(plan_jobs(arch, metrics or None), start=1):
        name = f"pmc_job{number}"
        location = f"{capture_dir}/{name}" if capture_dir is not None else None
        document = pmc_job_document(list(job.counters), kernel_regex, location, "pmc")
        file_name = f"{name}{job_suffix(job_format)}"
        files[file_name] = dump_jobs([document], job_format)
        entries.append({"file": file_name, "counters": list(job.counters), "metrics": list(job.metrics),
                        "path_kind": job.path_kind, "block_usage": job.block_usage()})
    plan = {"schema": PMC_PLAN_SCHEMA, "arch": arch, "kernel_include_regex": kernel_regex,
            "job_format": job_format, "jobs": entries}
    return files, plan
