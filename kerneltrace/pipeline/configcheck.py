"""Config validation against workflow/schemas/config.schema.yaml: unknown keys, types, defaults.

Does what ``snakemake.utils.validate(config, schema)`` does (JSON schema, defaults filled in), with
the schema read once: it runs at every Snakemake start, a no-op re-run included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_schema(path: Path | str) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def unknown_keys(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    return sorted(set(config) - set(schema["properties"]))


def validate_config(config: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """Fill in schema defaults (in place); the first violation as one line, or None."""
    from jsonschema import Draft202012Validator, validators

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, subschema):  # noqa: ANN001
        if isinstance(instance, dict):
            for name, spec in properties.items():
                if isinstance(spec, dict) and "default" in spec:
                    instance.setdefault(name, spec["default"])
        yield from check_properties(validator, properties, instance, subschema)

    checker = validators.extend(Draft202012Validator, {"properties": properties_with_defaults})(schema)
    for error in checker.iter_errors(config):
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        return f"{where}: {error.message}"
    return None
