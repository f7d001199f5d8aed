"""How every rule runs its script: ``main(snakemake_argv(job))``, logged, with one-line errors.

Each script in scripts/ has ``main(argv)`` (its command line, what a user runs by hand) and
``snakemake_argv(job)`` (the same command line built from a rule's input/output/params/wildcards).
Every rule body is ``run: run_script("NAME.py", input, output, params, wildcards, log)``
(workflow/rules/common.smk), which calls ``run_job`` here. The script runs one of two ways, chosen
by the script itself:

* in a thread of the Snakemake process (the default): no new interpreter, package import and
  Snakemake unpickling per job (≈ 0.3–0.5 s each, the batch cost of issue 12). With
  ``force-use-threads`` (profiles/default) Snakemake runs `run:` jobs in threads of its own process,
  so output is routed per thread: a dispatcher on sys.stdout/sys.stderr writes to the current
  thread's rule log while a job runs there, and to the real stream otherwise. Such scripts must
  not change process-wide state (cwd, environment, signal handlers) and must not fork.
* as its own process, ``python scripts/NAME.py ARGV`` with the log as stdout/stderr, when the script
  sets ``OWN_PROCESS = True``: the capture scripts, which install signal handlers (only a main
  thread can) and own the rocprofv3 process group, so a stop signal reaches them as a process
  (pipeline/stopping.py) and a crashing capture cannot take Snakemake down with it.

Either way bad input is exit code 2 with one ``error:`` line in the log (run_cli), which the rule
raises as its WorkflowError with the log's path.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, TextIO

from kerneltrace.errors import run_cli

_local = threading.local()
_modules: dict[str, ModuleType] = {}
_modules_lock = threading.Lock()


def _last_error(text: str) -> str:
    """The last `error:` line of some output (run_cli's one-line errors), or ""."""
    return next((line for line in reversed(text.splitlines()) if line.startswith("error:")), "")


class LogSink:
    """A text stream writing to a rule's log file that remembers the last `error:` line."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.last_error = ""

    def write(self, text: str) -> int:
        self.last_error = _last_error(text) or self.last_error
        return self.handle.write(text)

    def flush(self) -> None:
        self.handle.flush()

    def __getattr__(self, name: str) -> Any:  # buffer, encoding, isatty … of the log file
        return getattr(self.handle, name)


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

    def __getattr__(self, name: str) -> Any:  # buffer, encoding, isatty … of the current target
        return getattr(self._target(), name)


def install() -> None:
    """Route sys.stdout/sys.stderr per thread (idempotent)."""
    if not isinstance(sys.stdout, _ThreadStream):
        sys.stdout = _ThreadStream(sys.stdout)
    if not isinstance(sys.stderr, _ThreadStream):
        sys.stderr = _ThreadStream(sys.stderr)


def load_script(path: Path | str) -> ModuleType:
    """A script of scripts/ imported once as a module (its ``__main__`` footer runs nothing on import)."""
    key = str(Path(path).resolve())
    with _modules_lock:
        module = _modules.get(key)
        if module is None:
            spec = importlib.util.spec_from_file_location(f"kerneltrace_script_{Path(key).stem}", key)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _modules[key] = module
    return module


def _run_as_process(script: Path, argv: list[str], log_path: str) -> tuple[int, str]:
    with open(log_path, "ab") as handle:
        start = handle.tell()
        # stdin closed: a capture never waits on the terminal Snakemake runs in
        code = subprocess.call([sys.executable, str(script), *argv], stdin=subprocess.DEVNULL,
                               stdout=handle, stderr=subprocess.STDOUT)
    with open(log_path, "rb") as handle:
        handle.seek(start)
        written = handle.read().decode("utf-8", errors="replace")
    if code < 0:  # killed by a signal: say which, as a shell would
        return code, _last_error(written) or f"error: {script.name} stopped by signal {-code}"
    return code, _last_error(written)


def run_job(script: Path | str, log_path: str, *, input: Any = None, output: Any = None,
            params: Any = None, wildcards: Any = None, log: Sequence[str] = ()) -> tuple[int, str]:
    """Run ``main(snakemake_argv(job))`` of ``script`` for one rule job, its output in ``log_path``.

    Returns (exit code, the last `error:` line, or a generic one when the code is non-zero). A
    script exiting while it is imported or parsing its options (SystemExit) is an exit code too:
    in a thread of Snakemake an uncaught SystemExit would end the thread and hang the run.
    """
    install()
    job = SimpleNamespace(input=input, output=output, params=params, wildcards=wildcards, log=log)
    own_process = False
    with open(log_path, "a", encoding="utf-8") as handle:
        sink = LogSink(handle)
        _local.log = sink
        try:
            module = load_script(script)
            argv = [str(arg) for arg in module.snakemake_argv(job)]
            own_process = bool(getattr(module, "OWN_PROCESS", False))
            if not own_process:
                code = run_cli(module.main, argv)
        except SystemExit as stop:
            own_process = False
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        finally:
            _local.log = None
    if own_process:
        code, message = _run_as_process(Path(script), argv, log_path)
    else:
        message = sink.last_error
    return code, message or (f"error: exit code {code}" if code else "")
