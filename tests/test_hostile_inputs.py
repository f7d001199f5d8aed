"""Hostile inputs: every reader ends in a clean InputError or a result, never another exception.

Property tests (hypothesis) mutate small valid files written by kerneltrace.synth: truncation,
hostile values at any JSON path or CSV cell (huge numbers, non-finite floats, wrong types, deep
nesting), stray non-UTF-8 bytes, arbitrary bytes and empty files. Deadlines are generous (they
catch runaway parsing, not slowness on a busy machine); example counts stay small.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneltrace import synth
from kerneltrace.errors import InputError
from kerneltrace.readers import (
    codejson,
    counter_csv,
    csvs,
    filenames,
    pmc_perf,
    rocpd,
    snapshots,
)
from kerneltrace.readers.wavefile import reader as wavefile
from kerneltrace.rocprof import discover

SETTINGS = settings(max_examples=40, deadline=timedelta(seconds=10), derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
DEEP = 100_000  # far beyond the interpreter's recursion limit


# ---- valid samples, written once per module -------------------------------------------------

@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("samples")
    spec = synth.demo_vec_add()
    dispatch = synth.write_dispatch_dir(root / "v3", spec)
    legacy = synth.write_dispatch_dir(root / "legacy", spec, variant="legacy")
    pcs = synth.write_dispatch_dir(root / "pcs", spec, variant="pcsampling")
    run = root / "run"
    synth.write_att_run(run, [spec], calls=1, with_waves=False)
    discovery = synth.write_discovery_run(root / "disc", [spec], calls=2)
    counters = synth.write_counter_collection(
        root / "x_counter_collection.csv",
        synth.counter_rows(spec, 1, {"TCC_HIT_sum": 10.0, "TCC_MISS_sum": 2.0}))
    wave = sorted(dispatch.glob(wavefile.WAVE_FILE_GLOB))[0]
    legacy_wave = sorted(legacy.glob(wavefile.WAVE_FILE_GLOB))[0]
    return {
        "code.json": (dispatch / "code.json").read_bytes(),
        "code_legacy.json": (legacy / "code.json").read_bytes(),
        "code_pcs.json": (pcs / "code.json").read_bytes(),
        "filenames.json": (dispatch / "filenames.json").read_bytes(),
        "snapshots.json": (dispatch / "snapshots.json").read_bytes(),
        "wave.json": wave.read_bytes(),
        "wave_legacy.json": legacy_wave.read_bytes(),
        "kernel_trace.csv": (run / "att_kernel_trace.csv").read_bytes(),
        "agent_info.csv": (run / "att_agent_info.csv").read_bytes(),
        "kernel_stats.csv": discovery["kernel_stats"].read_bytes(),
        "counter_collection.csv": counters.read_bytes(),
        "pmc_perf.csv": (b"Dispatch_ID,Kernel_Name,GPU_ID,TCC_HIT_sum,TCC_MISS_sum,Start_Timestamp,End_Timestamp\n"
                         b"1,vec_add,0,10,2,100,200\n2,vec_add,0,12,3,300,450\n"),
    }


# ---- one entry point per reader: write bytes where the reader expects them, read them back --

def _read_code(path: Path):
    return codejson.read_code_json(path)


def _read_filenames(path: Path):
    return filenames.read_filenames(path)


def _read_snapshots(path: Path):
    return snapshots.read_snapshots(path.parent)


def _read_wave(path: Path):
    return wavefile.read_wave_file(path)


def _read_pmc_perf(path: Path):
    return pmc_perf.read_workload(path.parent)


READERS = {
    "code.json": ("code.json", _read_code),
    "code_legacy.json": ("code.json", _read_code),
    "code_pcs.json": ("code.json", _read_code),
    "filenames.json": ("filenames.json", _read_filenames),
    "snapshots.json": ("snapshots.json", _read_snapshots),
    "wave.json": ("se0_sm0_sl0_wv0.json", _read_wave),
    "wave_legacy.json": ("se0_sm0_sl0_wv0.json", _read_wave),
    "kernel_trace.csv": ("att_kernel_trace.csv", csvs.read_kernel_trace),
    "agent_info.csv": ("att_agent_info.csv", csvs.read_agent_info),
    # through discovery, its consumer: the pandas reader has no field limit, a cell it cannot
    # use (a 200 000-character "name" row without Calls) is refused there
    "kernel_stats.csv": ("discover_kernel_stats.csv", discover.read_kernel_stats_csv),
    "counter_collection.csv": ("x_counter_collection.csv", counter_csv.read_counter_csv),
    "pmc_perf.csv": ("pmc_perf.csv", _read_pmc_perf),
}
JSON_KINDS = [kind for kind in READERS if kind.endswith(".json")]
CSV_KINDS = [kind for kind in READERS if kind.endswith(".csv")]


def read_clean(folder: Path, kind: str, data: bytes):
    """Feed ``data`` to the reader of ``kind``: returns the result, or the InputError it raised.

    Any other exception propagates and fails the test.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    name, reader = READERS[kind]
    path = folder / name
    path.write_bytes(data)
    try:
        return reader(path)
    except InputError as err:
        assert str(err).strip(), "an InputError must say what is wrong"
        return err


# ---- hostile values ------------------------------------------------------------------------

HOSTILE_SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(10 ** 40), max_value=10 ** 40),
    st.sampled_from([2 ** 63, 2 ** 64, -(2 ** 63) - 1, 10 ** 400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
HOSTILE_VALUES = st.recursive(HOSTILE_SCALARS,
                              lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(max_size=5), inner, max_size=4)),
                              max_leaves=12)


def _paths(node, prefix=()):
    """Every JSON path in a document (lists are sampled: first, second and last element)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list) and node:
        for index in sorted({0, min(1, len(node) - 1), len(node) - 1}):
            yield from _paths(node[index], (*prefix, index))


def _replace(node, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: _replace(node[head], rest, value)}
    copy = list(node)
    copy[head] = _replace(node[head], rest, value)
    return copy


@SETTINGS
@given(kind=st.sampled_from(JSON_KINDS), data=st.data(), value=HOSTILE_VALUES)
def test_json_readers_with_hostile_value_at_any_path(samples, tmp_path, kind, data, value):
    document = json.loads(samples[kind])
    path = data.draw(st.sampled_from(list(_paths(document))), label="path")
    hostile = json.dumps(_replace(document, path, value), allow_nan=True)  # NaN/Infinity tokens too
    read_clean(tmp_path / "in", kind, hostile.encode())


@SETTINGS
@given(kind=st.sampled_from(list(READERS)), fraction=st.floats(min_value=0, max_value=1))
def test_truncated_files(samples, tmp_path, kind, fraction):
    original = samples[kind]
    read_clean(tmp_path / "in", kind, original[: int(len(original) * fraction)])


@SETTINGS
@given(kind=st.sampled_from(list(READERS)), fraction=st.floats(min_value=0, max_value=1),
       junk=st.binary(min_size=1, max_size=8).map(lambda b: bytes(x | 0x80 for x in b)))
def test_non_utf8_bytes_anywhere(samples, tmp_path, kind, fraction, junk):
    original = samples[kind]
    at = int(len(original) * fraction)
    read_clean(tmp_path / "in", kind, original[:at] + junk + original[at:])


@SETTINGS
@given(kind=st.sampled_from(list(READERS)), data=st.binary(max_size=300))
def test_arbitrary_bytes(tmp_path, kind, data):
    read_clean(tmp_path / "in", kind, data)


CELL_VALUES = st.one_of(
    st.sampled_from(["", "1e400", "-1e400", "inf", "nan", "-", "0x10", "9" * 400, "-" + "9" * 40,
                     "\x00", '"', '"unterminated', "a,b", "\r", "  7  ", "1.5", "true"]),
    st.text(max_size=12),
)


@SETTINGS
@given(kind=st.sampled_from(CSV_KINDS), data=st.data(), value=CELL_VALUES)
def test_csv_readers_with_hostile_cell(samples, tmp_path, kind, data, value):
    lines = samples[kind].decode().splitlines()
    row = data.draw(st.integers(min_value=0, max_value=len(lines) - 1), label="row")
    cells = lines[row].split(",")
    column = data.draw(st.integers(min_value=0, max_value=len(cells) - 1), label="column")
    cells[column] = value
    lines[row] = ",".join(cells)
    read_clean(tmp_path / "in", kind, "\n".join(lines).encode("utf-8", errors="surrogateescape"))


# ---- named cases (each one a protection that once was missing) ------------------------------

@pytest.mark.parametrize("kind", JSON_KINDS)
def test_deep_nesting_is_a_clean_input_error(tmp_path, kind):
    nested = b"[" * DEEP + b"]" * DEEP
    for data in (nested, b'{"code": ' + nested + b'}', b'{"wave": {"begin": 1, "end": 2, "waitcnt": ' + nested + b'}}'):
        result = read_clean(tmp_path / "in", kind, data)
        assert isinstance(result, InputError)


@pytest.mark.parametrize("kind", list(READERS))
def test_empty_file_is_a_clean_input_error(tmp_path, kind):
    assert isinstance(read_clean(tmp_path / "in", kind, b""), InputError)


@pytest.mark.parametrize("token", [b"Infinity", b"-Infinity", b"NaN", b"1e400"])
def test_code_json_non_finite_count_is_refused(samples, tmp_path, token):
    document = json.loads(samples["code.json"])
    row = next(i for i, r in enumerate(document["code"]) if not r[0].lstrip().startswith(";"))
    document["code"][row][6] = "HIT"  # placeholder replaced by the raw token below
    data = json.dumps(document).replace('"HIT"', token.decode()).encode()
    result = read_clean(tmp_path / "in", "code.json", data)
    assert isinstance(result, InputError) and "Hit" in str(result)


def test_csv_non_finite_integer_is_unknown_not_a_crash(samples, tmp_path):
    header, first, *rest = samples["kernel_trace.csv"].decode().splitlines()
    names = next(csv.reader([header]))
    cells = next(csv.reader([first]))
    cells[names.index("VGPR_Count")] = "1e400"
    line = ",".join(f'"{c}"' for c in cells)
    rows = read_clean(tmp_path / "in", "kernel_trace.csv", "\n".join([header, line, *rest]).encode())
    assert not isinstance(rows, InputError)
    assert rows[0].vgpr_count is None  # unknown, never a made-up number


@pytest.mark.parametrize("kind", CSV_KINDS)
def test_csv_field_over_the_csv_module_limit(samples, tmp_path, kind):
    huge = b'"' + b"x" * 200_000 + b'"'
    for data in (huge + b"\n", samples[kind] + huge + b"\n"):
        assert isinstance(read_clean(tmp_path / "in", kind, data), InputError)


def test_wave_file_integer_beyond_int64_is_refused_not_clipped(samples, tmp_path):
    document = json.loads(samples["wave.json"])
    document["wave"]["instructions"][0][0] = 10 ** 30
    result = read_clean(tmp_path / "in", "wave.json", json.dumps(document).encode())
    assert isinstance(result, InputError)
    document["wave"]["instructions"][0][0] = -(10 ** 30)
    assert isinstance(read_clean(tmp_path / "in", "wave.json", json.dumps(document).encode()), InputError)


def test_snapshot_symlink_loop_is_refused(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a").symlink_to("b")
    (folder / "b").symlink_to("a")
    (folder / "snapshots.json").write_text(json.dumps({"/": {"x.py": "a"}}))
    with pytest.raises(InputError, match="cannot be resolved"):
        snapshots.read_snapshots(folder)


# ---- rocpd: a database with the right views but hostile contents ------------------------------

def _rocpd(path: Path, dispatch_id: object, value: object, start: object = 0) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE rocpd_kernel_dispatch (id, guid, agent_id, kernel_id, dispatch_id, start, "end", event_id);
        CREATE TABLE rocpd_info_kernel_symbol (id, guid, kernel_name, display_name);
        CREATE TABLE rocpd_pmc_event (id, guid, event_id, pmc_id, value);
        CREATE TABLE rocpd_info_pmc (id, guid, name);
    """)
    conn.execute("INSERT INTO rocpd_kernel_dispatch VALUES (1, 'g', 5, 3, ?, ?, 100, 7)", (dispatch_id, start))
    conn.execute("INSERT INTO rocpd_info_kernel_symbol VALUES (3, 'g', '_Z1kv', 'k')")
    conn.execute("INSERT INTO rocpd_info_pmc VALUES (1, 'g', 'TCC_HIT_sum')")
    conn.execute("INSERT INTO rocpd_pmc_event VALUES (1, 'g', 7, 1, ?)", (value,))
    conn.commit()
    conn.close()
    return path


SQL_VALUES = st.one_of(st.sampled_from([float("inf"), float("-inf"), float("nan"), ""]), st.none(), st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
                       st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=10),
                       st.binary(max_size=10))


@SETTINGS
@given(dispatch_id=SQL_VALUES, value=SQL_VALUES, start=SQL_VALUES)
def test_rocpd_hostile_cell_types(tmp_path, dispatch_id, value, start):
    db = tmp_path / "x_results.db"
    db.unlink(missing_ok=True)
    _rocpd(db, dispatch_id, value, start)
    try:
        runs = rocpd.read_rocpd(db)
    except InputError:
        return
    counters = runs[0].dispatches[0].counters
    assert set(counters) == {"TCC_HIT"}


def test_rocpd_truncated_database(tmp_path):
    db = _rocpd(tmp_path / "full.db", 1, 2.0)
    data = db.read_bytes()
    for cut in (0, 16, 100, len(data) // 2, len(data) - 1):
        short = tmp_path / f"cut{cut}.db"
        short.write_bytes(data[:cut])
        try:
            rocpd.read_rocpd(short)
        except InputError:
            pass


@SETTINGS
@given(start=SQL_VALUES, dispatch_id=SQL_VALUES)
def test_rocpd_kernel_summary_hostile_cell_types(tmp_path, start, dispatch_id):
    db = tmp_path / "x_results.db"
    db.unlink(missing_ok=True)
    _rocpd(db, dispatch_id, 1.0, start)
    try:
        summary = rocpd.kernels_summary(db)
    except InputError:
        return
    assert [(s.name, s.calls) for s in summary] == [("k", 1)]
