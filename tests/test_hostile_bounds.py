"""Bounded work on hostile input (issue 22 points 11/15): linear-time opcode parsing, integer
columns bounded to the decoder's 64-bit range, code.json size bounded.

Before the fix: one 120 KB asm token took 14 s in `_ENCODING_SUFFIX.sub` (quadratic; the 1 MB
tokens below would take 20+ minutes), a 401-digit Latency passed the reader and crashed the text
report with an OverflowError in fmt.cycles, and a 2 GB sparse code.json was read whole."""

# ruff: noqa: F811 - test parameters named after the imported fixtures they receive
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_hostile_files import dispatch, pristine  # noqa: F401 - the same fixtures (a copied capture)

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.errors import InputError
from kerneltrace.isa import classify as isa
from kerneltrace.readers import codejson
from kerneltrace.render.fmt import cycles
from kerneltrace.render.text import render_text

REPO = Path(__file__).resolve().parents[1]
MB = 1 << 20


def _first_instruction(document: dict) -> int:
    return next(i for i, row in enumerate(document["code"]) if not row[0].lstrip().startswith(";"))


def _edit_code(dispatch: Path, column: int | None, value: object, *, asm: str | None = None) -> None:
    """Set one cell of the first instruction row (raw JSON text, so 401-digit integers stay ints)."""
    document = json.loads((dispatch / "code.json").read_text())
    row = _first_instruction(document)
    if asm is not None:
        document["code"][row + 1][0] = asm
    if column is not None:
        document["code"][row][column] = "PLACEHOLDER"
    text = json.dumps(document).replace('"PLACEHOLDER"', str(value))
    (dispatch / "code.json").write_text(text)


# ---- linear-time opcode parsing -------------------------------------------------------------

HOSTILE_TOKENS = {
    "suffix run without a match": "v_add" + "_e32" * (MB // 4) + "x",
    "suffix run": "v_add_f32" + "_e64" * (MB // 4),
    "one long word": "s_waitcnt" + "a" * MB,
}


@pytest.mark.parametrize("name", HOSTILE_TOKENS)
def test_opcode_parsing_reads_a_bounded_prefix(name):
    asm = HOSTILE_TOKENS[name]
    assert len(isa.opcode(asm)) <= isa.MAX_OPCODE_CHARS
    assert len(isa.base_opcode(asm)) <= isa.MAX_OPCODE_CHARS
    assert isa.classify(asm) in isa.STALL_TYPES
    assert isa.wait_counters(asm) == {}


@pytest.mark.parametrize("asm, base", [
    ("v_add_f32_e32 v1, v2, v3", "v_add_f32"),
    ("v_add_f32_e64 v1, v2, v3", "v_add_f32"),
    ("v_mov_b32_dpp16 v1, v2", "v_mov_b32"),
    ("v_mov_b32_dpp8 v1, v2", "v_mov_b32"),
    ("v_mov_b32_dpp v1, v2 row_shr:1", "v_mov_b32"),
    ("v_pk_fma_f16_vop3p v1, v2, v3, v4", "v_pk_fma_f16"),
    ("v_fma_f32_vop3 v1, v2, v3, v4", "v_fma_f32"),
    ("v_add_u32_sdwa v1, v2, v3", "v_add_u32"),
    ("v_cmp_lt_f32_e32_e64 vcc, v1, v2", "v_cmp_lt_f32"),
    ("V_ADD_F32_E32, v1", "v_add_f32"),
    ("global_load_dwordx4 v[0:3], v4, s[0:1]", "global_load_dwordx4"),
    ("v_dpp_like_name_e32", "v_dpp_like_name"),
    ("", ""),
])
def test_encoding_suffixes_are_stripped_as_before(asm, base):
    assert isa.base_opcode(asm) == base


def test_a_megabyte_asm_token_goes_through_the_whole_analysis(dispatch):
    for asm in HOSTILE_TOKENS.values():
        _edit_code(dispatch, None, None, asm=asm)
        doc = analyze_dispatch(dispatch, arch="gfx942", waves=True)
        assert doc["totals"]["hits"] > 0
        render_text(doc)


# ---- integer columns bounded ------------------------------------------------------------------

# v3 10-column layout: ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle
COLUMNS = {"Hit": 6, "Latency": 7, "Stall": 8, "Idle": 9}


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("value", [1 << 63, "1" + "0" * 400])
def test_count_above_2_63_is_refused_naming_the_column(dispatch, column, value):
    _edit_code(dispatch, COLUMNS[column], value)
    with pytest.raises(InputError, match=rf"column {column} is .*64-bit range"):
        codejson.read_code_json(dispatch / "code.json")


def test_count_at_the_64_bit_limit_is_read(dispatch):
    _edit_code(dispatch, COLUMNS["Idle"], (1 << 63) - 1)
    table = codejson.read_code_json(dispatch / "code.json")
    assert max(row.idle or 0 for row in table.rows) == (1 << 63) - 1


def test_vaddr_above_2_64_is_refused(dispatch):
    _edit_code(dispatch, 5, 1 << 64)
    with pytest.raises(InputError, match="column Vaddr"):
        codejson.read_code_json(dispatch / "code.json")


def test_401_digit_latency_is_one_error_line_from_the_text_report(dispatch):
    _edit_code(dispatch, COLUMNS["Latency"], "9" * 401)
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "hotspot_analyzer.py"), str(dispatch),
                           "--arch", "gfx942"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Latency" in proc.stderr


def test_cycles_formats_a_number_no_float_holds():
    assert cycles(10**400).startswith("~2^")
    assert cycles(-(10**400)).startswith("-~2^")
    assert cycles(1234567) == "1.23M"


# ---- code.json size bounded --------------------------------------------------------------------

def test_oversized_sparse_code_json_is_refused_before_reading(dispatch):
    path = dispatch / "code.json"
    with open(path, "r+b") as handle:  # sparse: no disk used, but st_size beyond the limit
        handle.truncate(codejson.CODE_JSON_LIMIT + 1)
    with pytest.raises(InputError, match="more than such a file can legitimately hold"):
        codejson.read_code_json(path)
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "hotspot_analyzer.py"), str(dispatch),
                           "--arch", "gfx942"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert os.path.getsize(path) == codejson.CODE_JSON_LIMIT + 1  # input never modified
