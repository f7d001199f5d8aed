"""Shared helpers for tests that run the rocprofv3 test double and the Snakemake CLI as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO_ROOT / "Snakefile"
DOUBLE_DIR = REPO_ROOT / "tests" / "rocprofv3_double"


def double_env(root: Path, *, call_log: bool = False) -> dict[str, str]:
    """A child environment that finds the rocprofv3 double first on PATH.

    Files go under ``root``: an empty decoder library (so the decoder check passes), a ROCm version
    file (so messages naming the version do not depend on the machine) and, with ``call_log``, the
    double's invocation log ``calls.jsonl``. Inherited ROCPROF_*/SNAKEMAKE_* variables are dropped so
    a developer's shell cannot change what the double or Snakemake does.
    """
    lib = root / "decoder_lib"
    lib.mkdir(exist_ok=True)
    (lib / "librocprof-trace-decoder.so").write_text("")
    version = root / "rocm_version"
    version.write_text("7.1.1\n")
    values = {k: v for k, v in os.environ.items() if not k.startswith(("ROCPROF_", "SNAKEMAKE_"))}
    values.update({"PATH": f"{DOUBLE_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
                   "ROCPROF_ATT_LIBRARY_PATH": str(lib), "KERNELTRACE_ROCM_VERSION_FILE": str(version),
                   # a hung double dies at once on SIGTERM or not at all: no 5 s wait per kill
                   "KERNELTRACE_KILL_GRACE": "0.5"})
    if call_log:
        values["ROCPROF_DOUBLE_CALL_LOG"] = str(root / "calls.jsonl")
    return values


def calls(env: dict[str, str]) -> list[list[str]]:
    """The argv of every double invocation logged so far (empty before the first one)."""
    log = Path(env["ROCPROF_DOUBLE_CALL_LOG"])
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()] if log.exists() else []


def snakemake(workdir: Path, env: dict[str, str], *args: str, snakefile: Path = SNAKEFILE,
              python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    """Run the Snakemake CLI on ``snakefile`` with working directory ``workdir`` (created), 2 cores."""
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run([python, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir),
                           "-c", "2", *args], env=env, capture_output=True, text=True, check=False)
