"""Incremental re-runs: each kind of change to the captures re-runs exactly the affected jobs.

One pipeline run per mode (dir=, batch with a regression gate, cmd= on cached captures), then a
sequence of changes, each followed by a re-run whose executed jobs are read from Snakemake's log.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from pipeline_helpers import double_env, snakemake

from kerneltrace import synth

pytestmark = pytest.mark.e2e

WAIT_INDEX = 10  # demo_vec_add: `s_waitcnt vmcnt(0)`
JOB_HEADER = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")


def vec_add(extra_stall: int = 0) -> synth.KernelSpec:
    spec = synth.demo_vec_add()
    if extra_stall:
        ins = list(spec.instructions)
        ins[WAIT_INDEX] = dataclasses.replace(ins[WAIT_INDEX],
                                              stall_cycles=ins[WAIT_INDEX].stall_cycles + extra_stall)
        spec = dataclasses.replace(spec, instructions=tuple(ins))
    return spec


def executed(stderr: str) -> list[tuple[str, str]]:
    """(rule, dispatch wildcard or "") of every job the run executed, from Snakemake's log."""
    jobs: list[tuple[str, str]] = []
    rule = None
    for line in stderr.splitlines():
        header = JOB_HEADER.match(line)
        if header:
            rule = header.group(1)
            jobs.append((rule, ""))
        elif rule and line.startswith("    wildcards:"):
            found = re.search(r"dispatch=([\w-]+)", line)
            jobs[-1] = (rule, found.group(1) if found else "")
        elif not line.startswith("    "):
            rule = None
    return jobs


def hotspot_jobs(stderr: str) -> set[str]:
    return {dispatch for rule, dispatch in executed(stderr) if rule == "hotspots"}


def rules(stderr: str) -> set[str]:
    return {rule for rule, _ in executed(stderr)}


def ids(workdir: Path, run: str) -> dict[str, str]:
    """{dispatch dir name: id} from the run's dispatch list."""
    lines = (workdir / "results" / run / "dispatches.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]
    return {Path(row["dispatch_dir"]).name: row["id"] for row in rows}


def older(path: Path, seconds: int = 3600) -> None:
    """Give a file an mtime in the past (a copy made with cp -p / rsync -a)."""
    stamp = path.stat().st_mtime - seconds
    os.utime(path, (stamp, stamp))


def summary_dirs(workdir: Path, run: str) -> set[str]:
    summary = json.loads((workdir / "reports" / run / "summary.json").read_text())
    return {Path(d["dispatch_dir"]).name for k in summary["kernels"] for d in k["dispatches"]}


def run_ok(workdir: Path, env: dict[str, str], *config: str) -> str:
    done = snakemake(workdir, env, "--config", *config)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stderr


def check_change_sequence(workdir: Path, env: dict[str, str], config: list[str], run: str,
                          capture: Path) -> None:
    """The shared sequence: unchanged, re-captured file, older copy, CSV, source copy, new, deleted."""
    first = ids(workdir, run)
    gemm_name = next(name for name in first if name.endswith("_dispatch_1"))
    gemm = capture / gemm_name

    # unchanged tree: nothing runs
    log = run_ok(workdir, env, *config)
    assert "Nothing to be done" in log and executed(log) == []

    # re-captured code.json (new content, new mtime): that dispatch and the plan only
    code = gemm / "code.json"
    code.write_text(code.read_text().replace("[", "[ ", 1))
    log = run_ok(workdir, env, *config)
    assert hotspot_jobs(log) == {first[gemm_name]} and "plan" in rules(log)

    # a wave file replaced by an OLDER copy (mtime trigger alone would miss it): same dispatch only
    wave = sorted(gemm.glob("se*_sm*_sl*_wv*.json"))[0]
    wave.write_text(wave.read_text() + " ")
    older(wave)
    log = run_ok(workdir, env, *config)
    assert hotspot_jobs(log) == {first[gemm_name]}
    assert "dispatches" not in rules(log)  # the dispatch list did not change

    # a source copy changed: that dispatch only
    source = next(p for p in gemm.rglob("*.py"))
    source.write_text(source.read_text() + "\n# edited\n")
    log = run_ok(workdir, env, *config)
    assert hotspot_jobs(log) == {first[gemm_name]}

    # the kernel-trace CSV found for the dispatch dirs changed: every dir using it
    csv = next(capture.glob("*kernel_trace.csv"))
    csv.write_text(csv.read_text() + "\n")
    log = run_ok(workdir, env, *config)
    assert hotspot_jobs(log) == set(first.values())

    # a new dispatch dir: its job only, nobody renamed
    new = capture / gemm_name.replace("_dispatch_1", "_dispatch_77")
    shutil.copytree(gemm, new)
    log = run_ok(workdir, env, *config)
    now = ids(workdir, run)
    assert hotspot_jobs(log) == {now[new.name]} and all(now[n] == i for n, i in first.items())
    assert new.name in summary_dirs(workdir, run)

    # a deleted dispatch dir: no analysis, the plan forgets it
    shutil.rmtree(new)
    log = run_ok(workdir, env, *config)
    assert hotspot_jobs(log) == set() and "plan" in rules(log)
    assert new.name not in summary_dirs(workdir, run)

    # and then nothing again
    log = run_ok(workdir, env, *config)
    assert executed(log) == []


def test_dir_mode_reruns_exactly_the_changed_dispatches(tmp_path):
    capture = tmp_path / "caps"
    synth.write_att_run(capture, [synth.demo_gemm(), vec_add()], calls=1)
    env = double_env(tmp_path)
    config = [f"dir={capture}", "run=r"]
    run_ok(tmp_path / "w", env, *config)
    check_change_sequence(tmp_path / "w", env, config, "r", capture)


def test_batch_mode_gate_sees_the_recaptured_numbers(tmp_path):
    """Batch (runs:) with a baseline: re-capturing a slower kernel re-runs its job and the gate fails."""
    caps = tmp_path / "caps"
    other = tmp_path / "other"
    synth.write_att_run(caps, [vec_add()], calls=1)
    synth.write_att_run(other, [synth.demo_gemm()], calls=1)
    env = double_env(tmp_path)
    batch = tmp_path / "batch.yaml"
    batch.write_text(f"runs:\n  fast:\n    dir: {caps}\n  other:\n    dir: {other}\n")
    base = tmp_path / "base"
    done = snakemake(base, env, "--configfile", str(batch))
    assert done.returncode == 0, done.stderr[-4000:]
    shutil.copytree(base / "reports", tmp_path / "baseline")
    work = tmp_path / "w"
    args = ["--configfile", str(batch), "--config", f"baseline={tmp_path / 'baseline'}"]
    done = snakemake(work, env, *args)
    assert done.returncode == 0, done.stderr[-4000:]
    again = snakemake(work, env, *args)
    assert again.returncode == 0 and executed(again.stderr) == []

    # re-capture the vec_add kernel of run "fast" with 3000 more stall cycles per wave
    shutil.rmtree(caps)
    synth.write_att_run(caps, [vec_add(extra_stall=3000)], calls=1)
    gated = snakemake(work, env, *args)
    assert gated.returncode != 0  # the gate saw the new numbers
    ran = executed(gated.stderr)
    assert {d for r, d in ran if r == "hotspots"} == set(ids(work, "fast").values())
    assert ("regression_report", "") in ran and "regression_gate" in rules(gated.stderr)
    report = json.loads((work / "reports" / "fast" / "regression.json").read_text())
    assert report["verdict"] == "regressed"
    # run "other" was not touched: no job of it ran
    assert not any("other" in line for line in gated.stderr.splitlines()
                   if line.startswith("    wildcards:"))
    assert json.loads((work / "reports" / "other" / "regression.json").read_text())["verdict"] != "regressed"


def test_cmd_mode_cached_captures_rerun_exactly_the_changed_dispatches(tmp_path):
    """cmd= on the rocprofv3 test double; then the cached raw captures are changed by hand."""
    env = double_env(tmp_path)
    work = tmp_path / "w"
    config = ["cmd=true", "run=c"]
    run_ok(work, env, *config)
    (capture,) = [p for p in (work / "results" / "c" / "captures").iterdir() if p.is_dir()]
    (gemm,) = [p for p in capture.rglob("ui_output_agent_*_dispatch_*") if p.is_dir()][:1]
    assert ids(work, "c")  # cmd ids: k000_000, ...
    log = run_ok(work, env, *config)
    assert executed(log) == []
    # re-captured code.json: that dispatch only, no capture re-run
    code = gemm / "code.json"
    code.write_text(code.read_text().replace("[", "[ ", 1))
    log = run_ok(work, env, *config)
    assert hotspot_jobs(log) == {ids(work, "c")[gemm.name]}
    assert not {"att_capture", "discover_kernels"} & rules(log)
    # a dispatch dir added to the cached capture: decode redoes the list, only the new dir runs
    before = ids(work, "c")
    new = gemm.with_name(re.sub(r"dispatch_\d+", "dispatch_99", gemm.name))
    shutil.copytree(gemm, new)
    log = run_ok(work, env, *config)
    after = ids(work, "c")
    assert "decode" in rules(log) and not {"att_capture", "discover_kernels"} & rules(log)
    assert new.name in after and hotspot_jobs(log) <= {after[new.name]} | {
        i for n, i in after.items() if before.get(n) != i}
    # deleting it again: the plan forgets it
    shutil.rmtree(new)
    log = run_ok(work, env, *config)
    assert new.name not in summary_dirs(work, "c") and "plan" in rules(log)
    assert executed(run_ok(work, env, *config)) == []


def test_threshold_overrides_rerun_the_stage_that_applies_them(tmp_path):
    """plan.thresholds.structure re-runs the hotspots (their documents and summary.json record the
    value); the plan's own concerns and the gate's re-run the plan only; unchanged, nothing."""
    capture = tmp_path / "capture"
    synth.write_att_run(capture, [vec_add(), synth.demo_gemm()], output_file="att", calls=1)
    env = double_env(tmp_path)
    workdir = tmp_path / "work"

    def run(config: str = "{}") -> str:
        path = tmp_path / "thresholds.yaml"  # a file: --config leaves nested numbers as text
        path.write_text(config)
        done = snakemake(workdir, env, "--configfile", str(path), "--config", f"dir={capture}", "run=th")
        assert done.returncode == 0, done.stderr[-4000:]
        return done.stderr

    def used() -> dict:
        summary = json.loads((workdir / "reports" / "th" / "summary.json").read_text())
        return {(r["concern"], r["name"]): r["value"] for r in summary["thresholds"]}

    dispatches = hotspot_jobs(run())
    assert len(dispatches) == 2 and used()[("structure", "min_chain")] == 3
    structure = "plan: {thresholds: {structure: {min_chain: 5}}}\n"
    log = run(structure)
    assert hotspot_jobs(log) == dispatches and "plan" in rules(log)
    kept = sorted((workdir / "reports" / "th" / "hotspots").glob("*.json"))
    assert [json.loads(p.read_text())["thresholds"]["structure"]["min_chain"] for p in kept] == [5, 5]
    assert used()[("structure", "min_chain")] == 5
    assert executed(run(structure)) == []
    log = run("plan: {thresholds: {structure: {min_chain: 5}, verdict: {tail_share: 0.5}}}\n"
              "regression_thresholds: {total_stall: 5%}\n")
    assert hotspot_jobs(log) == set() and "plan" in rules(log)
    rows = used()
    assert rows[("verdict", "tail_share")] == 0.5 and rows[("gate", "total_stall")] == 0.05
    assert rows[("structure", "min_chain")] == 5
