"""Wave files streamed in two processes give exactly the one-process `waves` object.

The forked path is forced on small synthetic captures (PARALLEL_BYTES lowered); the cut, the
merge of every total, and each fallback (a failing child, a SIMD on both sides of the cut, a
damaged file on either side) are checked against one process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltrace.analysis.waves import stream
from kerneltrace.analysis.waves.analyze import analyze_waves
from kerneltrace.readers.codejson import read_code_json
from kerneltrace.readers.wavefile.reader import wave_files
from kerneltrace.synth import demo_gemm, write_dispatch_dir


@pytest.fixture
def gemm(tmp_path):
    return write_dispatch_dir(tmp_path, demo_gemm("gfx942", iterations=6, waves_per_slot=2))


@pytest.fixture
def forked(monkeypatch):
    """Two processes whatever the size; counts how the halves were accumulated."""
    seen: list[str] = []
    monkeypatch.setattr(stream, "PARALLEL_BYTES", 0)
    original = stream._accumulate_halves

    def spy(*args):
        result = original(*args)
        seen.append("merged" if result is not None else "one process")
        return result

    monkeypatch.setattr(stream, "_accumulate_halves", spy)
    return seen


def waves_of(directory: Path, workers: int) -> str:
    table = read_code_json(directory / "code.json")
    return json.dumps(analyze_waves(directory, table, workers=workers), sort_keys=True)


def test_two_processes_give_the_one_process_result(gemm, forked):
    one = waves_of(gemm, 1)
    assert forked == []
    assert waves_of(gemm, 2) == one
    assert forked == ["merged"]
    document = json.loads(one)
    assert document["loops"] and document["waitcnt"] and document["peers"]["instructions"]


def test_the_cut_is_at_a_simd_boundary_near_the_middle(gemm):
    paths = wave_files(gemm)
    first, second = stream.split(paths, 2)
    assert first + second == paths
    simd = [name.split("_sl")[0] for name in (first[-1].name, second[0].name)]
    assert simd[0] != simd[1]
    sizes = [sum(path.stat().st_size for path in half) for half in (first, second)]
    assert abs(sizes[0] - sizes[1]) <= max(path.stat().st_size for path in paths) * 8
    assert stream.split(paths, 1) == [paths]


def test_a_failing_child_is_redone_here(gemm, forked, monkeypatch):
    one = waves_of(gemm, 1)

    def broken(paths, new_totals, mfma_by_line, connection):
        connection.send(("error", "simulated"))
        connection.close()

    monkeypatch.setattr(stream, "_child", broken)
    assert waves_of(gemm, 2) == one
    assert forked == ["merged"]


def test_a_simd_on_both_sides_falls_back_to_one_process(gemm, forked, monkeypatch):
    one = waves_of(gemm, 1)
    monkeypatch.setattr(stream, "split", lambda paths, parts: [paths[:3], paths[3:]])
    assert waves_of(gemm, 2) == one
    assert forked == ["one process"]


@pytest.mark.parametrize("victim", [0, -1])
def test_skipped_files_keep_file_order_on_either_side(gemm, forked, victim):
    paths = wave_files(gemm)
    paths[victim].write_bytes(paths[victim].read_bytes()[:100])  # truncated
    paths[1].write_bytes(paths[1].read_bytes().replace(b'"end":', b'"end":-', 1))  # implausible
    one = waves_of(gemm, 1)
    assert waves_of(gemm, 2) == one
    skipped = [entry["file"] for entry in json.loads(one)["skipped"]]
    names = [path.name for path in paths]
    assert len(skipped) == 2 and skipped == sorted(skipped, key=names.index)


def test_worker_count_needs_two_cpus_and_enough_bytes(gemm, monkeypatch):
    paths = wave_files(gemm)
    monkeypatch.setattr(stream, "PARALLEL_BYTES", 1)
    assert stream.worker_count(paths, 2) == 2
    assert stream.worker_count(paths, 1) == 1
    monkeypatch.setenv(stream.WORKERS_ENV, "1")
    assert stream.worker_count(paths) == 1
    monkeypatch.setattr(stream, "PARALLEL_BYTES", 1 << 40)
    assert stream.worker_count(paths, 2) == 1


def test_automatic_choice_stays_in_one_process_beside_other_threads(gemm, monkeypatch):
    import threading

    paths = wave_files(gemm)
    monkeypatch.delenv(stream.WORKERS_ENV, raising=False)
    monkeypatch.setattr(stream, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(stream.os, "sched_getaffinity", lambda pid: {0, 1})
    assert stream.worker_count(paths) == 2
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert stream.worker_count(paths) == 1
        assert stream.worker_count(paths, 2) == 2  # asked for explicitly
    finally:
        release.set()
        other.join()


def test_settling_keeps_only_the_current_simds_intervals(gemm, monkeypatch):
    """Peers' intervals and windows of SIMDs already passed are reduced while streaming."""
    import numpy as np

    from kerneltrace.analysis.waves.accumulate import WaveTotals
    from kerneltrace.analysis.waves.peers import PeerTotals

    table = read_code_json(gemm / "code.json")
    rows = max(row.index for row in table.rows) + 1
    totals = WaveTotals.empty(rows)
    totals.peers = PeerTotals.empty(table, rows)
    monkeypatch.setattr(stream, "GROUP_WAVES", 1)
    stream.stream(wave_files(gemm), totals, np.zeros(rows, np.int64))
    kept = {int(key) for part in totals.peers.windows for key in np.unique(part[0])}
    assert len(kept) == 1 and not totals.peers.broken  # the last SIMD only
    assert totals.peers.resident > 0  # the others were reduced on the way


def test_a_wave_of_a_settled_simd_streams_again_without_settling(gemm, monkeypatch):
    one_group = waves_of(gemm, 1)
    last = wave_files(gemm)[-1]  # se3_sm3_…: its JSON now says SIMD 0, a SIMD settled before
    text = last.read_bytes()
    assert b'"simd":3' in text
    last.write_bytes(text.replace(b'"simd":3', b'"simd":0', 1))
    expected = waves_of(gemm, 1)
    assert expected != one_group
    calls = []
    original = stream.stream

    def spy(paths, totals, mfma_by_line, settle=True):
        result = original(paths, totals, mfma_by_line, settle)
        calls.append((settle, result.peers.broken))
        return result

    monkeypatch.setattr(stream, "stream", spy)
    monkeypatch.setattr(stream, "GROUP_WAVES", 1)
    assert waves_of(gemm, 1) == expected
    assert calls == [(True, True), (False, False)]


def test_output_buffered_before_the_fork_is_written_once(gemm, tmp_path):
    """The forked child flushes the standard streams when it ends: nothing may be pending then
    (multiprocessing flushes them before it forks; a bare os.fork would write this twice)."""
    import subprocess
    import sys

    code = (
        "import sys, pathlib\n"
        "from kerneltrace.analysis.waves import stream\n"
        "from kerneltrace.analysis.waves.analyze import analyze_waves\n"
        "from kerneltrace.readers.codejson import read_code_json\n"
        "stream.PARALLEL_BYTES = 0\n"
        f"d = pathlib.Path({str(gemm)!r})\n"
        "print('before the analysis')\n"
        "analyze_waves(d, read_code_json(d / 'code.json'), workers=2)\n"
    )
    out = tmp_path / "out.txt"
    with out.open("w") as handle:  # a file: block-buffered stdout
        subprocess.run([sys.executable, "-c", code], stdout=handle, check=True,
                       cwd=Path(__file__).resolve().parents[1])
    assert out.read_text() == "before the analysis\n"


def test_a_failing_first_half_ends_the_child_and_raises(gemm, forked, monkeypatch):
    calls = []
    original = stream.stream

    def failing(paths, totals, mfma_by_line, settle=True):
        calls.append(len(paths))
        if len(calls) == 1:  # this process's half (the child's runs after the fork)
            raise RuntimeError("simulated")
        return original(paths, totals, mfma_by_line, settle)

    monkeypatch.setattr(stream, "stream", failing)
    with pytest.raises(RuntimeError, match="simulated"):
        waves_of(gemm, 2)


def test_a_child_that_dies_without_a_word_is_redone_here(gemm, forked, monkeypatch):
    """The child ends before sending anything (killed, out of memory): the pipe's end of file
    reads as a failure and that half is streamed here."""
    import os

    one = waves_of(gemm, 1)
    monkeypatch.setattr(stream, "_child", lambda *args: os._exit(3))
    assert waves_of(gemm, 2) == one
    assert forked == ["merged"]
