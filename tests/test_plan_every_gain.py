"""One currency (issue 21.1): every ranked finding carries a kernel-time `estimated_gain`
{low, high, basis}, on every real shared capture and on the synthetic ones (with and without wave
files). A rule that ranks a finding without one fails here."""

from __future__ import annotations

import pytest
from conftest import SHARED
from expert_corpus import load_annotations

from kerneltrace.document.hotspot_report import analyze_dispatch
from kerneltrace.model.dispatchdir import describe
from kerneltrace.plan.summary import build_summary
from kerneltrace.synth.barriers import synchronised
from kerneltrace.synth.simulate import LABEL_ROWS, simulate
from kerneltrace.synth.spec import demo_gemm, demo_vec_add
from kerneltrace.synth.spill import demo_spill
from kerneltrace.synth.writers import write_dispatch_dir


def _problems(plan: dict) -> list[str]:
    problems = []
    for finding in plan["findings"]:
        if not finding["ranked"]:
            continue
        gain = finding.get("estimated_gain")
        if not gain:
            problems.append(f"{finding['id']}: no estimated_gain")
            continue
        if gain.get("unit") != "kernel_time":
            problems.append(f"{finding['id']}: gain in {gain.get('unit')}")
        if not (0 <= gain["low"] <= gain["high"] <= 1) or not gain.get("basis"):
            problems.append(f"{finding['id']}: gain {gain}")
    return problems


def _plan(directory) -> dict:
    doc = analyze_dispatch(directory, waves=bool(describe(directory).wave_files))
    return build_summary([doc], [])["kernels"][0]["dispatches"][0]


def _straggler_gemm():
    spec = demo_gemm("gfx942")
    rows = {i + LABEL_ROWS: ins.asm for i, ins in enumerate(spec.instructions)}
    barrier = {r for r, asm in rows.items() if asm.startswith("s_barrier")}
    wait = next(r for r, asm in rows.items() if asm == "s_waitcnt vmcnt(0)")
    return spec, synchronised(simulate(spec), barrier, {2: (wait, 2500)})


SYNTHETIC = {
    "gemm": lambda: (demo_gemm("gfx942"), None),
    "gemm-gfx950": lambda: (demo_gemm("gfx950"), None),
    "vec_add": lambda: (demo_vec_add(), None),
    "spill": lambda: (demo_spill(), None),
    "straggler-gemm": _straggler_gemm,
}


@pytest.mark.parametrize("with_waves", [True, False], ids=["waves", "code.json-only"])
@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_every_ranked_synthetic_finding_has_a_kernel_time_gain(tmp_path, name, with_waves):
    spec, waves = SYNTHETIC[name]()
    directory = write_dispatch_dir(tmp_path, spec, waves=waves, with_waves=with_waves)
    plan = _plan(directory)
    assert any(f["ranked"] for f in plan["findings"])
    assert not _problems(plan)


@pytest.mark.shared
@pytest.mark.parametrize("annotation", load_annotations(), ids=lambda a: a.name)
def test_every_ranked_real_finding_has_a_kernel_time_gain(annotation):
    directory = SHARED / annotation.dir
    if not directory.is_dir():
        pytest.skip(f"{annotation.dir} not present")
    assert not _problems(_plan(directory))
