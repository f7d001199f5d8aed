"""The pipeline's wave timelines: one per dispatch with wave files, none for the others (the run
still succeeds), linked from the plan, turned off by `timeline: False` (issue 25)."""

from __future__ import annotations

import pytest
from pipeline_helpers import double_env, snakemake

from kerneltrace.synth import write_dispatch_dir
from kerneltrace.synth.spec import demo_gemm, demo_vec_add
from tests.timeline_decode import decode_proto

pytestmark = pytest.mark.e2e


def test_dir_run_mixing_captures_with_and_without_wave_files(tmp_path):
    capture = tmp_path / "capture"
    with_waves = write_dispatch_dir(capture, demo_gemm("gfx942", iterations=4), dispatch_id=7)
    without = write_dispatch_dir(capture, demo_vec_add("gfx942"), dispatch_id=8, with_waves=False)
    env = double_env(tmp_path)
    result = snakemake(tmp_path / "w", env, "--config", f"dir={capture}", "run=mixed")
    assert result.returncode == 0, result.stdout + result.stderr
    reports = tmp_path / "w" / "reports" / "mixed"
    timelines = sorted(p.name for p in (reports / "timeline").iterdir())
    assert timelines == ["a20001_d7.pftrace"], timelines
    decoded = decode_proto(reports / "timeline" / "a20001_d7.pftrace")
    assert decoded.metadata["dispatch_dir"] == with_waves.name
    assert sum(s.name == "wave" for s in decoded.slices) == decoded.metadata["waves"] > 0
    plan = (reports / "plan.md").read_text()
    assert plan.count("| Wave timeline |") == 1
    assert "(timeline/a20001_d7.pftrace)" in plan
    assert 'href="timeline/a20001_d7.pftrace"' in (reports / "plan.html").read_text()
    assert without.name in plan  # the dispatch without wave files is still analysed
    # switched off: no timeline job, no link
    off = snakemake(tmp_path / "off", env, "--config", f"dir={capture}", "run=mixed",
                    "timeline=False")
    assert off.returncode == 0, off.stdout + off.stderr
    assert not (tmp_path / "off" / "reports" / "mixed" / "timeline").exists()
    assert "Wave timeline" not in (tmp_path / "off" / "reports" / "mixed" / "plan.md").read_text()
