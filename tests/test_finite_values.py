"""No NaN or Infinity in any JSON output, CLI option or config value; counters sanity-checked (issue 14 point 8)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace import atomic
from kerneltrace.analysis.l2.document import analyze
from kerneltrace.errors import InputError
from kerneltrace.pipeline.runs import build_runs
from kerneltrace.readers.counter_run import CounterDispatch, CounterRun

REPO = Path(__file__).resolve().parents[1]


def _strict(text: str):
    def refuse(token):
        raise AssertionError(f"non-finite token {token} in JSON output")
    return json.loads(text, parse_constant=refuse)


# ---- the writer never emits NaN/Infinity ----------------------------------------------------

def test_json_writer_turns_non_finite_values_into_null_with_a_reason(tmp_path):
    out = tmp_path / "doc.json"
    atomic.write_json(out, {"a": math.nan, "b": [1.0, math.inf], "c": {"d": -math.inf}, "warnings": ["w"]})
    doc = _strict(out.read_text())
    assert doc["a"] is None and doc["b"] == [1.0, None] and doc["c"]["d"] is None
    assert doc["warnings"][0] == "w" and "$.a" in doc["warnings"][1] and "$.b[1]" in doc["warnings"][1]


def test_finite_documents_are_written_unchanged(tmp_path):
    out = tmp_path / "doc.json"
    atomic.write_json(out, {"a": 1.5, "warnings": []})
    assert _strict(out.read_text()) == {"a": 1.5, "warnings": []}


# ---- CLI options ----------------------------------------------------------------------------

def _cli(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "scripts" / script), *args],
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize("option, value", [
    ("--ideal-gb", "nan"), ("--ideal-gb", "inf"), ("--ideal-gb", "-1"), ("--ideal-gb", "0"),
    ("--peak-gbps", "nan"), ("--peak-gbps", "-inf"), ("--peak-gbps", "1e400"),
])
def test_l2_analyzer_refuses_non_finite_or_out_of_range_options(tmp_path, option, value):
    csv = tmp_path / "c.csv"
    csv.write_text("x\n")
    proc = _cli("pmc_l2_analyzer.py", str(csv), f"{option}={value}")
    assert proc.returncode == 2 and proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr
    assert option in proc.stderr and "finite" in proc.stderr


@pytest.mark.parametrize("script, args", [
    ("compare.py", ["a", "b", "--max-items", "-1"]),
    ("discover_kernels.py", ["--stats", "x.csv", "--timeout", "nan"]),
    ("discover_kernels.py", ["--stats", "x.csv", "--top-kernels", "0"]),
])
def test_other_numeric_options_are_checked(script, args):
    proc = _cli(script, *args)
    assert proc.returncode == 2 and proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1, proc.stderr


# ---- config values --------------------------------------------------------------------------

@pytest.mark.parametrize("config", [
    {"dir": "/x", "pmc": {"ideal_gb": math.nan}},
    {"dir": "/x", "timeout": math.inf},
    {"runs": {"a": {"dir": "/x", "timeout": math.nan}}},
    {"dir": "/x", "regression_thresholds": {"min_stall_per_wave": math.nan}},
])
def test_config_with_nan_or_infinity_is_refused(tmp_path, config):
    with pytest.raises(InputError, match="not a finite number"):
        build_runs(config, tmp_path, tmp_path)


def test_config_schema_bounds_the_pmc_numbers():
    import jsonschema
    import yaml

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"pmc": {"ideal_gb": math.inf}}, schema)


# ---- counter sanity -------------------------------------------------------------------------

def _l2(counters: dict[str, float]) -> dict:
    run = CounterRun("mem", "counter_csv", [CounterDispatch(1, "k", counters, 0, 1000)],
                     arch="gfx942", arch_source="test", product=None)
    return analyze([run])


@pytest.mark.parametrize("miss, why", [(-300.0, "negative"), (2.0**60, "implausibly large"),
                                       (math.nan, "not a finite")])
def test_implausible_counter_makes_the_metric_unavailable_with_a_reason(miss, why):
    doc = _l2({"TCC_HIT": 900.0, "TCC_MISS": miss, "TCC_EA0_RDREQ": 100.0,
               "TCC_EA0_RDREQ_32B": 10.0, "TCC_BUBBLE": 50.0})
    entry = doc["dispatches"][0]
    assert entry["l2_hit_rate"] is None  # never 300 %
    reasons = [u for u in doc["unavailable"] if u["metric"] == "l2_hit_rate"]
    assert reasons and why in reasons[0]["needs"]
    assert entry["fabric_read_bytes"] == 128 * 50 + 64 * 40 + 32 * 10  # the sane counters still count
    text = atomic.json_text(doc)
    _strict(text)
    from kerneltrace.render.l2 import format_text

    rendered = format_text(doc).lower()
    assert "nan" not in rendered.replace("nanosec", "") and "inf" not in rendered.replace("info", "")


def test_sane_counters_keep_their_hit_rate():
    doc = _l2({"TCC_HIT": 900.0, "TCC_MISS": 100.0})
    assert doc["dispatches"][0]["l2_hit_rate"] == pytest.approx(0.9)
