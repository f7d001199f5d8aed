"""Nothing lost: atomic outputs, raw captures outside Snakemake's reach, resume without
re-capturing, and analysis that never writes into the folders it reads."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import calls, double_env, snakemake

from kerneltrace import atomic, synth

REPO = Path(__file__).resolve().parents[1]


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under root (hidden ones too): content hash + mtime for files, 'dir' for folders."""
    digest = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_file() and not path.is_symlink():
            digest[key] = hashlib.sha256(path.read_bytes()).hexdigest() + f"@{path.stat().st_mtime_ns}"
        else:
            digest[key] = "dir" if path.is_dir() else "link"
    return digest


# ---- atomic writes --------------------------------------------------------------------------

CRASH = """
import os, sys
sys.path.insert(0, sys.argv[3])
from kerneltrace import atomic
# die without cleanup at the chosen point, like a kill -9 or a power cut
if sys.argv[2] == "before-rename":
    os.replace = lambda *args: os._exit(9)
else:
    os.fsync = lambda fd: os._exit(9)
atomic.write_text(sys.argv[1], "NEW " * 250_000)
"""


@pytest.mark.parametrize("point", ["mid-write", "before-rename"])
def test_crash_during_atomic_write_leaves_the_old_file_intact(tmp_path, point):
    target = tmp_path / "plan.md"
    target.write_text("OLD complete plan\n")
    proc = subprocess.run([sys.executable, "-c", CRASH, str(target), point, str(REPO)], check=False)
    assert proc.returncode == 9  # it really died in the middle
    assert target.read_text() == "OLD complete plan\n"


def test_failed_atomic_write_leaves_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    atomic.write_json(target, {"version": 1})

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        atomic.write_json(target, {"version": 2})
    assert json.loads(target.read_text()) == {"version": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_scripts_write_outputs_only_through_kerneltrace_atomic():
    """A plain write_text/open('w') in a stage script could leave a half-written output behind."""
    offenders = []
    for script in sorted((REPO / "scripts").glob("*.py")):
        text = script.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"(?<!atomic)\.write_(text|bytes)\(|json\.dump\(|\.to_csv\(|\.savefig\(", code):
                offenders.append(f"{script.name}:{number}: {line.strip()}")
            opened = re.search(r"\bopen\(([^,]+),\s*[\"']([wax])", code)
            if opened and "log" not in opened.group(1):  # logs are streamed, not outputs
                offenders.append(f"{script.name}:{number}: {line.strip()}")
        if re.search(r"(?<![.\w])write_(text|json|bytes)\(", text):
            assert re.search(r"from kerneltrace(\.atomic import|\s+import atomic)", text), script.name
    assert not offenders, "non-atomic output writes:\n" + "\n".join(offenders)


# ---- raw captures survive a failed downstream job; a re-run resumes ---------------------------

def _repo_copy(root: Path) -> Path:
    """The pipeline (Snakefile, rules, scripts, package) copied so that one script can be broken."""
    copy = root / "repo"
    copy.mkdir()
    shutil.copy2(REPO / "Snakefile", copy / "Snakefile")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("workflow", "scripts", "kerneltrace", "config", "profiles"):
        shutil.copytree(REPO / name, copy / name, ignore=ignore)
    return copy


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> dict[str, object]:
    """Three runs of one two-kernel cmd pipeline in a copy of the repo:
    1. the 2nd ATT capture's command fails (exit 7), run with --keep-going;
    2. the command works again but the hotspot analyzer is broken;
    3. everything repaired.
    Raw-capture snapshots, capture records and the double's calls are recorded after each run."""
    root = tmp_path_factory.mktemp("resume")
    repo = _repo_copy(root)
    env = double_env(root, call_log=True)
    # the hotspots job runs in the Snakemake process: break the module it calls (in the copy)
    analyzer = repo / "kerneltrace" / "pipeline" / "hotspots_job.py"
    good_analyzer = analyzer.read_text()
    counter = root / "app_runs"
    # 1st app run = discovery, 2nd/3rd = the two ATT captures: the 3rd fails (once).
    cmd = (f"n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); echo $n > {counter}; "
           "if [ $n -eq 3 ]; then echo 'app crashed' >&2; exit 7; fi")
    config = root / "config.yaml"
    config.write_text(json.dumps({"cmd": cmd, "run": "r", "top_kernels": 2}))
    work = root / "w"
    results = work / "results" / "r"
    states = []

    def run(*extra: str) -> None:
        before = len(calls(env))
        proc = snakemake(work, env, "--configfile", str(config), *extra, snakefile=repo / "Snakefile")
        states.append({
            "proc": proc,
            "calls": calls(env)[before:],
            "captures": {p.name: tree_digest(p) for p in (results / "captures").iterdir() if not p.name.startswith(".")},
            "records": sorted(p.parent.name for p in (results / "att").glob("*/capture.json")),
            "hotspots": sorted(p.name for p in (results / "hotspots").glob("*.json")),
        })

    run("--keep-going")
    analyzer.write_text("from kerneltrace.errors import InputError\n\n\ndef hotspots_job(*args, **kwargs):\n"
                        "    raise InputError('injected analysis failure', 'test', 'repair it')\n")
    run("--keep-going")
    analyzer.write_text(good_analyzer)
    run()
    return {"states": states, "work": work, "cmd": cmd}


@pytest.mark.e2e
def test_rerun_resumes_without_recapturing_what_succeeded(interrupted):
    first, second, _ = interrupted["states"]
    assert first["proc"].returncode != 0
    assert len(first["records"]) == 1  # one kernel captured, the other failed
    (good,) = first["records"]
    (failed,) = {"k000", "k001"} - {good}
    assert len(second["calls"]) == 1  # no discovery again, no re-capture of the good kernel
    assert any(f".{failed}.attempt" in part for part in second["calls"][0])
    assert second["records"] == ["k000", "k001"]
    assert second["captures"][good] == first["captures"][good]  # bytes and mtimes untouched


@pytest.mark.e2e
def test_cmd_from_a_config_file_reaches_bash_once_in_every_pipeline_call(interrupted):
    every_call = [argv for state in interrupted["states"] for argv in state["calls"]]
    assert len(every_call) == 4  # discovery + k000 + k001 (failed) + k001 again
    for argv in every_call:  # $(( )), quotes, `;` and `>` all inside ONE argv element
        assert argv[argv.index("--") + 1:] == ["bash", "-c", interrupted["cmd"]]


@pytest.mark.e2e
def test_raw_captures_survive_a_failed_analysis_job(interrupted):
    _, second, third = interrupted["states"]
    work = interrupted["work"]
    assert second["proc"].returncode != 0
    assert "Error in rule hotspots" in second["proc"].stderr
    assert "injected analysis failure" in second["proc"].stderr  # the failed job's log is shown
    assert second["hotspots"] == []  # Snakemake deleted the failed jobs' outputs ...
    assert second["records"] == ["k000", "k001"]  # ... never the capture records ...
    for kernel in ("k000", "k001"):  # ... nor the raw data
        assert any(name.startswith("ui_output_agent_") for name in second["captures"][kernel])
    # Repaired analysis: no capture runs again, the raw data is the same, the plan appears.
    assert third["proc"].returncode == 0, third["proc"].stderr[-3000:]
    assert third["calls"] == []
    assert third["captures"] == second["captures"]
    assert third["hotspots"]
    assert (work / "reports" / "r" / "plan.md").is_file()


# ---- analysis never writes into its input folders ---------------------------------------------

@pytest.fixture(scope="module")
def input_folder(tmp_path_factory) -> Path:
    """A captured run as someone would hand it over: ATT dispatch dirs + CSVs + PMC counters."""
    root = tmp_path_factory.mktemp("inputs") / "bundle"
    spec = synth.demo_vec_add()
    synth.write_att_run(root, [spec], calls=2)
    synth.write_counter_collection(root / "pmc_counter_collection.csv",
                                   synth.counter_rows(spec, 1, {"TCC_HIT_sum": 900.0, "TCC_MISS_sum": 100.0,
                                                                "TCC_EA0_RDREQ_sum": 50.0}))
    return root


@pytest.mark.e2e
def test_dir_run_writes_nothing_under_the_input_folder(tmp_path, input_folder):
    before = tree_digest(input_folder)
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"dir": str(input_folder), "run": "handed_over", "pmc": {"enabled": True}}))
    result = snakemake(tmp_path / "w", double_env(tmp_path, call_log=True), "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "w" / "reports" / "handed_over" / "plan.html").is_file()
    assert tree_digest(input_folder) == before


def test_standalone_analyzers_write_nothing_under_the_input_folder(tmp_path, input_folder):
    before = tree_digest(input_folder)
    dispatch = sorted(input_folder.glob("ui_output_agent_*"))[0]
    out = tmp_path / "out"
    out.mkdir()
    runs = [
        ["hotspot_analyzer.py", str(dispatch), "--waves", "--detail", "--json", str(out / "h.json")],
        ["decode.py", str(input_folder), "--manifest", str(out / "manifest.tsv")],
        ["find_dispatch_dirs.py", str(input_folder), "-o", str(out / "dispatches.tsv")],
        ["pmc_l2_analyzer.py", str(input_folder / "pmc_counter_collection.csv"), "--json", str(out / "l2.json")],
        ["compare.py", str(dispatch), str(dispatch)],
    ]
    for argv in runs:
        proc = subprocess.run([sys.executable, str(REPO / "scripts" / argv[0]), *argv[1:]], cwd=out,
                              capture_output=True, text=True, check=False)
        assert proc.returncode in (0, 1), (argv, proc.stderr)  # compare may exit 1 on a verdict
    assert tree_digest(input_folder) == before
