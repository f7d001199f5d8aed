"""L2/HBM formulas on hand-computed fixtures (docs/pmc-counters.md §3), run matching and verdicts."""

from __future__ import annotations

import pytest

from kerneltrace.analysis.l2.document import analyze
from kerneltrace.errors import InputError
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun

KERNEL = "decode_kernel"


def run(arch, *dispatches, product=None, kernel=KERNEL, first_id=1):
    """A run whose dispatches have the given counters and (start, end) = (0, duration)."""
    items = []
    for offset, (counters, duration) in enumerate(dispatches):
        items.append(CounterDispatch(first_id + offset, kernel, dict(counters), 0 if duration else None,
                                     duration if duration else None))
    return CounterRun("mem", "counter_csv", items, arch=arch, arch_source="test", product=product)


def one(doc):
    assert len(doc["dispatches"]) == 1
    return doc["dispatches"][0]


def test_gfx90a_read_bytes_and_fraction():
    counters = {"TCC_EA_RDREQ": 100, "TCC_EA_RDREQ_32B": 20}
    d = one(analyze([run("gfx90a", (counters, 1000))]))
    assert d["fabric_read_bytes"] == 32 * 20 + 64 * 80  # 5760
    assert d["read_32b_fraction"] == pytest.approx(0.2)
    assert d["read_64b_fraction"] == pytest.approx(0.8)
    assert d["read_128b_fraction"] is None
    assert d["achieved_gbps"] == pytest.approx(5.76)


def test_gfx942_bubble_form_and_clamp():
    d = one(analyze([run("gfx942", ({"TCC_EA0_RDREQ": 100, "TCC_EA0_RDREQ_32B": 10, "TCC_BUBBLE": 50}, 1000))]))
    assert d["fabric_read_bytes"] == 128 * 50 + 64 * 40 + 32 * 10  # 9280
    assert d["read_128b_fraction"] == pytest.approx(0.5)
    assert d["read_32b_byte_fraction"] == pytest.approx(320 / 9280)
    assert d["achieved_gbps"] == pytest.approx(9.28)
    # 64-byte term negative (BUBBLE + 32B > RDREQ): clamped to 0, not subtracted
    clamped = one(analyze([run("gfx942", ({"TCC_EA0_RDREQ": 50, "TCC_EA0_RDREQ_32B": 20, "TCC_BUBBLE": 40}, 0))]))
    assert clamped["fabric_read_bytes"] == 128 * 40 + 32 * 20
    assert clamped["read_64b_fraction"] == 0


def test_gfx950_both_forms_and_disagreement_flag():
    explicit = {"TCC_EA0_RDREQ_32B": 10, "TCC_EA0_RDREQ_64B": 30, "TCC_EA0_RDREQ_128B": 60}
    agree = one(analyze([run("gfx950", ({**explicit, "TCC_EA0_RDREQ": 100, "TCC_BUBBLE": 60}, 0))]))
    assert agree["fabric_read_bytes"] == 320 + 1920 + 7680
    assert agree["fabric_read_bytes_alt"] == agree["fabric_read_bytes"]
    doc = analyze([run("gfx950", ({**explicit, "TCC_EA0_RDREQ": 100, "TCC_BUBBLE": 40}, 0))])
    d = one(doc)
    assert d["fabric_read_bytes_alt"] == 128 * 40 + 64 * 50 + 32 * 10
    assert any("disagree" in w for w in doc["warnings"])
    only_bubble = one(analyze([run("gfx950", ({"TCC_EA0_RDREQ": 100, "TCC_EA0_RDREQ_32B": 10, "TCC_BUBBLE": 60}, 0))]))
    assert only_bubble["fabric_read_bytes"] == 9920


def test_hit_rate_dram_share_and_writes():
    counters = {"TCC_HIT": 30, "TCC_MISS": 70, "TCC_EA0_RDREQ": 100, "TCC_EA0_RDREQ_DRAM": 80,
                "TCC_EA0_WRREQ": 100, "TCC_EA0_WRREQ_64B": 60}
    d = one(analyze([run("gfx942", (counters, 0))]))
    assert d["l2_hit_rate"] == pytest.approx(0.3)
    assert d["dram_read_fraction"] == pytest.approx(0.8)
    assert d["remote_read_requests"] == 20
    assert d["write_bytes"] == 64 * 60 + 32 * 40
    zero = one(analyze([run("gfx942", ({"TCC_HIT": 0, "TCC_MISS": 0}, 0))]))
    assert zero["l2_hit_rate"] is None  # zero denominator: null, never a division


def test_missing_counter_is_unavailable_not_zero():
    doc = analyze([run("gfx942", ({"TCC_HIT": 5, "TCC_MISS": 95}, 1000))])
    d = one(doc)
    assert d["fabric_read_bytes"] is None and d["read_32b_fraction"] is None and d["write_bytes"] is None
    unavailable = {u["metric"]: u["collect"] for u in doc["unavailable"]}
    assert set(unavailable["read_mix"]) == {"TCC_EA0_RDREQ_sum", "TCC_EA0_RDREQ_32B_sum", "TCC_BUBBLE_sum"}
    assert set(unavailable["write_bytes"]) == {"TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum"}
    assert "l2_hit_rate" not in unavailable
    gfx90a = analyze([run("gfx90a", ({"TCC_HIT": 5, "TCC_MISS": 95}, 0))])
    assert {"TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum"} == set(
        next(u for u in gfx90a["unavailable"] if u["metric"] == "read_mix")["collect"])


def test_two_runs_with_different_dispatch_ids_give_overfetch_one():
    # Run A (L2 job) numbered its dispatches 10, 11; run B (read job) 12, 13. Each dispatch reads
    # exactly the ideal 6400 bytes (50 x 128 B): over-fetch must be 1.0, not 0.5.
    l2_run = run("gfx942", ({"TCC_HIT": 1, "TCC_MISS": 99}, 500), ({"TCC_HIT": 2, "TCC_MISS": 98}, 500), first_id=10)
    reads = {"TCC_EA0_RDREQ": 50, "TCC_EA0_RDREQ_32B": 0, "TCC_BUBBLE": 50}
    read_run = run("gfx942", (reads, 1000), (reads, 1000), first_id=12)
    doc = analyze([l2_run, read_run], ideal_gb=6400 / 1e9)
    assert [d["overfetch"] for d in doc["dispatches"]] == [pytest.approx(1.0)] * 2
    assert doc["aggregate"]["overfetch"] == pytest.approx(1.0)
    assert doc["dispatches"][0]["dispatch_ids"] == [10, 12]
    assert doc["aggregate"]["l2_hit_rate"] == pytest.approx(0.015)
    # bandwidth uses the read run's duration (1000 ns), not the L2 run's
    assert doc["dispatches"][0]["achieved_gbps"] == pytest.approx(6.4)


def test_runs_with_different_dispatch_counts_are_refused():
    a = run("gfx942", ({"TCC_HIT": 1, "TCC_MISS": 1}, 0), ({"TCC_HIT": 1, "TCC_MISS": 1}, 0))
    b = run("gfx942", ({"TCC_EA0_RDREQ": 1}, 0))
    with pytest.raises(InputError, match="cannot be matched"):
        analyze([a, b])


def test_ratio_of_sums_and_median():
    reads = lambda n: {"TCC_EA_RDREQ": n, "TCC_EA_RDREQ_32B": 0}  # noqa: E731  64 B each
    doc = analyze([run("gfx90a", (reads(1000 / 64 * 1), 100), (reads(3000 / 64), 500), (reads(2000 / 64), 250))])
    per = [d["achieved_gbps"] for d in doc["dispatches"]]
    assert per == [pytest.approx(10.0), pytest.approx(6.0), pytest.approx(8.0)]
    assert doc["aggregate"]["achieved_gbps"] == pytest.approx(8.0)  # median
    assert doc["ratio_of_sums"]["achieved_gbps"] == pytest.approx(6000 / 850)
    assert doc["spread"]["achieved_gbps"]["min"] == pytest.approx(6.0)
    assert doc["spread"]["achieved_gbps"]["max"] == pytest.approx(10.0)


def test_peak_sources():
    counters = {"TCC_EA0_RDREQ": 1000, "TCC_EA0_RDREQ_32B": 0, "TCC_BUBBLE": 1000}  # 128000 B
    mi300x = analyze([run("gfx942", (counters, 48), product="AMD Instinct MI300X")])
    assert mi300x["peak"]["gbps"] == 5300.0
    assert one(mi300x)["fraction_of_peak"] == pytest.approx(128000 / 48 / 5300)
    override = analyze([run("gfx942", (counters, 48), product="AMD Instinct MI300X")], peak_gbps=4000)
    assert override["peak"] == {"gbps": 4000, "source": "--peak-gbps", "reason": None}
    unknown = analyze([run("gfx950", (counters, 48), product="AMD Radeon Graphics")])
    assert unknown["peak"]["gbps"] is None and "AMD Radeon Graphics" in unknown["peak"]["reason"]
    assert one(unknown)["fraction_of_peak"] is None


def test_practical_limit_verdict_for_a_clean_streaming_kernel():
    # 1.5 % hit rate, no 32-byte requests, over-fetch 1.0, 55 % of a 5300 GB/s peak
    reads = {"TCC_HIT": 15, "TCC_MISS": 985, "TCC_EA0_RDREQ": 1000, "TCC_EA0_RDREQ_32B": 0, "TCC_BUBBLE": 1000}
    duration = 128000 / (0.55 * 5300)
    doc = analyze([run("gfx942", (reads, duration))], ideal_gb=128000 / 1e9, peak_gbps=5300)
    text = " ".join(doc["verdicts"])
    assert "practical limit" in text
    assert "streaming" in text
    scattered = {"TCC_HIT": 15, "TCC_MISS": 985, "TCC_EA0_RDREQ": 1000, "TCC_EA0_RDREQ_32B": 600, "TCC_BUBBLE": 100}
    doc2 = analyze([run("gfx942", (scattered, 100))], peak_gbps=5300)
    joined = " ".join(doc2["verdicts"])
    assert "practical limit" not in joined and "scattered" in joined and "Heuristic" in joined


def test_kernel_selection():
    a = run("gfx942", ({"TCC_HIT": 1, "TCC_MISS": 1}, 0), kernel="attn_fwd")
    b = run("gfx942", ({"TCC_HIT": 1, "TCC_MISS": 1}, 0), kernel="attn_fwd_v2")
    with pytest.raises(InputError, match="2 kernels"):
        analyze([a, b])
    assert analyze([a, b], kernel="attn_fwd")["kernel"] == "attn_fwd"  # exact name wins
    assert analyze([a, b], kernel="v2")["kernel"] == "attn_fwd_v2"
    with pytest.raises(InputError, match="no kernel name contains"):
        analyze([a, b], kernel="gemm")


def test_arch_inferred_from_counter_names():
    doc = analyze([CounterRun("x", "counter_csv", [CounterDispatch(1, KERNEL, {"TCC_EA_RDREQ": 10, "TCC_EA_RDREQ_32B": 0})])])
    assert doc["arch"]["formula_family"] == "gfx90a"
    assert one(doc)["fabric_read_bytes"] == 640
