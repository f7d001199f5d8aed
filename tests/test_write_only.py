"""FILL-write-only-kernel (plan/rules/write_only.py) on synthetic captures (SYNTHETIC numbers):
a kernel that stores and loads nothing is a fill whose first fix is above it."""

from __future__ import annotations

import plan_verdict_specs as specs

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.rules.write_only import RULE_WRITE_ONLY, WriteOnlyThresholds
from kerneltrace.plan.summary import build_summary
from kerneltrace.synth import SynthInstruction as I
from kerneltrace.synth import write_dispatch_dir

STORE = I("global_store_dwordx4 v1, v[2:5], s[8:9]", 18, latency_cycles=900)
FILL = (I("v_lshlrev_b32_e32 v1, 4, v0", 13), I("v_mov_b32_e32 v2, s12", 14),
        I("v_mov_b32_e32 v3, s12", 15), I("v_mov_b32_e32 v4, s12", 16),
        I("v_mov_b32_e32 v5, s12", 17), STORE)


def _entry(tmp_path, body):
    doc = analyze_dispatch(write_dispatch_dir(tmp_path, specs._spec("fill_kernel", body)),
                           waves=True)
    return doc, build_summary([doc], [])["kernels"][0]["dispatches"][0]


def test_a_fill_is_named_first_and_cites_its_store(tmp_path):
    doc, entry = _entry(tmp_path, FILL)
    first = entry["findings"][0]
    assert first["rule"] == RULE_WRITE_ONLY, [f["rule"] for f in entry["findings"]]
    store = next(i["index"] for i in doc["instructions"] if i["asm"].startswith("global_store"))
    assert [e["instruction_index"] for e in first["evidence"]] == [store]
    low, high = WriteOnlyThresholds().removable
    gain = first["estimated_gain"]
    assert (gain["low"], gain["high"], gain["unit"]) == (low, high, "kernel_time")
    assert "torch.empty" in first["fix"]


def test_a_kernel_that_reads_memory_is_not_a_fill(tmp_path):
    body = (I("global_load_dwordx4 v[2:5], v1, s[10:11]", 12, latency_cycles=600),
            I("s_waitcnt vmcnt(0)", 12), *FILL[:1], STORE)
    _, entry = _entry(tmp_path, body)
    assert RULE_WRITE_ONLY not in [f["rule"] for f in entry["findings"]]


def test_a_write_only_kernel_bound_by_its_arithmetic_is_not_a_fill(tmp_path):
    # an RNG: long dependent VALU chains, then one store; the verdict is a compute bound
    chain = tuple(I(f"v_mad_u64_u32 v[6:7], s[2:3], v{6 + k % 2}, v[6:7]", 20, stall_cycles=40)
                  for k in range(40))
    doc, entry = _entry(tmp_path, (*chain, *FILL))
    assert entry["bottleneck"]["kind"] in ("compute-valu", "issue-dependency"), entry["bottleneck"]
    assert RULE_WRITE_ONLY not in [f["rule"] for f in entry["findings"]]
