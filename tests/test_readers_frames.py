"""CSV tables read with pandas (readers.frames, counter_csv, pmc_perf, kernel_stats, discovery's rocpd read):
nothing guessed from cell text, exact integers, and one clear error line for bad files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from kerneltrace.errors import InputError
from kerneltrace.readers.counter_csv import read_counter_csv
from kerneltrace.readers.frames import CsvSource, integer, read_text, text_frame
from kerneltrace.readers.kernel_stats import read_kernel_stats
from kerneltrace.readers.pmc_perf import read_workload
from kerneltrace.rocprof import discover

ROOT = Path(__file__).resolve().parents[1]
HEADER = ('"Correlation_Id","Dispatch_Id","Agent_Id","Kernel_Name","Counter_Name","Counter_Value",'
          '"Start_Timestamp","End_Timestamp"')
STATS_HEADER = '"Name","Calls","TotalDurationNs","AverageNs","Percentage"'


def row(dispatch: object, kernel: str, counter: str, value: object, start: object = 100, end: object = 400) -> str:
    return f'{dispatch},{dispatch},"Agent 2","{kernel}","{counter}",{value},{start},{end}'


def write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def error_of(call, *args) -> str:
    with pytest.raises(InputError) as err:
        call(*args)
    return str(err.value)


# ---- names stay text, integers stay exact ------------------------------------------------------

def test_kernel_names_that_look_like_numbers_or_missing_values_stay_names(tmp_path):
    names = ["nan", "NA", "1e5", "NULL", "0x10", "-"]
    path = write(tmp_path / "x_counter_collection.csv", HEADER,
                 *(row(d, name, "TCC_HIT_sum", 1) for d, name in enumerate(names, start=1)))
    assert [d.kernel for d in read_counter_csv(path).dispatches] == names
    stats = write(tmp_path / "x_kernel_stats.csv", STATS_HEADER,
                  *(f'"{name}",{n},{1000 * n},1000.0,10.0' for n, name in enumerate(names, start=1)))
    assert [s.name for s in read_kernel_stats(stats)] == names
    assert [r.name for r in discover.read_kernel_stats_csv(stats)] == list(reversed(names))  # by total time


def test_nineteen_digit_timestamps_and_huge_ids_keep_every_digit(tmp_path):
    start, end = 1_700_000_000_000_000_001, 1_700_000_000_000_000_124  # above 2**53: float() rounds them
    huge = 2**64 + 7  # beyond int64
    path = write(tmp_path / "x_counter_collection.csv", HEADER,
                 row(huge, "k", "TCC_HIT", 1, start, end), row(huge, "k", "TCC_MISS", 2, start, end))
    (dispatch,) = read_counter_csv(path).dispatches
    assert dispatch.dispatch_id == huge and type(dispatch.dispatch_id) is int
    assert (dispatch.start_ns, dispatch.duration_ns) == (start, 123)
    stats = write(tmp_path / "x_kernel_stats.csv", STATS_HEADER, '"a",2,12345678901234567891,1.0,50.0')
    assert read_kernel_stats(stats)[0].total_duration_ns == 12345678901234567891
    assert integer("2.5") == 2 and integer(" 7 ") == 7 and integer("inf") is None and integer("x") is None


def test_counter_values_are_python_floats_exactly_as_float_reads_them(tmp_path):
    texts = ["0.1", "2.000000", "0.00000000e+00", "1.7976931348623157e308", "123456789012345678901234567890"]
    path = write(tmp_path / "x_counter_collection.csv", HEADER,
                 *(row(1, "k", f"C{n}", text) for n, text in enumerate(texts)))
    counters = read_counter_csv(path).dispatches[0].counters
    assert list(counters.values()) == [float(text) for text in texts]
    assert all(type(value) is float for value in counters.values())


def test_x_and_x_sum_keep_the_last_value_in_first_seen_order(tmp_path):
    path = write(tmp_path / "x_counter_collection.csv", HEADER, row(1, "k", "TCC_MISS", 1),
                 row(1, "k", "TCC_HIT_sum", 2), row(1, "k", "TCC_MISS_sum", 3))
    assert list(read_counter_csv(path).dispatches[0].counters.items()) == [("TCC_MISS", 3.0), ("TCC_HIT", 2.0)]


# ---- odd but readable files ---------------------------------------------------------------------

def test_a_byte_order_mark_before_the_header_is_read_as_nothing(tmp_path):
    path = write(tmp_path / "x_counter_collection.csv", "\ufeff" + HEADER, row(1, "k", "TCC_HIT", 1))
    assert read_counter_csv(path).dispatches[0].counters == {"TCC_HIT": 1.0}
    stats = write(tmp_path / "x_kernel_stats.csv", "\ufeff" + STATS_HEADER, '"a",2,100,50.0,100.0')
    assert read_kernel_stats(stats)[0].calls == 2


def test_short_rows_blank_lines_and_extra_cells_read_as_csv_dictreader_read_them(tmp_path):
    path = write(tmp_path / "x_counter_collection.csv", HEADER, "", row(1, "k", "TCC_HIT", 1) + ",extra,cells",
                 '1,1,"Agent 2","k","TCC_MISS",5')  # short: no timestamps on a later row of the dispatch
    dispatch = read_counter_csv(path).dispatches[0]
    assert dispatch.counters == {"TCC_HIT": 1.0, "TCC_MISS": 5.0} and dispatch.duration_ns == 300


def test_a_duplicated_optional_column_keeps_its_last_cell_a_duplicated_required_one_is_refused(tmp_path):
    source = CsvSource(write(tmp_path / "d.csv", "a,b,a", "1,2,3"), "test CSV", "fix it")
    frame = text_frame(source, read_text(source), ("b",), "missing {missing}")
    assert frame.to_dict("records") == [{"a": "3", "b": "2"}]
    path = write(tmp_path / "x_counter_collection.csv", HEADER + ',"Counter_Value"', row(1, "k", "TCC_HIT", 1) + ",9")
    assert "column Counter_Value appears 2 times in the header" in error_of(read_counter_csv, path)


# ---- bad files: the error names what, where and the fix ---------------------------------------

@pytest.mark.parametrize(("lines", "message"), [
    ([], "empty counter file"),
    ([HEADER], "counter file has a header but no rows"),
    ([HEADER.replace('"Counter_Value",', ""), row(1, "k", "TCC_HIT", 1)], "missing columns Counter_Value"),
    ([HEADER, row(1, "k", "TCC_HIT", 1), row(1, "k", "TCC_MISS", "n/a")], ":3: Counter_Value of TCC_MISS 'n/a' is not a finite number"),
    ([HEADER, row(1, "k", "TCC_HIT", "inf")], ":2: Counter_Value of TCC_HIT 'inf' is not a finite number"),
    ([HEADER, row(1, "k", "TCC_HIT", 1), '2,2,"Agent 2","k","TCC_MISS"'], ":3: Counter_Value of TCC_MISS '' is not a finite number"),
    ([HEADER, row("x", "k", "TCC_HIT", 1)], ":2: Dispatch_Id 'x' is not a finite number"),
    ([HEADER, row("", "k", "TCC_HIT", 1)], ":2: row without Dispatch_Id or Counter_Name"),
    ([HEADER, row(1, "k", "TCC_HIT", 1, "soon")], ":2: Start_Timestamp 'soon' is not a finite number"),
    ([HEADER, row(1, "k", "TCC_HIT", "bad"), row("x", "k", "TCC_HIT", 1)], ":2: Counter_Value of TCC_HIT"),  # first bad row wins
    ([HEADER, '1,1,"Agent 2","k","TCC_HIT","1'], "malformed CSV"),
], ids=["empty", "header-only", "missing-column", "non-numeric", "inf", "short-row", "bad-id", "no-id", "bad-stamp",
        "first-bad-row", "open-quote"])
def test_bad_counter_files(tmp_path, lines, message):
    path = write(tmp_path / "x_counter_collection.csv", *lines)
    assert message in error_of(read_counter_csv, path)


def test_bad_pmc_perf_cells_name_column_and_line(tmp_path):
    write(tmp_path / "pmc_perf.csv", "Dispatch_ID,Kernel_Name,TCC_HIT_sum", "0,k,1", "1,k,lots")
    assert f"{tmp_path / 'pmc_perf.csv'}:3: TCC_HIT_sum 'lots' is not a finite number" in error_of(read_workload, tmp_path)
    write(tmp_path / "pmc_perf.csv", "Dispatch_ID,Kernel_Name,TCC_HIT_sum", ",k,1")
    assert "Dispatch_ID '' is not a finite number" in error_of(read_workload, tmp_path)


def test_bad_kernel_stats(tmp_path):
    empty = write(tmp_path / "e_kernel_stats.csv")
    assert "missing column(s) Name" in error_of(read_kernel_stats, empty)
    bad = write(tmp_path / "b_kernel_stats.csv", STATS_HEADER, '"gemm",four,100,1.0,1.0')
    assert "non-numeric Calls or TotalDurationNs for kernel 'gemm'" in error_of(discover.read_kernel_stats_csv, bad)


@pytest.mark.parametrize(("script", "lines", "message"), [
    ("pmc_l2_analyzer.py", [HEADER, row(1, "k", "TCC_HIT", "n/a")], "is not a finite number"),
    ("pmc_l2_analyzer.py", [HEADER + ',"Kernel_Name"', row(1, "k", "TCC_HIT", 1) + ',"k"'], "appears 2 times"),
    ("discover_kernels.py", [STATS_HEADER, '"gemm",4'], "non-numeric Calls or TotalDurationNs"),
], ids=["l2-value", "l2-duplicate", "discover-short-row"])
def test_clis_print_one_line_and_exit_2(tmp_path, script, lines, message):
    name = "x_kernel_stats.csv" if script == "discover_kernels.py" else "x_counter_collection.csv"
    path = write(tmp_path / name, *lines)
    argv = ["--stats", str(path), "--out-dir", str(tmp_path / "out")] if script == "discover_kernels.py" else [str(path)]
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / script), *argv], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr and "Traceback" not in done.stderr


# ---- discovery's rocpd read (pd.read_sql) ------------------------------------------------------

def sqlite_file(path: Path, *statements: str) -> Path:
    with closing(sqlite3.connect(path)) as conn:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    return path


def test_rocpd_discovery_null_totals_and_number_like_names(tmp_path):
    db = sqlite_file(tmp_path / "r_results.db", 'CREATE TABLE rocpd_kernel_dispatch (id, guid, kernel_id, start, "end")',
                     "CREATE TABLE rocpd_info_kernel_symbol (id, guid, display_name)",
                     "INSERT INTO rocpd_info_kernel_symbol VALUES (1,'g','nan'),(2,'g','1e5'),(3,'g',NULL)",
                     "INSERT INTO rocpd_kernel_dispatch VALUES (1,'g',1,0,500),(2,'g',2,0,NULL),(3,'g',3,0,100)")
    rows = discover.read_rocpd_kernel_stats(db)
    assert [(r.name, r.calls, r.total_us) for r in rows] == [("nan", 1, 0.5), ("None", 1, 0.1), ("1e5", 1, 0.0)]
    plain = sqlite_file(tmp_path / "plain.db")
    assert "not a rocpd database (no such table: rocpd_kernel_dispatch)" in error_of(discover.read_rocpd_kernel_stats,
                                                                                   plain)
