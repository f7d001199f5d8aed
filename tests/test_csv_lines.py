"""A kernel_trace CSV read in part (only the lines that can name the kernel) gives what the whole parse gives.

csvlines.line_starts vouches that csv.reader reads each line alone as it reads it within
the whole text; csvlines.lines_holding keeps every line whose record can hold a cell. Both are
checked against csv.reader itself on random texts and on odd CSVs (quoted line breaks, BOM, blank
lines, short and long rows, duplicate columns, kernel names with commas and quotes, a name that is
a prefix of another), then the kernel-trace lookup by name is compared with the whole parse: the
same rows, resources, warnings and error texts.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from kerneltrace.errors import InputError
from kerneltrace.model import metadata
from kerneltrace.readers import csvlines, csvs
from kerneltrace.readers.csvlines import line_at, line_starts, lines_holding

PIECES = ['"', '"', ",", ",", "\n", "a", "b", "ab", "Ab", '""', "\r", " ", "\x0c", "\ufeff", ""]


def per_line(lines: list[str]) -> list[list[str]]:
    return [record for line in lines for record in csv.reader([line])]


def whole(lines: list[str]) -> list[list[str]] | str:
    try:
        return list(csv.reader(lines))
    except csv.Error as err:
        return f"error: {err}"


def one_record_per_line(text: str, lines: list[str]) -> bool:
    """line_starts vouches for the text, and its lines are splitlines' lines."""
    starts = line_starts(text)
    if starts is None:
        return False
    assert [line_at(text, starts, number) for number in range(len(starts))] == lines, repr(text)
    return True


def random_texts(count: int) -> list[str]:
    rng = random.Random(24)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 24))) for _ in range(count)]


def test_a_text_vouched_for_parses_line_by_line_as_a_whole():
    vouched = quoted = 0
    for text in random_texts(20000):
        lines = text.splitlines()
        if one_record_per_line(text, lines):
            vouched += 1
            quoted += '"' in text
            assert per_line(lines) == whole(lines), repr(text)
    # the check is neither always nor never true, and vouches for texts with quotes
    assert 1000 < vouched < 19000 and quoted > 500, (vouched, quoted)


def test_every_line_whose_record_holds_a_cell_is_kept():
    checked = 0
    for text in random_texts(6000):
        lines = text.splitlines()
        if not one_record_per_line(text, lines):
            continue
        for number, line in enumerate(lines):
            for cell in next(csv.reader([line]), []):
                if cell:
                    assert number in lines_holding(text, {cell}), (text, cell)
                    checked += 1
                low = cell.lower()
                if low.isascii() and len(low) > 1:
                    assert number in lines_holding(text, {low[1:]}, lower=True), (text, cell)
    assert checked > 500


@pytest.mark.parametrize(("text", "vouched"), [
    ('"Kernel_Name",x\n"a",1\n', True),
    ('Kernel_Name,x\n"a\nb",1\n', False),            # a quoted cell across a line break
    ('Kernel_Name,x\r\n"a",1\r\n', False),           # \r\n line ends
    ('Kernel_Name,x\n"a",1\x0c"b",2\n', False),      # a form feed: splitlines breaks there
    ('Kernel_Name,x\na,"b\n', False),                # a quote opened after a comma, never closed
    ('Kernel_Name,x\n"a",""\n', False),              # an even run of quotes last: not settled cheaply
    ('Kernel_Name,x\n"a ""b""",1\n', True),          # an odd run after a cell's text closes it
    ('Kernel_Name,x\n"a,""",1\n', False),            # after a comma, as below: left to the whole parse
    ('Kernel_Name,x\na,""",1\n', False),             # an odd run after a comma may open a cell
    ('\ufeffKernel_Name,x\n\n"a,b",1\n\n', True),     # BOM and blank lines
    ("", True),
    ('Kernel_Name\n"' + "x" * (csv.field_size_limit() + 1) + '"\n', False),
])
def test_odd_texts(text: str, vouched: bool):
    lines = text.splitlines()
    assert one_record_per_line(text, lines) is vouched
    if vouched:
        assert per_line(lines) == whole(lines)


def test_the_line_breaks_set_aside_are_those_of_splitlines():
    breaks = {char for char in map(chr, range(0x110000)) if len(f"a{char}b".splitlines()) == 2}
    assert breaks == {"\n", *csvlines._OTHER_LINE_BREAKS}


def test_a_needle_shorter_than_another_keeps_the_lines_of_both():
    text = 'n\n"k"\n"k2"\n"xk"\n"other"\n'
    assert lines_holding(text, {"k", "k2"}) == [1, 2, 3]
    assert lines_holding(text, {"K2"}, lower=False) == []
    assert lines_holding(text, {"k2"}, lower=True) == [2]


HEADER = ("Kind,Agent_Id,Dispatch_Id,Kernel_Name,VGPR_Count,SGPR_Count,LDS_Block_Size,"
          "Workgroup_Size_X,Workgroup_Size_Y,Workgroup_Size_Z")

ODD_FILES = {
    "plain": f'{HEADER}\n"K","Agent 1",1,"gemm",8,16,0,64,1,1\n"K","Agent 1",2,"gemm_v2",8,16,0,64,1,1\n'
             '"K","Agent 1",3,"gemm",12,16,0,64,1,1\n',
    "bom_blank_lines": f'\ufeff{HEADER}\n\n"K","Agent 1",1,"gemm",8,16,0,64,1,1\n\n\n'
                       '"K","Agent 1",2,"gemm",8,16,0,64,1,1\n',
    "commas_and_quotes": f'{HEADER}\n"K","Agent 1",1,"f<a, b>",8,16,0,64,1,1\n'
                         '"K","Agent 1",2,"say ""hi""",8,16,0,64,1,1\n"K","Agent 1",3,"f<a, b>",4,16,0,64,1,1\n',
    "short_and_long_rows": f'{HEADER}\n"K","Agent 1",1,"gemm",8\n"K","Agent 1",2,"gemm",8,16,0,64,1,1,9,9\n'
                           '"K","Agent 1",3,"gemm"\n',
    "duplicate_columns": "Kernel_Name,VGPR_Count,Kernel_Name,VGPR_Count\nx,1,gemm,8\ngemm,2,y,8\nz,3,gemm,9\n",
    "prefix_names": f'{HEADER}\n"K","Agent 1",1,"gemm_tail",8,16,0,64,1,1\n"K","Agent 1",2,"gemm",8,16,0,64,1,1\n'
                    '"K","Agent 1",3,"my_gemm",8,16,0,64,1,1\n',
    "non_canonical_quotes": f'{HEADER}\n"K","Agent 1",1,"ge"mm,8,16,0,64,1,1\nK,Agent 1,2,ge"mm",8,16,0,64,1,1\n'
                            'K,Agent 1,3,gemm,4,16,0,64,1,1\n',
    "quoted_line_break": f'{HEADER}\n"K","Agent 1",1,"gemm",8,16,0,64,1,1\n"K","Agent 1",2,"gem\nm",8,16,0,64,1,1\n'
                         '"K","Agent 1",3,"gemm",4,16,0,64,1,1\n',
    "crlf": f'{HEADER}\r\n"K","Agent 1",1,"gemm",8,16,0,64,1,1\r\n"K","Agent 1",2,"gemm",4,16,0,64,1,1\r\n',
    "no_kernel_name_column": "Kind,Dispatch_Id\nK,1\n",
    "empty": "",
    "oversized_cell": f'{HEADER}\n"K","Agent 1",1,"{"g" * (csv.field_size_limit() + 1)}",8,16,0,64,1,1\n',
    "oversized_cell_in_a_multi_line_cell": f'{HEADER}\n"K","Agent 1",1,"g\n{"g" * csv.field_size_limit()}",8\n',
}
NAME_SETS = [{"gemm"}, {"gemm", "gemm_v2"}, {"f<a, b>"}, {'say "hi"'}, {"ge\"mm", "gemm"}, {"gem\nm"},
             {"gemm_tail"}, {"absent"}, set()]
NEEDLES = ["GEMM", "mm", "a, b", '"hi"', "zz", "gem"]


def _error(read, path: Path) -> str | None:
    try:
        read(path)
    except InputError as err:
        return str(err)
    return None


def _rows(table, wanted) -> list[dict]:
    return [table.row(at).to_dict() for at, name in enumerate(table.names) if wanted(name)]


def _resources(table, wanted):
    return table.resources([at for at, name in enumerate(table.names) if wanted(name)])


@pytest.mark.parametrize("name", sorted(ODD_FILES))
def test_the_rows_naming_a_kernel_are_those_of_the_whole_parse(tmp_path: Path, name: str):
    path = tmp_path / f"{name}_kernel_trace.csv"
    path.write_bytes(ODD_FILES[name].encode())
    error = _error(csvs.read_kernel_trace_table, path)
    assert _error(csvs.read_kernel_trace_file, path) == error
    if error is not None:
        return
    full = csvs.read_kernel_trace_table(path)
    for names in NAME_SETS:
        part = csvs.read_kernel_trace_file(path).naming(names)
        assert _rows(part, names.__contains__) == _rows(full, names.__contains__), names
        assert _resources(part, names.__contains__) == _resources(full, names.__contains__), names
    for needle in NEEDLES:
        def holds(cell: str, needle: str = needle.lower()) -> bool:
            return needle in cell.lower()
        part = csvs.read_kernel_trace_file(path).mentioning(needle)
        assert _rows(part, holds) == _rows(full, holds), needle


def test_the_partial_read_is_taken_on_the_canonical_files():
    for name in ("plain", "bom_blank_lines", "commas_and_quotes", "prefix_names", "non_canonical_quotes"):
        text = ODD_FILES[name]
        assert one_record_per_line(text, text.splitlines()), name
    for name in ("quoted_line_break", "crlf", "oversized_cell"):
        text = ODD_FILES[name]
        assert not one_record_per_line(text, text.splitlines()), name


def _match(paths: list[Path], names: list[str], kernel: str | None, dispatch: int | None):
    metadata._cached.cache_clear()
    warnings: list[str] = []
    found = metadata.match_kernel_trace(paths, dispatch, names, kernel, warnings)
    return (found.row.to_dict() if found.row else None), found.join, found.csv, warnings


@pytest.mark.parametrize(("names", "kernel", "dispatch"), [
    (["gemm"], None, None), (["gemm"], None, 3), (["absent"], "GEM", None), (["absent"], "a, b", 7),
    (['say "hi"'], None, 2), (["f<a, b>", "f<a, b>.kd"], None, None), ([], "zz", None),
])
def test_the_lookup_by_name_warns_and_finds_as_the_whole_parse(tmp_path: Path, monkeypatch, names, kernel,
                                                               dispatch):
    paths = []
    for name, text in sorted(ODD_FILES.items()):
        paths.append(tmp_path / f"discover_{name}_kernel_trace.csv")
        paths[-1].write_bytes(text.encode())
        paths.append(tmp_path / f"run_{name}_kernel_trace.csv")
        paths[-1].write_bytes(text.encode())
    for order in (paths, paths[::-1], *([path] for path in paths)):
        partial = _match(order, names, kernel, dispatch)
        with monkeypatch.context() as patched:
            patched.setattr(csvs, "line_starts", lambda text: None)
            assert _match(order, names, kernel, dispatch) == partial


def test_a_name_join_takes_a_typical_dispatch_not_the_cold_first_one(tmp_path: Path):
    """A discovery run's CSV lists a kernel's every launch; its first is often cold (a real
    FlyDSL capture: 25.2 µs, then ~17.3 µs): the name join takes the median-duration dispatch
    among those launched alike, and a launch with another grid never stands in for it."""
    from kerneltrace.synth.csvs import DispatchRow, kernel_trace_csv

    def row(dispatch: int, duration: int, grid: int = 1048576) -> DispatchRow:
        start = dispatch * 100_000
        return DispatchRow(dispatch, 11, "quant_kernel_0", start, start + duration, 512, 0, 24, 0, 32,
                           (256, 1, 1), (grid, 1, 1))

    durations = {1: 25_160, 2: 17_320, 3: 17_121, 4: 17_280, 5: 17_400}
    rows = [row(d, t) for d, t in durations.items()] + [row(6, 9_000, grid=524288)]
    path = tmp_path / "discover_kernel_trace.csv"
    path.write_text(kernel_trace_csv(rows))
    found, join, _, warnings = _match([path], ["quant_kernel_0"], None, 8)
    assert join == "kernel_name" and not warnings
    assert found["dispatch_id"] == 2 and found["duration_ns"] == 17_320  # median of the five alike
    assert found["grid_size"] == [1048576, 1, 1]
    path.write_text(kernel_trace_csv(rows[:2]))  # two launches: no typical one to tell apart
    assert _match([path], ["quant_kernel_0"], None, 8)[0]["dispatch_id"] == 1
