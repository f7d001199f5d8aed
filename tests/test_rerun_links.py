"""Re-runs see every input through the pipeline: a symlinked dispatch dir retargeted at another
capture, and an edit that keeps a file's size and mtime (`touch -r`, `cp -p`, rsync)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake
from test_pipeline_rerun import executed, hotspot_jobs

from kerneltrace import synth

pytestmark = pytest.mark.e2e


def _kernels(workdir: Path, run: str) -> list[str]:
    lines = (workdir / "results" / run / "dispatches.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True))["kernel"] for line in lines[1:]]


def test_retargeted_symlink_and_mtime_preserving_edit_rerun(tmp_path):
    store = tmp_path / "store"
    vec = synth.write_dispatch_dir(store / "vec", synth.demo_vec_add(), dispatch_id=3)
    gemm = synth.write_dispatch_dir(store / "gemm", synth.demo_gemm(), dispatch_id=3)
    capture = tmp_path / "capture"
    synth.write_dispatch_dir(capture, synth.demo_vec_add(), dispatch_id=1)
    link = capture / vec.name
    link.symlink_to(vec, target_is_directory=True)
    env, workdir = double_env(tmp_path), tmp_path / "work"
    config = ["--config", f"dir={capture}", "run=links"]

    def run() -> str:
        done = snakemake(workdir, env, *config)
        assert done.returncode == 0, done.stderr[-4000:]
        return done.stderr

    run()
    assert sorted(_kernels(workdir, "links")) == sorted(["vec_add_float(float const*, float const*, float*, int)"] * 2)
    assert executed(run()) == []

    link.unlink()
    link.symlink_to(gemm, target_is_directory=True)  # same name, another kernel
    log = run()
    assert any("gemm" in kernel for kernel in _kernels(workdir, "links")), _kernels(workdir, "links")
    assert hotspot_jobs(log)

    # an edit that keeps size and mtime (what `touch -r` / `cp -p` of an equal-size file leave)
    code = capture / synth.dispatch_dir_name(20001, 1) / "code.json"
    info = code.stat()
    data = bytearray(code.read_bytes())
    at = data.index(b"/synthetic/", len(data) // 2) + 2  # a letter of a source path: still valid JSON
    data[at] = ord("Y") if data[at] != ord("Y") else ord("y")
    code.write_bytes(bytes(data))
    os.utime(code, ns=(info.st_atime_ns, info.st_mtime_ns))
    log = run()
    assert hotspot_jobs(log), log[-3000:]
    assert executed(run()) == []
