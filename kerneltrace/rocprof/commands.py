"""rocprofv3 command lines as argv lists (never shell strings) and the child environment."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kerneltrace.errors import InputError

# Output locations are passed on the command line only; these variables would otherwise act as
# CLI-side defaults and conflict with (or silently redirect) what we ask for (docs/rocprof-outputs.md §2.3).
OUTPUT_ENV_VARS = ("ROCPROF_OUTPUT_PATH", "ROCPROF_OUTPUT_FILE_NAME")

# Turns on source-line info in FlyDSL JIT builds; harmless for other applications.
DEBUG_INFO_ENV = {"FLYDSL_DEBUG_ENABLE_DEBUG_INFO": "1"}


@dataclass(frozen=True)
class AppCommand:
    """The profiled application: a shell command string run exactly once by ``bash -c``."""

    cmd: str

    def argv(self) -> list[str]:
        # The whole string is ONE argv element: bash parses it once; nothing else re-splits it.
        return ["bash", "-c", self.cmd]


def discovery_argv(rocprofv3: str, out_dir: str, app: AppCommand, name: str = "discover") -> list[str]:
    """``rocprofv3 --kernel-trace --stats -f csv -d DIR -o NAME -- bash -c CMD``."""
    return [rocprofv3, "--kernel-trace", "--stats", "-f", "csv", "-d", out_dir, "-o", name,
            "--", *app.argv()]


def att_argv(rocprofv3: str, job_file: str, out_dir: str, app: AppCommand, name: str = "att") -> list[str]:
    """``rocprofv3 -i JOB -d DIR -o NAME -- bash -c CMD`` (the job file holds no output location)."""
    return [rocprofv3, "-i", job_file, "-d", out_dir, "-o", name, "--", *app.argv()]


def pmc_argv(rocprofv3: str, job_file: str, out_dir: str, app: AppCommand, name: str = "pmc") -> list[str]:
    """``rocprofv3 -i JOB -d DIR -o NAME -- bash -c CMD``; each job lands in ``DIR/pass_N/``."""
    return [rocprofv3, "-i", job_file, "-d", out_dir, "-o", name, "--", *app.argv()]


def child_env(base: Mapping[str, str], extra: Mapping[str, object] | None = None,
              debug_info: bool = True) -> dict[str, str]:
    """Environment for a rocprofv3 child: base + debug-info flag + config ``env``; output vars removed."""
    env = {key: value for key, value in base.items() if key not in OUTPUT_ENV_VARS}
    if debug_info:
        env.update(DEBUG_INFO_ENV)
    for key, value in (extra or {}).items():
        env[str(key)] = str(value)
    for key in OUTPUT_ENV_VARS:  # config env must not re-introduce them either
        env.pop(key, None)
    return env


def format_argv(argv: Sequence[str]) -> str:
    """A copy-pasteable rendering of argv for logs (shell-quoted)."""
    import shlex

    return shlex.join(list(argv))


def which(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """Resolve ``program`` (a name on PATH or a path) the way the child would see it."""
    import shutil

    path = (env or os.environ).get("PATH")
    return shutil.which(program, path=path)


def require_rocprofv3(program: str, env: Mapping[str, str]) -> str:
    """The rocprofv3 executable the child would run; InputError naming the config fix when absent."""
    found = which(program, env)
    if not found:
        raise InputError(f"rocprofv3 not found ({program!r} is not an executable on PATH)", "config rocprofv3",
                         "install ROCm >= 7.0 or set `rocprofv3: /opt/rocm/bin/rocprofv3` in the config "
                         "(or --config rocprofv3=PATH)")
    return found
