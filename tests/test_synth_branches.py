"""Synthetic kernels: every SOPP branch immediate lands on an instruction row of code.json."""

from __future__ import annotations

import json

import pytest

from kerneltrace.analysis.loops import branch_target, find_loops, rows_from_code_rows
from kerneltrace.readers.codejson import read_code_json
from kerneltrace.synth import demo_gemm, demo_vec_add, write_dispatch_dir
from kerneltrace.synth.documents import vaddrs
from kerneltrace.synth.spec import SynthInstruction, with_branch_immediates

SPECS = [pytest.param(lambda arch=arch: demo_gemm(arch, iterations=3, shader_engines=1),
                      id=f"gemm-{arch}") for arch in ("gfx90a", "gfx942", "gfx950")]
SPECS.append(pytest.param(demo_vec_add, id="vec_add"))


@pytest.mark.parametrize("make_spec", SPECS)
def test_every_branch_lands_on_an_instruction(make_spec):
    spec = make_spec()
    addresses = vaddrs(spec)
    row_of = {address: index for index, address in enumerate(addresses)}
    branches = 0
    for index, ins in enumerate(spec.instructions):
        target = branch_target(addresses[index], ins.asm)
        if target is None:
            continue
        branches += 1
        assert target in row_of, (index, ins.asm, target)
        if target <= addresses[index]:  # a back edge goes to the loop's first row
            assert spec.loop is not None
            assert (row_of[target], index) == (spec.loop.first, spec.loop.last)
    assert branches >= 1


def test_gemm_branches_target_loop_header_and_skip_the_tail():
    spec = demo_gemm("gfx942", iterations=3, shader_engines=1)
    addresses = vaddrs(spec)
    row_of = {address: index for index, address in enumerate(addresses)}
    targets = {index: row_of[branch_target(addresses[index], ins.asm)]
               for index, ins in enumerate(spec.instructions) if ins.asm.startswith("s_cbranch")}
    forward = [(at, to) for at, to in targets.items() if to > at]
    assert len(forward) == 1
    at, to = forward[0]
    skipped = spec.instructions[at + 1:to]
    assert skipped and not any(ins.executed for ins in skipped)
    assert spec.instructions[to].executed


def test_static_loop_of_written_capture_is_the_spec_loop(tmp_path):
    spec = demo_gemm("gfx942", iterations=3, shader_engines=1)
    dispatch = write_dispatch_dir(tmp_path, spec, "v3")
    table = read_code_json(dispatch / "code.json")
    loops = find_loops(rows_from_code_rows(table.rows))
    label_rows = len(json.loads((dispatch / "code.json").read_text())["code"]) - len(spec.instructions)
    assert [(loop.first_index, loop.last_index) for loop in loops] == [
        (spec.loop.first + label_rows, spec.loop.last + label_rows)]
    assert loops[0].hits_consistent is True


def test_with_branch_immediates_encodes_negative_offsets_unsigned():
    body = [SynthInstruction("s_nop 0"), SynthInstruction("s_load_dword s0, s[0:1], 0x0"),
            SynthInstruction("s_branch")]
    out = with_branch_immediates(body, {2: 0})
    # pc(branch) = 4 + 8 = 12; target 0 = 12 + 4 + 4 × (−4)
    assert out[2].asm == f"s_branch {-4 & 0xFFFF}"
    assert out[:2] == tuple(body[:2])
