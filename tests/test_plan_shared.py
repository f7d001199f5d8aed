"""On every real capture with source mapping: the first HIGH finding is a real user line, and its
evidence matches the hotspot document (instruction text and stall cycles) — with and without the
wave-level analysis (`--waves`, which the pipeline uses)."""

from __future__ import annotations

import pytest
from conftest import all_shared_dispatch_dirs

from kerneltrace.plan.summary import build_summary

MAPPED = [d for d in all_shared_dispatch_dirs() if (d / "snapshots.json").is_file()]


@pytest.mark.shared
@pytest.mark.parametrize("waves", [False, True], ids=["hotspots1", "waves"])
@pytest.mark.parametrize("dispatch_dir", MAPPED, ids=lambda d: d.name)
def test_first_high_finding_points_at_a_real_user_line(captures, dispatch_dir, waves):
    from kerneltrace.document.hotspot_report import analyze_dispatch

    doc = analyze_dispatch(dispatch_dir, waves=waves)
    findings = build_summary([doc], [])["kernels"][0]["dispatches"][0]["findings"]
    high = [f for f in findings if f["priority"] == "HIGH"]
    if not high:  # priority follows the kernel-time gain alone (one currency)
        assert all((f["estimated_gain"] or {}).get("high", 0) < 0.05 or f["once_per_wave"]
                   or f["contradicts_verdict"] or f["location"] for f in findings if f["ranked"])
        return
    first = high[0]
    lines = {line["location"]: line for line in doc["source_lines"]}
    if first["rule"] in ("REGION-hotspot", "GLUE-line-loads"):
        # lines failed, or the loads sit on the decorator line: an instruction range instead
        assert first["location"].startswith("<rows ")
    elif first["location"] is None:
        # a kernel- or loop-wide finding (the verdict's own: PRO, STREAM, LAUNCH; the loop
        # umbrella W2), or the exp2 guard whose rows sit on the glue line: it names no line
        assert first["scope"] in ("kernel", "loop") or (
            first["rule"] == "EXP-denormal-guard"
            and all(e["instruction_index"] is not None for e in first["evidence"]))
    else:
        assert first["location"] in lines and lines[first["location"]]["artifact"] is None
    instructions = {ins["index"]: ins for ins in doc["instructions"]}
    if first["scope"] == "kernel" and not first["evidence"]:
        # launch and occupancy findings cite the grid / the register and LDS limits, no row
        assert first["rule"].startswith(("LAUNCH-", "OCC-"))
        assert first["estimated_gain"]["unit"] == "kernel_time"
        return
    assert first["evidence"]
    for evidence in first["evidence"]:
        ins = instructions[evidence["instruction_index"]]
        assert evidence["asm"] == ins["asm"]
        assert evidence["stall_cycles"] == ins["stall_cycles"]
