"""errors.exit_cli ends a CLI as sys.exit does (atexit handlers, buffered output, the code)
without the interpreter's teardown, and leaves unusual cases to sys.exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    code = ("import atexit, sys, pathlib\n"
            "from kerneltrace.errors import exit_cli\n"
            f"mark = pathlib.Path({str(tmp_path / 'mark')!r})\n"
            "atexit.register(lambda: mark.write_text(mark.read_text() + 'x' if mark.exists() else 'x'))\n"
            + body)
    with (tmp_path / "out.txt").open("w") as handle:  # a file: block-buffered stdout
        return subprocess.run([sys.executable, "-c", code], stdout=handle, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, check=False)


@pytest.mark.parametrize("code", [0, 3])
def test_handlers_run_once_output_is_flushed_and_the_code_kept(tmp_path, code):
    done = _run(f"print('report')\nprint('warning', file=sys.stderr)\nexit_cli({code})\n", tmp_path)
    assert done.returncode == code
    assert (tmp_path / "out.txt").read_text() == "report\n"
    assert done.stderr == "warning\n"
    assert (tmp_path / "mark").read_text() == "x"  # once, not again at a teardown


def test_a_thread_still_running_is_joined_as_sys_exit_does(tmp_path):
    body = ("import threading, time\n"
            "t = threading.Thread(target=lambda: (time.sleep(0.2), print('thread done', flush=True)))\n"
            "t.start()\n"
            "exit_cli(4)\n")
    done = _run(body, tmp_path)
    assert done.returncode == 4
    assert (tmp_path / "out.txt").read_text() == "thread done\n"
    assert (tmp_path / "mark").read_text() == "x"


def test_a_code_that_is_not_an_int_goes_to_sys_exit(tmp_path):
    done = _run("exit_cli('stopped')\n", tmp_path)
    assert done.returncode == 1 and done.stderr == "stopped\n"


def test_run_from_other_code_it_raises_system_exit_as_sys_exit_does(tmp_path):
    body = ("def main():\n"
            "    exit_cli(5)\n"
            "try:\n"
            "    main()\n"
            "except SystemExit as stop:\n"
            "    print('caught', stop.code)\n")
    done = _run(body, tmp_path)
    assert done.returncode == 0 and (tmp_path / "out.txt").read_text() == "caught 5\n"
