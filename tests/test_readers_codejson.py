"""code.json reader: every variant by structure, and every malformed input as one InputError."""

from __future__ import annotations

import json

import pytest
from hotspot_fixtures import (
    PCS_HEADER,
    V3_HEADER,
    demo_rows,
    make_develop_dir,
    make_dispatch_dir,
    make_legacy_dir,
    make_multi_kernel_dir,
    make_pcsampling_dir,
    write_json,
)

from kerneltrace.errors import InputError
from kerneltrace.readers.codejson import PC_SAMPLING_REASONS, read_code_json


def test_v3_string_header_rows_and_labels(tmp_path):
    table = read_code_json(make_dispatch_dir(tmp_path) / "code.json")
    source_rows = demo_rows()
    assert table.format == "v3"
    assert [k.symbol for k in table.kernels] == ["demo_kernel_0"]
    assert len(table.rows) == len(source_rows) - 1          # the label row is not an instruction
    first = table.rows[0]
    assert (first.index, first.hits, first.latency, first.stall, first.idle) == (1, 8, 400, 300, 50)
    assert first.vaddr == 4100 and first.codeobj == 2 and first.kernel == "demo_kernel_0"
    assert sum(r.stall for r in table.rows) == sum(r[8] for r in source_rows[1:])


def test_v3_list_header_and_reordered_columns_resolved_by_name(tmp_path):
    # Swap Stall and Idle in header and data: a positional parser would mix them up.
    names = [n.strip() for n in V3_HEADER.split(",")]
    names[8], names[9] = names[9], names[8]
    rows = [[*r[:8], r[9], r[8]] for r in demo_rows()]
    table = read_code_json(make_dispatch_dir(tmp_path, rows, header=names) / "code.json")
    assert table.rows[0].stall == 300 and table.rows[0].idle == 50


def test_codeobj_header_alias(tmp_path):
    header = V3_HEADER.replace("Codeobj", "CodeObj")
    table = read_code_json(make_dispatch_dir(tmp_path, header=header) / "code.json")
    assert table.rows[0].codeobj == 2


def test_develop_14_column_variant_is_v3(tmp_path):
    table = read_code_json(make_develop_dir(tmp_path) / "code.json")
    assert table.format == "v3"
    assert table.rows[5].stall == 4900


def test_headerless_10_columns_use_documented_layout(tmp_path):
    table = read_code_json(make_dispatch_dir(tmp_path, header=None) / "code.json")
    assert table.format == "v3" and table.rows[0].idle == 50


def test_pcsampling_reasons_named_in_sdk_order(tmp_path):
    table = read_code_json(make_pcsampling_dir(tmp_path) / "code.json")
    assert table.format == "pcsampling"
    wait = table.rows[2]
    assert wait.pc_stalled == 30 and wait.pc_issued == 0
    assert wait.stall_reasons["WAITCNT"] == 30
    assert list(wait.stall_reasons) == list(PC_SAMPLING_REASONS)
    assert PC_SAMPLING_REASONS[7] == "ARBITER_WIN_EX_STALL" and len(PC_SAMPLING_REASONS) == 10


def test_legacy_rows_have_no_stall_or_idle(tmp_path):
    table = read_code_json(make_legacy_dir(tmp_path) / "code.json")
    assert table.format == "legacy"
    assert [k.symbol for k in table.kernels] == ["_Z6kernelPf"]   # banner row is not a kernel
    assert len(table.rows) == 5
    assert all(r.stall is None and r.idle is None and r.vaddr is None for r in table.rows)
    assert table.rows[3].latency == 2000 and table.rows[3].hits == 4


def test_legacy_banner_only_is_empty(tmp_path):
    table = read_code_json(make_legacy_dir(tmp_path, empty=True) / "code.json")
    assert table.format == "empty" and table.rows == []


@pytest.mark.parametrize("code", [None, []])
def test_null_or_empty_code_is_empty_format(tmp_path, code):
    path = write_json(tmp_path / "code.json", {"code": code, "header": V3_HEADER, "version": "3.0.0"})
    assert read_code_json(path).format == "empty"


def test_multi_kernel_rows_assigned_to_their_label(tmp_path):
    table = read_code_json(make_multi_kernel_dir(tmp_path) / "code.json")
    assert [k.symbol for k in table.kernels] == ["_ZN2at6native10fill_kernelEv", "demo_kernel_0"]
    assert len(table.rows_of("_ZN2at6native10fill_kernelEv")) == 2
    assert len(table.rows_of("demo_kernel_0")) == len(demo_rows()) - 1
    assert table.kernels[0].name == "at::native::fill_kernel()"


def _raises(path, *fragments):
    with pytest.raises(InputError) as info:
        read_code_json(path)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message
    assert "\n" not in message
    return message


def test_unexpected_row_width(tmp_path):
    rows = demo_rows()
    rows[4] = rows[4][:9]
    _raises(make_dispatch_dir(tmp_path, rows) / "code.json", "row 4", "9 columns", "expected 10")


def test_truncated_json(tmp_path):
    path = make_dispatch_dir(tmp_path) / "code.json"
    path.write_bytes(path.read_bytes()[:-40])
    _raises(path, "not valid JSON", "fix:")


def test_non_json_and_empty_file(tmp_path):
    path = tmp_path / "code.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n")
    _raises(path, "code.json")
    path.write_text("   ")
    _raises(path, "empty")


def test_missing_file(tmp_path):
    _raises(tmp_path / "code.json", "not found")


def test_non_integer_cell(tmp_path):
    rows = demo_rows()
    rows[2][7] = "lots"
    _raises(make_dispatch_dir(tmp_path, rows) / "code.json", "row 2", "Latency")


def test_header_missing_required_column(tmp_path):
    header = V3_HEADER.replace("Latency", "Cycles")
    _raises(make_dispatch_dir(tmp_path, header=header) / "code.json", "Latency")


def test_not_a_code_document(tmp_path):
    path = write_json(tmp_path / "code.json", [1, 2, 3])
    _raises(path, "no top-level")


def test_pcsampling_reasons_must_be_a_list(tmp_path):
    directory = make_pcsampling_dir(tmp_path)
    document = json.loads((directory / "code.json").read_text())
    document["code"][1][12] = 5
    write_json(directory / "code.json", document)
    assert document["header"] == PCS_HEADER
    _raises(directory / "code.json", "Stall_Reasons")
