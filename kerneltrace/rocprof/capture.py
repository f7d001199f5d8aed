"""Running rocprofv3 safely: logged child process with timeout, temp capture dirs promoted on success, ATT retries."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kerneltrace import atomic
from kerneltrace.analysis.capture_health import TRUNCATING_CODES
from kerneltrace.model.dispatchdir import emptiness
from kerneltrace.rocprof import commands, jobfile, logscan
from kerneltrace.rocprof.groupguard import grace_seconds

BIGGER_BUFFER = "0xC000000"  # 192 MB: the documented next step when the buffer fills (docs/rocprof-outputs.md §2.2)
MAX_TARGET_CU = 16  # docs range of att_target_cu is 0-15


GUARD = Path(__file__).with_name("groupguard.py")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class CaptureInterrupted(KeyboardInterrupt):
    """The capture job was told to stop (SIGTERM/SIGINT/SIGHUP): the capture group is already dead."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"capture stopped by {signal.Signals(signum).name}")
        self.signum = signum


class CaptureFailed(Exception):
    """A capture that cannot produce a usable trace; ``exit_code`` is what the job exits with."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class RunResult:
    returncode: int | None  # None when killed on timeout
    timed_out: bool
    log_text: str  # what this run appended to the log


def run_logged(argv: Sequence[str], env: Mapping[str, str], log_path: Path, timeout: float | None,
               cwd: Path | None = None) -> RunResult:
    """Run ``argv`` with stdout+stderr appended to ``log_path``; kill the whole group on timeout."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = log_path.stat().st_size if log_path.exists() else 0
    with open(log_path, "ab") as log:
        log.write(f"$ {commands.format_argv(argv)}\n".encode())
        log.flush()
        if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
            raise CaptureFailed(f"cannot start {argv[0]}: No such file or directory", 127)
        # The capture runs in its own session under a guard that kills the whole group when this
        # job dies (even by SIGKILL); a stop signal to this job kills the group here as well.
        guarded = [sys.executable, str(GUARD), str(os.getpid()), "--", *argv]
        with _stop_signals_raise():
            proc = subprocess.Popen(guarded, stdout=log, stderr=subprocess.STDOUT, env=dict(env),
                                    cwd=cwd, start_new_session=True)
            timed_out = False
            try:
                returncode: int | None = proc.wait(timeout=timeout if timeout and timeout > 0 else None)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                returncode = None
                log.write(f"\n[kerneltrace] killed after timeout of {timeout} s\n".encode())
            except CaptureInterrupted:
                _kill_group(proc)
                log.write(b"\n[kerneltrace] stopped by a signal: capture process group killed\n")
                raise
    with open(log_path, "rb") as handle:
        handle.seek(start)
        text = handle.read().decode("utf-8", errors="replace")
    return RunResult(returncode, timed_out, text)


@contextlib.contextmanager
def _stop_signals_raise():
    """While a capture runs, SIGTERM/SIGINT/SIGHUP raise CaptureInterrupted (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        raise CaptureInterrupted(signum)

    previous = {sig: signal.signal(sig, interrupt) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _kill_group(proc: subprocess.Popen[bytes], grace: float | None = None) -> None:
    """SIGTERM the child's group, SIGKILL it after `grace` seconds (default: the guard's
    KERNELTRACE_KILL_GRACE / 5 s)."""
    # The child runs in its own session: signal the whole group so app grandchildren die too.
    wait = grace_seconds() if grace is None else grace
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def fresh_tmp(final_dir: Path, tag: str) -> Path:
    """An empty temp dir beside ``final_dir`` (same file system, so promotion is a rename)."""
    tmp = final_dir.with_name(f".{final_dir.name}.{tag}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def failure_message(what: str, result: RunResult, log_path: Path, timeout: float | None) -> CaptureFailed:
    if result.timed_out:
        return CaptureFailed(f"{what} timed out after {timeout} s and was killed (log: {log_path}); "
                             "raise `timeout:` in the config if the command needs longer", 124)
    code = result.returncode if result.returncode is not None else 1
    found = logscan.fatal(logscan.scan_log(result.log_text))
    hint = f"; {logscan.describe(found)}" if found else ""
    return CaptureFailed(f"{what} failed with exit code {code} (log: {log_path}){hint}", code or 1)


@dataclass
class Attempt:
    number: int
    att_target_cu: int
    att_buffer_size: str
    returncode: int | None
    dispatch_dirs: int
    empty_dirs: int
    findings: list[str] = field(default_factory=list)


@dataclass
class AttCaptureRecord:
    """What att_capture did; written as the rule's output (results/{run}/att/{kernel}/capture.json)."""

    capture_dir: str
    kernel: str
    kernel_regex: str
    argv: list[str]
    attempts: list[Attempt]
    truncated: bool
    decoder: str | None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _dirs_in(out_dir: Path) -> tuple[int, int]:
    dirs = [p for p in out_dir.rglob("ui_output_agent_*_dispatch_*") if p.is_dir()]
    empty = sum(1 for p in dirs if emptiness(p))
    return len(dirs), empty


def capture_att(*, rocprofv3: str, job: dict[str, object], job_format: str, app: commands.AppCommand,
                env: Mapping[str, str], final_dir: Path, log_path: Path, timeout: float | None,
                retries: int, decoder: str | None = None, kernel_name: str = "") -> AttCaptureRecord:
    """ATT capture with retries; the raw capture is promoted to ``final_dir`` only on success.

    Empty trace → next att_target_cu (up to ``retries`` more attempts); buffer full → one retry with
    a 192 MB buffer, then keep the result marked truncated; fatal log signatures fail at once.
    """
    regex = str(job.get("kernel_include_regex", ""))
    kernel_name = kernel_name or regex
    attempts: list[Attempt] = []
    current = dict(job)
    bigger_buffer_tried = False
    empty_retries_left = retries
    for number in range(1, retries + 3):
        tmp = fresh_tmp(final_dir, f"attempt{number}")
        job_path = tmp / f"job{jobfile.job_suffix(job_format)}"
        atomic.write_text(job_path, jobfile.dump_jobs([current], job_format))
        argv = commands.att_argv(rocprofv3, str(job_path), str(tmp), app)
        result = run_in_tmp(tmp, argv, env, log_path, timeout)
        findings = logscan.scan_log(result.log_text)
        total, empty = _dirs_in(tmp)
        attempts.append(Attempt(number, _as_int(current.get("att_target_cu", 1)),
                                str(current.get("att_buffer_size", "")),
                                result.returncode, total, empty, [f.code for f in findings]))
        fatal = logscan.fatal(findings)
        if result.timed_out or result.returncode != 0 or fatal:
            shutil.rmtree(tmp, ignore_errors=True)
            if fatal and not result.timed_out and result.returncode == 0:
                raise CaptureFailed(f"ATT capture of {kernel_name!r} failed (log: {log_path}): "
                                    f"{logscan.describe(fatal)}", 1)
            raise failure_message(f"ATT capture of {kernel_name!r}", result, log_path, timeout)
        codes = {f.code for f in findings}
        buffer_full = bool(codes.intersection(TRUNCATING_CODES))
        if total > empty and buffer_full and not bigger_buffer_tried:
            bigger_buffer_tried = True
            shutil.rmtree(tmp, ignore_errors=True)
            _log_note(log_path, f"trace buffer full: retrying once with att_buffer_size {BIGGER_BUFFER}")
            current = {**current, "att_buffer_size": BIGGER_BUFFER}
            continue
        if total > empty:
            atomic.replace_dir(tmp, final_dir)
            return AttCaptureRecord(str(final_dir), kernel_name, regex, argv, attempts, buffer_full, decoder)
        shutil.rmtree(tmp, ignore_errors=True)
        if total == 0:
            sig = logscan.NO_DISPATCH_DIRS
            raise CaptureFailed(f"ATT capture of {kernel_name!r} produced no dispatch directory "
                                f"(log: {log_path}): {sig.meaning} -- fix: {sig.fix}", 1)
        if empty_retries_left <= 0:
            tried = ", ".join(str(a.att_target_cu) for a in attempts)
            sig = logscan.EMPTY_TRACE
            raise CaptureFailed(f"ATT capture of {kernel_name!r}: empty trace after {len(attempts)} "
                                f"attempt(s) (att_target_cu tried: {tried}; log: {log_path}): "
                                f"{sig.meaning} -- fix: {sig.fix}", 1)
        empty_retries_left -= 1
        cu = _as_int(current.get("att_target_cu", 1))
        next_cu = (cu + 1) % MAX_TARGET_CU
        _log_note(log_path, f"empty trace on att_target_cu {cu}: retrying with {next_cu}")
        current = {**current, "att_target_cu": next_cu}
    raise CaptureFailed(f"ATT capture of {kernel_name!r}: gave up after {len(attempts)} attempts "
                        f"(log: {log_path})", 1)


def run_in_tmp(tmp: Path, argv: Sequence[str], env: Mapping[str, str], log_path: Path,
            timeout: float | None) -> RunResult:
    """run_logged writing into the temp dir ``tmp``, which is removed when the job is stopped."""
    try:
        return run_logged(argv, env, log_path, timeout)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _as_int(value: object) -> int:
    # rocprofv3's rule: a string containing "0x" is hex, anything else decimal.
    text = str(value)
    return int(text, 16) if "0x" in text else int(text)


def _log_note(log_path: Path, text: str) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"[kerneltrace] {time.strftime('%H:%M:%S')} {text}\n")


def run_discovery(*, rocprofv3: str, app: commands.AppCommand, env: Mapping[str, str], final_dir: Path,
                  log_path: Path, timeout: float | None) -> Path:
    """Discovery run (kernel trace + stats) into a temp dir, promoted to ``final_dir`` on success."""
    tmp = fresh_tmp(final_dir, "run")
    argv = commands.discovery_argv(rocprofv3, str(tmp), app)
    result = run_in_tmp(tmp, argv, env, log_path, timeout)
    if result.timed_out or result.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise failure_message("the profiled command (discovery run)", result, log_path, timeout)
    atomic.replace_dir(tmp, final_dir)
    return final_dir
