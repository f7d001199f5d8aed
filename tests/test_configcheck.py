"""Config validation: defaults filled, one-line violations, and the validated-config cache."""

from __future__ import annotations

import json
from pathlib import Path

from kerneltrace.pipeline import configcheck

SCHEMA = configcheck.load_schema(Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml")


def test_defaults_violations_and_cache(tmp_path):
    cache = tmp_path / "check.json"
    config = {"dir": "/data"}
    assert configcheck.validate_config(config, SCHEMA, cache) is None
    assert config["topk"] == SCHEMA["properties"]["topk"]["default"]  # defaults filled in
    stored = json.loads(cache.read_text())
    again = {"dir": "/data"}
    assert configcheck.validate_config(again, SCHEMA, cache) is None and again == config
    assert json.loads(cache.read_text()) == stored  # a hit writes nothing
    bad = {"dir": "/data", "top_kernels": "many"}
    message = configcheck.validate_config(bad, SCHEMA, cache)
    assert message and message.startswith("top_kernels: ") and "integer" in message
    assert json.loads(cache.read_text()) == stored  # a failed check is never remembered
    assert configcheck.validate_config({"dir": "/data", "top_kernels": "many"}, SCHEMA, cache)
    assert configcheck.unknown_keys({"dir": 1, "nope": 2}, SCHEMA) == ["nope"]


def test_a_damaged_cache_only_means_validating_again(tmp_path):
    cache = tmp_path / "check.json"
    cache.write_text("{not json")
    config = {"dir": "/data", "top_kernels": 3}
    assert configcheck.validate_config(config, SCHEMA, cache) is None and config["top_kernels"] == 3
    assert json.loads(cache.read_text())["config"] == config


def test_each_stage_gets_its_part_of_the_thresholds():
    config = {"plan": {"thresholds": {"structure": {"min_chain": 4}, "compare": {"work_ratio": 2},
                                      "verdict": {"tail_share": 0.5}, "waves": {}}},
              "regression_thresholds": {"total_stall": "5%"}}
    assert configcheck.stage_thresholds(config, "hotspots") == {"structure": {"min_chain": 4}}
    assert configcheck.stage_thresholds(config, "compare") == {"compare": {"work_ratio": 2}}
    assert configcheck.stage_thresholds(config, "plan") == {
        "compare": {"work_ratio": 2}, "verdict": {"tail_share": 0.5}, "gate": {"total_stall": "5%"}}
    assert configcheck.stage_thresholds({}, "hotspots") == {} == configcheck.stage_thresholds({}, "plan")
