"""run_job: a rule's script runs main(snakemake_argv(job)) in a thread or as its own process, its
output in the rule's log, bad input as the script's one `error:` line."""

import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from kerneltrace.pipeline import jobs

REPO = Path(__file__).resolve().parents[1]

SCRIPT = '''
import os
import sys
from pathlib import Path

sys.path.insert(0, {repo!r})

from kerneltrace import atomic
from kerneltrace.errors import InputError, run_cli

{own}


def main(argv=None):
    word = (sys.argv[1:] if argv is None else argv)[0]
    print(f"out {{word}} pid={{os.getpid()}}")
    print(f"err {{word}}", file=sys.stderr)
    atomic.write_text("-", f"bytes {{word}}\\n")  # the binary stdout path (sys.stdout.buffer)
    if word == "bad":
        raise InputError("bad thing", "here.json", "fix it")
    if word == "die":
        os.kill(os.getpid(), 9)
    return 0


def snakemake_argv(smk):
    return [smk.params.word]


if __name__ == "__main__":
    sys.exit(run_cli(main))
'''


def _script(tmp_path: Path, own_process: bool) -> Path:
    path = tmp_path / ("own.py" if own_process else "thread.py")
    path.write_text(SCRIPT.format(repo=str(REPO), own="OWN_PROCESS = True" if own_process else ""))
    return path


def _run(script: Path, log: Path, word: str) -> tuple[int, str]:
    return jobs.run_job(script, str(log), params=SimpleNamespace(word=word), log=[str(log)])


@pytest.mark.parametrize("own_process", [False, True])
def test_output_goes_to_the_log_and_success_is_zero(tmp_path, own_process, capsys):
    import os

    log = tmp_path / "job.log"
    code, message = _run(_script(tmp_path, own_process), log, "hello")
    text = log.read_text()
    assert (code, message) == (0, "")
    assert "out hello" in text and "err hello" in text and "bytes hello" in text
    pid = int(text.split("pid=")[1].split()[0])
    assert (pid != os.getpid()) is own_process
    assert "hello" not in capsys.readouterr().out  # nothing leaks to the console


@pytest.mark.parametrize("own_process", [False, True])
def test_bad_input_is_exit_2_with_the_scripts_error_line(tmp_path, own_process):
    log = tmp_path / "job.log"
    log.write_text("an earlier attempt\nerror: an older failure\n")
    code, message = _run(_script(tmp_path, own_process), log, "bad")
    assert code == 2
    assert message == "error: here.json: bad thing -- fix: fix it"
    assert "Traceback" not in log.read_text()
    assert log.read_text().startswith("an earlier attempt\n")  # the log is appended to


def test_a_process_killed_by_a_signal_is_named(tmp_path):
    code, message = _run(_script(tmp_path, True), tmp_path / "job.log", "die")
    assert code == -9
    assert message == "error: own.py stopped by signal 9"


def test_threads_write_to_their_own_logs(tmp_path):
    script = _script(tmp_path, False)
    results = {}

    def job(index: int) -> None:
        results[index] = _run(script, tmp_path / f"{index}.log", f"w{index}")

    threads = [threading.Thread(target=job, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[index] == (0, "") for index in range(8))
    for index in range(8):
        text = (tmp_path / f"{index}.log").read_text()
        words = {word for word in text.split() if word.startswith("w")}
        assert words == {f"w{index}"}, text
    assert isinstance(sys.stdout, jobs._ThreadStream)  # installed, and …
    print("to the console")  # … without a job the real stream still works
