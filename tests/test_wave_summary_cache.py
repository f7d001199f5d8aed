"""The per-user cache of the `waves` object gives what the analysis gives, and is never trusted for
a changed, added or removed input file, another code, other thresholds, or a malformed entry.

Each case analyses a synthetic dispatch dir with the cache off (the expected document), then
with it on: the first run stores, later runs are served without running the wave analysis unless
something the object depends on changed, and then it is computed again (and equals a cache-off
run on the changed dir).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace import atomic, filecache
from kerneltrace.analysis.waves import analyze, summary_cache
from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.synth import demo_gemm, write_dispatch_dir
from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "hotspot_analyzer.py"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    """A cache folder of this test's that stores at once (no settling time)."""
    folder = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv("KERNELTRACE_CACHE", raising=False)
    monkeypatch.setattr(filecache, "SETTLED_NS", 0)
    return folder / "kerneltrace" / "wave-summaries"


@pytest.fixture
def runs(monkeypatch) -> list[Path]:
    """The dirs the wave analysis actually ran on, in order (a hit adds nothing)."""
    ran: list[Path] = []
    real = analyze.analyze_waves

    def counted(directory, table, *args, **kwargs):
        ran.append(Path(directory))
        return real(directory, table, *args, **kwargs)
    monkeypatch.setattr(analyze, "analyze_waves", counted)
    return ran


def _dir(tmp_path: Path, name: str = "gemm") -> Path:
    return write_dispatch_dir(tmp_path / name, demo_gemm("gfx942", iterations=8))


def _document(directory: Path, **options) -> str:
    return atomic.json_text(analyze_dispatch(directory, waves=True, **options))


def _uncached(directory: Path, monkeypatch, **options) -> str:
    with monkeypatch.context() as off:
        off.setenv("KERNELTRACE_CACHE", "off")
        return _document(directory, **options)


def test_a_hit_gives_the_computed_document_without_running_the_analysis(tmp_path, cache, runs, monkeypatch):
    directory = _dir(tmp_path)
    expected = _uncached(directory, monkeypatch)
    assert not cache.exists() and runs == [directory]
    assert _document(directory) == expected  # computed and stored
    [entry] = cache.iterdir()
    assert _document(directory) == expected  # served
    assert _document(directory, text_only=True) == _uncached(directory, monkeypatch, text_only=True)
    assert len(runs) == 3  # the off runs and the storing run; no hit ran the analysis
    assert json.loads(entry.read_text())["waves"] == json.loads(expected)["waves"]


@pytest.mark.parametrize("change", ["edit", "touch", "replace", "add", "remove", "code.json", "occupancy",
                                    "realtime", "filenames", "new optional file"])
def test_a_changed_input_is_computed_again(tmp_path, cache, runs, monkeypatch, change):
    directory = _dir(tmp_path)
    original = _document(directory)
    assert _document(directory) == original and len(runs) == 1
    wave = directory / "se0_sm0_sl0_wv0.json"
    if change == "edit":  # same size, one instruction's duration 4 -> 5
        text = wave.read_text()
        assert ",0,4," in text
        wave.write_text(text.replace(",0,4,", ",0,5,", 1))
    elif change == "touch":
        info = wave.stat()
        os.utime(wave, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    elif change == "replace":
        spare = directory / "spare"
        shutil.copyfile(wave, spare)
        os.replace(spare, wave)
    elif change == "add":
        shutil.copyfile(wave, directory / "se0_sm0_sl0_wv9.json")
    elif change == "remove":
        wave.unlink()
    elif change == "code.json":
        document = json.loads((directory / "code.json").read_text())
        document["code"][-1][6] += 1  # one row's Hit
        (directory / "code.json").write_text(json.dumps(document))
    elif change == "new optional file":
        (directory / "realtime.json").rename(directory / "gone")
    elif change == "filenames":  # a listed wave file is missing
        (directory / "filenames.json").write_text(json.dumps({"wave_filenames": {"0": ["se9_sm0_sl0_wv0.json"]}}))
    else:
        (directory / f"{change}.json").write_text("{}")
    got = _document(directory)
    assert len(runs) == 2, change
    assert got == _uncached(directory, monkeypatch)
    assert (got == original) == (change in ("touch", "replace")), change  # a stale hit would show
    assert _document(directory) == got and len(runs) == 3  # (the off run) and served again


def test_another_code_or_other_thresholds_or_parser_is_a_miss(tmp_path, cache, runs, monkeypatch):
    directory = _dir(tmp_path)
    _document(directory)
    module = tmp_path / "module.py"
    module.write_text("x = 1\n")
    files = summary_cache._package_files()
    monkeypatch.setattr(summary_cache, "_package_files", lambda: [*files, str(module)])
    _document(directory)
    _document(directory)
    assert len(runs) == 2  # the code changed once
    info = module.stat()
    os.utime(module, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    _document(directory)
    monkeypatch.setattr(summary_cache, "FORMAT", summary_cache.FORMAT + 1)
    _document(directory)
    assert len(runs) == 4
    other = StructureThresholds(**{**DEFAULT_STRUCTURE.__dict__, "untraced_factor": 3.0})
    with_other = _document(directory, structure=other)
    assert _document(directory, structure=other) == with_other and len(runs) == 5
    assert with_other == _uncached(directory, monkeypatch, structure=other)
    monkeypatch.setenv(summary_cache.PARSER_ENV, "json")
    _document(directory)
    assert len(runs) == 7


def test_off_stores_nothing_and_a_young_input_is_not_stored(tmp_path, cache, runs, monkeypatch):
    directory = _dir(tmp_path)
    monkeypatch.setenv("KERNELTRACE_CACHE", "off")
    _document(directory)
    _document(directory)
    assert not cache.exists() and len(runs) == 2
    monkeypatch.delenv("KERNELTRACE_CACHE")
    monkeypatch.setattr(filecache, "SETTLED_NS", 3600 * 10**9)
    _document(directory)
    assert not cache.exists() and len(runs) == 3


def test_a_malformed_entry_is_a_miss_and_a_forged_one_is_used_as_is(tmp_path, cache, runs, monkeypatch):
    directory = _dir(tmp_path)
    expected = _document(directory)
    [entry] = cache.iterdir()
    record = json.loads(entry.read_text())
    entry.write_text(json.dumps({**record, "waves": {**record["waves"], "files": 12345}}))
    assert json.loads(_document(directory))["waves"]["files"] == 12345  # a valid entry is trusted...
    assert len(runs) == 1
    broken = ["", "{", "[]", "null", json.dumps({**record, "waves": []}), json.dumps({**record, "code": []}),
              json.dumps({**record, "inputs": record["inputs"][1:]}), json.dumps({**record, "key": None})]
    for count, text in enumerate(broken, start=2):
        entry.write_text(text)
        assert _document(directory) == expected, text
        assert len(runs) == count, text  # ...a malformed one is computed again (and replaced)
    entry.unlink()
    entry.mkdir()  # not a regular file: a miss, and the failed write is silent
    assert _document(directory) == expected


def test_the_entry_has_the_umask_mode_and_nothing_is_written_beside_the_inputs(tmp_path, cache):
    directory = _dir(tmp_path)
    before = sorted(os.listdir(directory))
    old = os.umask(0o027)
    try:
        _document(directory)
    finally:
        os.umask(old)
    assert sorted(os.listdir(directory)) == before
    [entry] = cache.iterdir()
    assert entry.stat().st_mode & 0o777 == 0o640


def test_a_non_regular_input_is_never_stored(tmp_path, cache):
    directory = _dir(tmp_path)
    os.mkfifo(directory / "realtime.json.fifo")
    (directory / "realtime.json").unlink()
    os.symlink(directory / "realtime.json.fifo", directory / "realtime.json")
    _document(directory)
    assert not cache.exists()


HIT_PROBE = """
import sys
sys.path.insert(0, {root!r})
from kerneltrace import filecache
filecache.SETTLED_NS = 0
sys.argv = ["hotspot_analyzer.py", *{argv!r}]
import runpy
try:
    runpy.run_path({script!r}, run_name="__main__")
except SystemExit as done:
    assert not done.code, done.code
print(sorted(name for name in ("numpy", "simdjson") if name in sys.modules))
"""


def test_the_cli_on_a_hit_imports_neither_numpy_nor_simdjson_and_writes_the_same_bytes(tmp_path, cache):
    directory = _dir(tmp_path)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    outputs = []
    for run in range(3):
        out, text = tmp_path / f"out{run}.json", tmp_path / f"out{run}.txt"
        argv = [str(directory), "--waves", "--json", str(out), "--text", str(text)]
        probe = HIT_PROBE.format(root=str(SCRIPT.parents[1]), argv=argv, script=str(SCRIPT))
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                              check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append((out.read_bytes(), text.read_bytes(), done.stdout.strip().splitlines()[-1]))
    assert outputs[0][2] == "['numpy', 'simdjson']"  # computed (and stored)
    assert outputs[1][2] == outputs[2][2] == "[]"  # served
    assert outputs[0][:2] == outputs[1][:2] == outputs[2][:2]


def test_each_test_starts_with_an_empty_cache_of_its_own(own_test_cache_dir: Path, own_cache_dir: Path):
    """conftest's per-test folder: what an earlier test stored (real captures settle and are
    stored) is never served here, so no test's result depends on the order tests run in."""
    assert os.environ["XDG_CACHE_HOME"] == str(own_test_cache_dir) != str(own_cache_dir)
    assert not any(own_test_cache_dir.iterdir())


def test_only_the_most_recently_stored_entries_are_kept(tmp_path, cache, runs, monkeypatch):
    monkeypatch.setattr(summary_cache, "MAX_ENTRIES", 2)
    dirs = [_dir(tmp_path, f"gemm{i}") for i in range(3)]
    for directory in dirs:
        _document(directory)
    assert len(list(cache.iterdir())) == 2
    _document(dirs[2])
    _document(dirs[1])
    assert len(runs) == 3  # the two newest are served
    _document(dirs[0])
    assert len(runs) == 4  # the oldest was dropped, and is stored again
    (cache / "notes.txt").write_text("not ours")
    _document(dirs[1])
    assert (cache / "notes.txt").exists() and len(list(cache.glob("*.json"))) == 2
