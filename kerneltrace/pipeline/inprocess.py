"""Scripts run inside the Snakemake process: a `run:` job calls the script's own main(argv) in a thread.

The same code a user runs by hand and a `script:` job runs (``main(snakemake_argv(smk))``, see
pipeline/smk.py), without a new interpreter, package import and Snakemake unpickling per job
(≈ 0.3–0.5 s each). With ``force-use-threads`` (profiles/default) Snakemake runs `run:` jobs in
threads of its own process, so output is routed per thread: ``install()`` puts a dispatcher on
sys.stdout/sys.stderr that writes to the current thread's rule log while a job runs there, and
to the real stream otherwise. Called scripts must not change process-wide state (cwd, env) and
must not fork.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, TextIO

from kerneltrace.errors import run_cli
from kerneltrace.pipeline.smk import LogSink

_local = threading.local()
_modules: dict[str, ModuleType] = {}
_modules_lock = threading.Lock()


class _ThreadStream:
    """sys.stdout / sys.stderr stand-in: this thread's job log if one is set, else the real stream."""

    def __init__(self, real: TextIO) -> None:
        self._real = real

    def _target(self) -> Any:
        return getattr(_local, "log", None) or self._real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer … of the real one
        return getattr(self._real, name)


def install() -> None:
    """Route sys.stdout/sys.stderr per thread (idempotent)."""
    if not isinstance(sys.stdout, _ThreadStream):
        sys.stdout = _ThreadStream(sys.stdout)
    if not isinstance(sys.stderr, _ThreadStream):
        sys.stderr = _ThreadStream(sys.stderr)


def load_script(path: Path | str) -> ModuleType:
    """A script of scripts/ imported once as a module (its footer runs nothing on import)."""
    key = str(Path(path).resolve())
    with _modules_lock:
        module = _modules.get(key)
        if module is None:
            spec = importlib.util.spec_from_file_location(f"kerneltrace_script_{Path(key).stem}", key)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _modules[key] = module
    return module


def run_script(path: Path | str, log_path: str, *, input: Any = None, output: Any = None,  # noqa: A002
               params: Any = None, wildcards: Any = None, log: Sequence[str] = ()) -> tuple[int, str]:
    """``main(snakemake_argv(job))`` of the script in this thread, its output in ``log_path``.

    Returns (exit code, the last `error:` line or ""); bad input is exit 2 with one `error:` line
    (run_cli), as on the command line.
    """
    job = SimpleNamespace(input=input, output=output, params=params, wildcards=wildcards, log=log)
    install()
    with open(log_path, "a", encoding="utf-8") as handle:
        sink = LogSink(handle)
        _local.log = sink
        try:
            module = load_script(path)
            code = run_cli(module.main, [str(arg) for arg in module.snakemake_argv(job)])
        except SystemExit as stop:  # argparse, or a script exiting while it is imported
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        finally:
            _local.log = None
    return code, sink.last_error or (f"error: exit code {code}" if code else "")
