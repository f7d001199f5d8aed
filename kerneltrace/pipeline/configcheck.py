"""Config validation against workflow/schemas/config.schema.yaml (unknown keys, types, defaults) and each stage's share of its thresholds.

Does what ``snakemake.utils.validate(config, schema)`` does (JSON schema, defaults filled in). It
runs at every Snakemake start, a no-op re-run included, so the schema is read once and a config
already validated in this working directory (same config, same schema) is not validated again:
the filled-in result is reused from ``.snakemake/kerneltrace/config-check.json`` (no jsonschema
import, ≈ 50 ms of a ≈ 1 s start).
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

CACHE = Path(".snakemake") / "kerneltrace" / "config-check.json"
# The concerns of `plan.thresholds` applied before the plan (docs/thresholds.md): by the stage named.
EARLIER_STAGE = {"structure": "hotspots", "compare": "compare"}


def load_schema(path: Path | str) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def unknown_keys(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    return sorted(set(config) - set(schema["properties"]))


def _key(config: dict[str, Any], schema: dict[str, Any]) -> str | None:
    try:
        text = json.dumps([config, schema], sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON data: always validate
        return None
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _cached(key: str | None, cache: Path | None) -> dict[str, Any] | None:
    if key is None or cache is None:
        return None
    try:
        stored = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(stored, dict) and stored.get("key") == key and isinstance(stored.get("config"), dict):
        return stored["config"]
    return None


def validate_config(config: dict[str, Any], schema: dict[str, Any],
                    cache: Path | None = None) -> str | None:
    """Fill in schema defaults (in place); the first violation as one line, or None.

    ``cache``: where a validated config is remembered (None: always validate).
    """
    key = _key(config, schema)
    filled = _cached(key, cache)
    if filled is not None:
        config.clear()
        config.update(filled)
        return None
    from jsonschema import Draft202012Validator, validators

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, subschema):
        if isinstance(instance, dict):
            for name, spec in properties.items():
                if isinstance(spec, dict) and "default" in spec:
                    instance.setdefault(name, copy.deepcopy(spec["default"]))  # schema unchanged
        yield from check_properties(validator, properties, instance, subschema)

    checker = validators.extend(Draft202012Validator, {"properties": properties_with_defaults})(schema)
    for error in checker.iter_errors(config):
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        return f"{where}: {error.message}"
    if key is not None and cache is not None:
        _remember(cache, key, config)
    return None


def _remember(cache: Path, key: str, config: dict[str, Any]) -> None:
    from kerneltrace.atomic import write_text

    try:
        text = json.dumps({"key": key, "config": config}, allow_nan=False)
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_text(cache, text)
    except (OSError, TypeError, ValueError):
        pass  # a cache only: the next start validates again


def stage_thresholds(config: dict[str, Any], stage: str) -> dict[str, Any]:
    """The thresholds overrides a stage's rule passes on: `plan.thresholds`' concerns that stage
    applies ("hotspots": structure; "compare": compare), or for "plan" every concern but the
    hotspot stage's plus the gate's (`regression_thresholds`): the plan applies its own and lists
    the compare's and the gate's in summary.json. A stage whose part is unchanged is not re-run."""
    given = dict((config.get("plan") or {}).get("thresholds") or {})
    if stage != "plan":
        return {name: values for name, values in given.items()
                if EARLIER_STAGE.get(name) == stage and values}
    plan = {name: values for name, values in given.items()
            if EARLIER_STAGE.get(name) != "hotspots" and values}
    if config.get("regression_thresholds"):
        plan["gate"] = dict(config["regression_thresholds"])
    return plan
