"""Runs of one pipeline invocation: config (single, batch, or nothing = bundled example) → RunSpecs."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltrace.arch.table import ARCHES, get_arch
from kerneltrace.atomic import finite_json
from kerneltrace.errors import InputError

RUN_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]*\Z")  # \Z: "$" would accept a trailing newline
PER_RUN_KEYS = ("kernel", "top_kernels", "iterations", "att_target_cu", "env", "timeout", "arch")
EXAMPLE_RUN = "example"


@dataclass(frozen=True)
class RunSpec:
    """One run: profile a command (mode "cmd") or analyse cached dispatch dirs (mode "dir")."""

    name: str
    mode: str
    cmd: str | None = None
    dir: str | None = None
    kernel: str | None = None
    top_kernels: int = 1
    iterations: str = "[1, [3-4]]"
    att_target_cu: int | str = 1
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 3600
    arch: str | None = None  # --arch for the analyses (None: found from the capture bundle)
    example: bool = False


def slug(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.-")
    return cleaned[:60] or "run"


def derived_name(cmd: str | None, directory: str | None) -> str:
    """Default run name: the script's stem for a command ("python bench_pa.py" → bench_pa), the folder name for dir."""
    if cmd:
        try:
            tokens = shlex.split(cmd)
        except ValueError:
            tokens = cmd.split()
        scripts = [t for t in tokens if re.search(r"\.(py|sh|exe|bin)$", t)]
        chosen = scripts[0] if scripts else (tokens[0] if tokens else "cmd")
        return slug(Path(chosen).stem)
    if directory:
        return slug(Path(directory.rstrip("/")).name or "dir")
    return EXAMPLE_RUN


def _spec(name: str, values: Mapping[str, Any], defaults: Mapping[str, Any], base_dir: Path,
          fallback_dirs: tuple[Path, ...] = ()) -> RunSpec:
    if not RUN_NAME_RE.match(name):
        raise InputError(f"run name {name!r} is not a safe folder name", "config run",
                         "use letters, digits, '_', '.', '-'")
    cmd, directory = values.get("cmd"), values.get("dir")
    if cmd and directory:
        raise InputError(f"run {name!r} sets both cmd and dir", "config",
                         "give cmd (profile a command) or dir (analyse cached captures), not both")
    merged = {key: values.get(key, defaults.get(key)) for key in PER_RUN_KEYS}
    if merged["arch"] and get_arch(str(merged["arch"])) is None:
        raise InputError(f"unknown arch {merged['arch']!r} in run {name!r}", "config arch",
                         f"use one of {', '.join(sorted(ARCHES))}, or null to find it from the captures")
    env = {str(k): str(v) for k, v in {**(defaults.get("env") or {}), **(values.get("env") or {})}.items()}
    if directory and not Path(directory).is_absolute():
        # Relative to the working directory; else to the checkout (e.g. examples/ with -d elsewhere).
        candidates = [base_dir / directory, *(root / directory for root in fallback_dirs)]
        directory = str(next((c for c in candidates if c.exists()), candidates[0]).resolve())
    return RunSpec(name=name, mode="cmd" if cmd else "dir", cmd=cmd, dir=directory,
                   kernel=merged["kernel"], top_kernels=int(merged["top_kernels"] or 1),
                   iterations=str(merged["iterations"] or "[1, [3-4]]"),
                   att_target_cu=merged["att_target_cu"] if merged["att_target_cu"] is not None else 1,
                   env=env, timeout=float(merged["timeout"] or 0), arch=merged["arch"] or None)


def build_runs(config: Mapping[str, Any], example_dir: Path, base_dir: Path,
               fallback_dirs: tuple[Path, ...] = ()) -> tuple[dict[str, RunSpec], str]:
    """All runs of this invocation, plus a console note (e.g. that use 4 was chosen).

    Relative ``dir`` values resolve against ``base_dir`` (the working directory), then ``fallback_dirs``.
    """
    _, bad = finite_json(dict(config), "")  # config keys (dotted paths) holding YAML .nan / .inf
    if bad:
        raise InputError(f"{bad[0].removeprefix('.')} is not a finite number (NaN or infinity)", "config",
                         "give a finite number (YAML .nan / .inf are not allowed)")
    batch = config.get("runs") or {}
    if batch:
        if config.get("cmd") or config.get("dir"):
            raise InputError("runs: is set together with a top-level cmd/dir", "config",
                             "put every command or folder inside runs:, or drop runs:")
        specs = {name: _spec(name, values or {}, config, base_dir, fallback_dirs) for name, values in batch.items()}
        return specs, f"batch: {len(specs)} runs ({', '.join(specs)})"
    cmd, directory = config.get("cmd"), config.get("dir")
    if cmd or directory:
        name = config.get("run") or derived_name(cmd, directory)
        spec = _spec(name, {"cmd": cmd, "dir": directory}, config, base_dir, fallback_dirs)
        return {name: spec}, f"run {name!r}: " + (f"profiling {cmd!r}" if cmd else f"analysing {spec.dir}")
    name = config.get("run") or EXAMPLE_RUN
    spec = _spec(name, {"dir": str(example_dir)}, config, base_dir)
    spec = RunSpec(**{**spec.__dict__, "example": True})
    note = (f"neither cmd nor dir given: analysing the bundled synthetic example {example_dir} "
            f"(use 4) -> reports/{name}/plan.md, plan.html")
    return {name: spec}, note

