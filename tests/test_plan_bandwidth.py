"""The capture's own bandwidth estimate decides memory-bandwidth before memory-latency (issue 21, blind review 1, 2, 7).

Synthetic hotspot documents (tests/plan_synthetic.py): a load loop whose request bytes per
busy-CU cycle, scaled to the GPU, are above or below the bar; the verdict, the ruled-out
findings' kernel-time cap and the launch-bound exclusions are checked against the formula.
"""

from __future__ import annotations

import pytest
from plan_synthetic import Ins, hotspot_doc

from kerneltrace.analysis.bandwidth import bandwidth_estimate
from kerneltrace.arch.table import arch_peak_hbm_gbps
from kerneltrace.plan.context import PlanContext
from kerneltrace.plan.gains import CONTRADICTS, lever
from kerneltrace.plan.pipeline import run_all
from kerneltrace.plan.verdict import decide
from kerneltrace.thresholds import DEFAULT_VERDICT

WAVES = 16
HITS = 32 * WAVES  # 32 loop iterations per wave
LOAD = Ins("buffer_load_dwordx4 v[4:7], v0, s[8:11], 0 offen", "VMEM-load", "k.py:10",
           stall=30000, latency=30000, hits=HITS)
WAIT = Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:11", stall=50000, latency=50000, hits=HITS)
WORK = Ins("v_add_f32 v1, v2, v3", "VALU", "k.py:12", stall=2000, latency=10000, hits=HITS)
AGENT = {"name": "gfx950", "product_name": "AMD Instinct MI350X", "cu_count": 256,
         "simd_per_cu": 4, "max_engine_clock_mhz": 2200}


def load_loop(resident_cycles: int, *, kernel_trace: dict | None = None) -> dict:
    """A loop of one dwordx4 load, its wait and a VALU op; the traced CU busy `resident_cycles`
    summed over its 4 SIMDs."""
    doc = hotspot_doc([LOAD, WAIT, WORK], waves={"waves": WAVES})
    doc["arch"] = {"name": "gfx950", "source": "test", "certain": True, "candidates": ["gfx950"]}
    doc["metadata"] = {"agent": dict(AGENT), "kernel_trace": kernel_trace}
    doc["waves"] = {"waves": WAVES, "peers": {"resident_cycles": resident_cycles}}
    doc.pop("structure", None)
    return doc


def bytes_requested() -> int:
    return HITS * 16 * 64  # dwordx4 = 16 B per lane, 64 lanes


def resident_for(fraction_of_peak: float) -> int:
    """Busy-SIMD cycles at which the loop requests `fraction_of_peak` of the HBM peak on all CUs."""
    peak = arch_peak_hbm_gbps("gfx950")
    per_cu = fraction_of_peak * peak * 1000 / (256 * 2200)  # B/clk per CU
    return round(bytes_requested() / per_cu * 4)


def test_estimate_is_bytes_per_busy_cu_cycle_times_cus_and_clock():
    resident = 400_000
    estimate = bandwidth_estimate(load_loop(resident))
    per_cu = bytes_requested() / (resident / 4)
    assert estimate.per_cu_bytes_per_clk == pytest.approx(per_cu, abs=0.01)
    assert estimate.device_gbps == pytest.approx(per_cu * 256 * 2200 / 1000, rel=1e-3)
    assert estimate.fraction_of_peak == pytest.approx(estimate.device_gbps / 8000.0, abs=1e-4)
    assert estimate.cus_assumed and "assumed" in estimate.basis
    assert estimate.bytes_per_wave == pytest.approx(bytes_requested() / WAVES, abs=0.1)


def test_grid_sets_the_busy_cus_and_no_wave_files_no_estimate():
    trace = {"grid_size": [64 * 256, 1, 1], "workgroup_size": [256, 1, 1], "duration_ns": None}
    doc = load_loop(400_000, kernel_trace=trace)
    from kerneltrace.analysis.structure import structure_of

    doc["structure"] = structure_of(doc)
    estimate = bandwidth_estimate(doc)
    assert estimate.busy_cus == 64 and not estimate.cus_assumed
    assert estimate.device_gbps == pytest.approx(
        bandwidth_estimate(load_loop(400_000)).device_gbps * 64 / 256, rel=1e-3)
    # a document written before `structure` existed: the plan's recomputed one gives the grid
    plain = load_loop(400_000, kernel_trace=trace)
    assert bandwidth_estimate(plain).cus_assumed
    assert bandwidth_estimate(plain, PlanContext(plain).structure).busy_cus == 64
    del doc["waves"]
    assert bandwidth_estimate(doc) is None


def test_past_the_bar_the_verdict_is_memory_bandwidth_below_it_memory_latency():
    bar = DEFAULT_VERDICT.capture_request_of_peak
    above = decide(load_loop(resident_for(bar * 1.1)))
    below = decide(load_loop(resident_for(bar * 0.9)))
    assert above.kind == "memory-bandwidth" and below.kind == "memory-latency"
    assert "assumed: every CU as busy" in above.sentence and above.confidence == "low"
    assert above.time_ceiling == DEFAULT_VERDICT.bandwidth_headroom
    assert any("prefetching" in text for text in above.does_not_help)
    assert any("fewer, larger requests" in text for text in above.helps)


def test_pmc_overrides_the_capture_estimate():
    doc = load_loop(resident_for(DEFAULT_VERDICT.capture_request_of_peak * 1.5))
    measured = decide(doc, {"fraction_of_peak": 0.2})
    assert measured.kind != "memory-bandwidth"


def test_bandwidth_bound_latency_findings_are_ruled_out_and_capped():
    doc = load_loop(resident_for(DEFAULT_VERDICT.capture_request_of_peak * 1.2))
    ctx = PlanContext(doc)
    findings = [f for f in run_all(ctx) if f.ranked]
    assert ctx.verdict.kind == "memory-bandwidth"
    assert findings[0].rule == "BW-requests-at-hbm-peak" and findings[0].priority == "HIGH"
    latency = [f for f in findings if lever(f, ctx) in CONTRADICTS["memory-bandwidth"]]
    assert latency, "the load and wait lines are memory-latency findings"
    for finding in latency:
        assert finding.contradicts_verdict and finding.priority == "LOW"
        assert finding.estimated_gain.high <= DEFAULT_VERDICT.bandwidth_headroom + 1e-9
        assert finding.estimated_gain.low == 0.0


def test_the_same_loop_below_the_bar_keeps_its_latency_findings():
    doc = load_loop(resident_for(DEFAULT_VERDICT.capture_request_of_peak * 0.5))
    ctx = PlanContext(doc)
    findings = [f for f in run_all(ctx) if f.ranked]
    assert ctx.verdict.kind == "memory-latency"
    assert not any(f.contradicts_verdict for f in findings)
    assert max(f.estimated_gain.high for f in findings) > DEFAULT_VERDICT.bandwidth_headroom


def test_a_kernel_trace_rate_decides_instead_of_the_extrapolation():
    # the grid's request bytes over the kernel's measured time are the dispatch's rate: a short
    # single-round burst on the traced CUs is not extrapolated to the GPU
    trace = {"grid_size": [1024 * 256, 1, 1], "workgroup_size": [256, 1, 1],
             "duration_ns": 1_000_000}
    doc = load_loop(resident_for(DEFAULT_VERDICT.capture_request_of_peak * 2), kernel_trace=trace)
    from kerneltrace.analysis.structure import structure_of

    doc["structure"] = structure_of(doc)
    assert bandwidth_estimate(doc).fraction_of_peak > DEFAULT_VERDICT.capture_request_of_peak
    assert decide(doc).kind == "memory-latency"


def test_launch_bound_keeps_the_in_wave_fixes_after_the_grid():
    # each traced wave has its CU to itself: its waits are exposed, so they come second (the
    # verdict names no lever it rules out, and marks none)
    assert "launch-bound" not in CONTRADICTS
    trace = {"grid_size": [16 * 256, 1, 1], "workgroup_size": [256, 1, 1], "duration_ns": 20000}
    ctx = PlanContext(load_loop(400_000, kernel_trace=trace))
    findings = [f for f in run_all(ctx) if f.ranked]
    assert ctx.verdict.kind == "launch-bound" and not ctx.verdict.does_not_help
    assert findings[0].rule.startswith("LAUNCH-")
    assert lever(findings[1], ctx) == "memory-latency" and not findings[1].contradicts_verdict


@pytest.mark.parametrize("doc", [
    load_loop(resident_for(DEFAULT_VERDICT.capture_request_of_peak * 1.2)),
    load_loop(400_000, kernel_trace={"grid_size": [16 * 256, 1, 1],
                                     "workgroup_size": [256, 1, 1], "duration_ns": 20000}),
], ids=["memory-bandwidth", "launch-bound"])
def test_what_the_verdict_says_does_not_help_is_what_it_marks(doc):
    """`does_not_help` prose and CONTRADICTS are one mechanism: a verdict that names what does
    not help marks the findings pulling those levers, and only those."""
    ctx = PlanContext(doc)
    findings = [f for f in run_all(ctx) if f.ranked]
    assert bool(ctx.verdict.does_not_help) == bool(CONTRADICTS.get(ctx.verdict.kind))
    for finding in findings:
        if finding.verdict_aligned:
            continue
        ruled_out = CONTRADICTS.get(ctx.verdict.kind, frozenset())
        assert finding.contradicts_verdict == (lever(finding, ctx) in ruled_out)


def test_arch_peak_is_the_one_its_products_share():
    from kerneltrace.arch.table import PRODUCTS

    gfx950 = {p.peak_hbm_gbps for p in PRODUCTS.values() if p.arch == "gfx950"}
    assert len(gfx950) == 1 and arch_peak_hbm_gbps("gfx950") == gfx950.pop()
    gfx90a = {p.peak_hbm_gbps for p in PRODUCTS.values() if p.arch == "gfx90a"}
    assert len(gfx90a) > 1 and arch_peak_hbm_gbps("gfx90a") is None  # products differ
    assert arch_peak_hbm_gbps("gfx1100") is None  # no product listed


def test_the_plan_names_the_peak_it_holds_the_requests_against_or_says_there_is_none():
    """MI300X (5.3 TB/s) and MI325X (6 TB/s) are both gfx942: the launch section names the peak
    and the product it belongs to; a product the table lacks gets the rate and no fraction; a
    dispatch without a kernel-trace row still gets a Launch section saying the launch is unknown."""
    from kerneltrace.analysis.structure import structure_of
    from kerneltrace.arch.table import get_product
    from kerneltrace.plan.summary import build_summary
    from kerneltrace.render.plan import render_html, render_markdown

    assert get_product("AMD Instinct MI325X").peak_hbm_gbps == 6000.0
    assert arch_peak_hbm_gbps("gfx942") is None  # MI300X and MI325X differ: only the product tells
    trace = {"grid_size": [1024 * 256, 1, 1], "workgroup_size": [256, 1, 1], "duration_ns": 1_000_000}

    def plan(product: str | None, kernel_trace: dict | None) -> tuple[dict, str, str]:
        doc = load_loop(400_000, kernel_trace=kernel_trace)
        if product is None:
            doc["metadata"]["agent"] = None
        else:
            doc["metadata"]["agent"]["product_name"] = product
        doc["structure"] = structure_of(doc)
        summary = build_summary([doc], [], run="r")
        return summary, render_markdown(summary, [doc]), render_html(summary, [doc], [], {})

    summary, markdown, html = plan("AMD Instinct MI325X", trace)
    traffic = summary["kernels"][0]["dispatches"][0]["traffic"]
    assert traffic["peak_gbps"] == 6000.0 and traffic["peak_product"] == "AMD Instinct MI325X"
    assert "of the 6.0 TB/s HBM peak of the AMD Instinct MI325X" in markdown
    assert "of the 6.0 TB/s HBM peak of the AMD Instinct MI325X" in html
    summary, markdown, html = plan("AMD Instinct MI999", trace)
    assert "no HBM peak to compare with: the GPU product (AMD Instinct MI999)" in markdown
    assert "no HBM peak to compare with" in html and "HBM peak of the" not in markdown
    summary, markdown, html = plan("AMD Instinct MI350X", None)
    assert "### Launch\n\n- Not known: no kernel-trace row for this dispatch" in markdown
    assert "<h3>Launch</h3>\n<ul><li>Not known: no kernel-trace row" in html


def _grid_rate_doc(fraction_of_peak: float, *, work_stall: int = 2000, extra: list | None = None) -> dict:
    """The load loop with a kernel trace whose duration puts the grid's request bytes at
    `fraction_of_peak` of the HBM peak (1,024 workgroups of 4 waves)."""
    from kerneltrace.analysis.structure import structure_of

    work = Ins(WORK.asm, WORK.type, WORK.source, stall=work_stall, latency=work_stall + 8000, hits=HITS)
    entry = Ins("s_mov_b32 s12, 0", "SALU", "k.py:9", stall=0, latency=4, hits=WAVES)  # once per wave
    doc = hotspot_doc([entry, LOAD, WAIT, work, *(extra or [])], waves={"waves": WAVES})
    doc["arch"] = {"name": "gfx950", "source": "test", "certain": True, "candidates": ["gfx950"]}
    grid_waves = 1024 * 4
    dispatch_bytes = bytes_requested() / WAVES * grid_waves
    duration = round(dispatch_bytes / (fraction_of_peak * arch_peak_hbm_gbps("gfx950")))
    doc["metadata"] = {"agent": dict(AGENT), "kernel_trace": {
        "grid_size": [1024 * 256, 1, 1], "workgroup_size": [256, 1, 1], "duration_ns": duration}}
    doc["structure"] = structure_of(doc)
    return doc


def test_grid_requests_past_the_bar_with_memory_holding_most_stall_are_bandwidth_bound():
    above = _grid_rate_doc(DEFAULT_VERDICT.request_of_peak * 1.2)
    assert above["structure"]["traffic"]["fraction_of_peak"] > DEFAULT_VERDICT.request_of_peak
    assert decide(above).kind == "memory-bandwidth"
    below = _grid_rate_doc(DEFAULT_VERDICT.request_of_peak * 0.8)
    assert decide(below).kind != "memory-bandwidth"


def test_heavy_requests_without_memory_holding_most_stall_are_not_bandwidth_bound():
    # 80 000 of 172 000 stall cycles wait on memory: enough for a memory verdict, not for the
    # bandwidth one (below it, other work bounds the kernel even when its requests are heavy)
    doc = _grid_rate_doc(DEFAULT_VERDICT.request_of_peak * 1.5, work_stall=92_000)
    memory = (30000 + 50000) / (30000 + 50000 + 92_000)
    assert DEFAULT_VERDICT.memory_share <= memory < DEFAULT_VERDICT.request_memory_share
    assert decide(doc).kind != "memory-bandwidth"


def test_narrow_loads_keep_their_gain_under_the_bandwidth_verdict():
    # fewer, wider requests is one of the bandwidth verdict's own helps: not ruled out
    narrow = Ins("buffer_load_ushort v9, v0, s[8:11], 0 offen", "VMEM-load", "k.py:13",
                 stall=40000, latency=40000, hits=HITS)
    ctx = PlanContext(_grid_rate_doc(DEFAULT_VERDICT.request_of_peak * 1.3, extra=[narrow]))
    assert ctx.verdict.kind == "memory-bandwidth"
    found = [f for f in run_all(ctx) if f.rule == "MEM-narrow-loads"]
    assert found and not found[0].contradicts_verdict
    assert lever(found[0], ctx) not in CONTRADICTS["memory-bandwidth"]
