"""The review doubts of issue 21 point 4, judged from the raw wave files and code.json.

(a) preshuffle_gemm leads with a 1.33-round launch tail: the wave files show the tail round (one
    or two workgroups alone on the CU after the first round of three), and the launch finding's
    kernel-time range must overlap the tail they measure.
(b) fused_rope_cache: each wave is one latency chain (7 vector loads, no loop): more workgroups
    do not shorten it, so the launch gain divides only its issue cycles (plan/divisible.py).
"""

from __future__ import annotations

import pytest
from conftest import SHARED

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.plan.divisible import divisible_share
from kerneltrace.plan.summary import build_summary

PRESHUFFLE = ("captures/flydsl-kernel-profiling-lib/examples/preshuffle_gemm/att_viewer/big/"
              "ui_output_agent_58177_dispatch_135")


def test_divisible_share_of_a_latency_chain_and_of_a_loop():
    chain = {"instructions": [
        {"index": 0, "asm": "s_load_dwordx2 s[4:5], s[0:1], 0x0", "type": "SMEM", "hits": 4,
         "latency_cycles": 2000, "stall_cycles": 0, "idle_cycles": 0},
        {"index": 1, "asm": "s_waitcnt lgkmcnt(0)", "type": "LDS/SMEM-wait", "hits": 4,
         "latency_cycles": 6000, "stall_cycles": 5984, "idle_cycles": 0},
        {"index": 2, "asm": "global_load_dword v1, v[2:3], off", "type": "VMEM-load", "hits": 4,
         "latency_cycles": 16, "stall_cycles": 0, "idle_cycles": 0},
        {"index": 3, "asm": "s_waitcnt vmcnt(0)", "type": "VMEM-wait", "hits": 4,
         "latency_cycles": 1984, "stall_cycles": 1968, "idle_cycles": 0}]}
    share, why = divisible_share(chain, {"control_flow": {"loops": []}}, 4, 8, 4)
    assert share == round(64 / 10000, 4) and "latency chain" in why
    # a loop the hotspot stage judged iterating (structure.min_iterations in use)
    looping = {"control_flow": {"loops": [{"iterations_per_entry": 16.0, "iterates": True}]}}
    assert divisible_share(chain, looping, 4, 8, 4) == (1.0, "")
    assert divisible_share(chain, {"control_flow": {"loops": []}}, 4, 0, 4) == (1.0, "")


@pytest.mark.shared
def test_preshuffle_tail_round_is_measured_by_the_wave_files():
    directory = SHARED / PRESHUFFLE
    if not directory.is_dir():
        pytest.skip(f"{PRESHUFFLE} not present")
    from kerneltrace.readers.wavefile.reader import iter_wave_files, wave_files

    waves = list(iter_wave_files(wave_files(directory)))
    first_begin = min(w.begin for w in waves)
    span = max(w.end for w in waves) - first_begin
    first_round = [w for w in waves if w.begin - first_begin < 0.05 * span]
    later = [w for w in waves if w.begin - first_begin >= 0.05 * span]
    # 4 traced CUs (one per SE) x 3 resident WGs of 4 waves, then one WG each (two on SE1)
    assert (len(first_round), len(later)) == (4 * 3 * 4, 5 * 4)
    round_time = max(w.end for w in first_round) - first_begin
    doc = analyze_dispatch(directory, waves=True)
    launch = doc["structure"]["launch"]
    # with the work divided evenly the CU would need `rounds` full rounds of three
    measured = 1 - launch["rounds"] * round_time / span
    plan = build_summary([doc], [])["kernels"][0]["dispatches"][0]
    first = next(f for f in plan["findings"] if f["ranked"])
    assert first["rule"] == "LAUNCH-tail"
    gain = first["estimated_gain"]
    assert gain["low"] - 0.05 <= measured <= gain["high"]  # 14 % measured vs 16-33 % estimated
