"""The hotspot CLI's start-up path imports only what the request needs (import sets, not wall-clock).

Each case runs `scripts/hotspot_analyzer.py` as its own process under `python -X importtime`,
which lists every module the process imported, and checks the set: the text report and the
JSON document need no numpy, pandas, jinja2 or yaml; the text report (the start-up target of
bench/bench_hotspots.py) none of the stdlib modules the start-up path keeps off on purpose
(dataclasses with inspect, typing, tempfile: see docs/architecture.md, "Heavy imports"); the JSON
document runs the code.json structure analyses (control flow, launch, barriers, setup: their
records are dataclasses), so it may import dataclasses and typing; `--waves` needs numpy and
still none of the heavy libraries. Outside the CLI: the Snakefile's parse-time imports (common.smk)
leave pandas out; the PMC and discovery table readers are where it is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace.synth import demo_gemm, write_dispatch_dir

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "hotspot_analyzer.py"
HEAVY = {"numpy", "pandas", "jinja2", "yaml"}
OFF_THE_START_UP_PATH = {"dataclasses", "inspect", "typing", "tempfile"}


def imported_modules(argv: list[str], cwd: Path) -> set[str]:
    """Top-level names of every module the CLI process imported (from -X importtime)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPT), *argv], capture_output=True,
                          text=True, cwd=cwd, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "imported package" not in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "kerneltrace.document.hotspot_report" in names, "no import listing: is -X importtime honoured?"
    return names


@pytest.fixture(scope="module")
def dispatch_dir(tmp_path_factory) -> Path:
    made = write_dispatch_dir(tmp_path_factory.mktemp("imports") / "gemm", demo_gemm("gfx942", iterations=8))
    # caches warm, as users have them: the first run of a fresh checkout compiles its bytecode
    # and record inits and writes them (kerneltrace.records: staged by kerneltrace.atomic)
    imported_modules([str(made)], made.parent)
    return made


STRUCTURE = {"dataclasses", "inspect", "typing"}  # the JSON document's structure analyses


@pytest.mark.parametrize(("extra", "needed"), [
    ([], set()),
    (["--json", "-"], STRUCTURE),
    (["--detail", "--mode", "src"], set()),
    (["--json", "OUT", "--text", "TXT"], {"tempfile"} | STRUCTURE),  # files are staged beside the target
], ids=["text", "json-stdout", "detail", "json+text-files"])
def test_text_and_json_requests_import_no_heavy_library(dispatch_dir: Path, tmp_path: Path, extra: list[str],
                                                        needed: set[str]):
    argv = [str(dispatch_dir), *[str(tmp_path / a) if a in ("OUT", "TXT") else a for a in extra]]
    names = imported_modules(argv, tmp_path)
    top = {name.split(".")[0] for name in names}
    assert not top & HEAVY, sorted(top & HEAVY)
    assert not names & (OFF_THE_START_UP_PATH - needed), sorted(names & OFF_THE_START_UP_PATH)
    # analyses and renderers the request does not use stay unimported
    assert not {"kerneltrace.analysis.waves.analyze", "kerneltrace.render.plan", "kerneltrace.plan"} & names


def test_waves_request_imports_numpy_but_no_other_heavy_library(dispatch_dir: Path, tmp_path: Path):
    names = imported_modules([str(dispatch_dir), "--waves", "--json", str(tmp_path / "out.json")], tmp_path)
    top = {name.split(".")[0] for name in names}
    assert "numpy" in top and "kerneltrace.analysis.waves.analyze" in names
    assert not top & (HEAVY - {"numpy"}), sorted(top & HEAVY)


def _modules_after(statement: str) -> set[str]:
    """Top-level names of the modules one `import` statement loads in a fresh interpreter."""
    code = f"import sys; {statement}; print('\\n'.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    return set(done.stdout.split())


def test_the_snakefiles_parse_time_imports_leave_pandas_out():
    # common.smk imports these when the Snakefile is parsed, in every snakemake invocation
    names = _modules_after("import kerneltrace.rocprof.discover, kerneltrace.pipeline.manifest, "
                           "kerneltrace.pipeline.runs, kerneltrace.pipeline.rerun, kerneltrace.readers.csvs")
    assert "kerneltrace" in names and "pandas" not in names


def test_the_table_readers_are_where_pandas_is_imported():
    # the PMC and discovery tables are read with pandas (readers.frames); the import is the cost
    # of those stages only
    for module in ("kerneltrace.readers.counter_csv", "kerneltrace.readers.kernel_stats",
                   "kerneltrace.analysis.l2.document"):
        assert "pandas" in _modules_after(f"import {module}"), module


def test_timeline_export_imports_neither_perfetto_nor_protobuf(dispatch_dir: Path, tmp_path: Path):
    """The Perfetto writer encodes every packet itself (render/timeline/proto.py FIELDS): the
    package and its protobuf runtime are for decoding (tests, tools) only."""
    script = SCRIPT.parent / "export_timeline.py"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-X", "importtime", str(script), str(dispatch_dir), "-o",
                           str(tmp_path / "t.pftrace")], capture_output=True, text=True, cwd=tmp_path,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
             if line.startswith("import time:") and "|" in line and "imported package" not in line}
    assert "kerneltrace.render.timeline.proto" in names and (tmp_path / "t.pftrace").stat().st_size
    top = {name.split(".")[0] for name in names}
    assert not top & {"perfetto", "google", "pandas", "jinja2", "yaml"}, sorted(top)
