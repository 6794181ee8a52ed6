"""The JSON Schemas of the native formats, generated from ``litmus.formats``."""

from __future__ import annotations

import json
from pathlib import Path

from litmus.formats import run_record_json_schema, suite_json_schema

SCHEMA_DIR = Path(__file__).parent
SCHEMAS = {
    "run_record.schema.json": run_record_json_schema,
    "suite.schema.json": suite_json_schema,
}


def rendered_schemas() -> dict[str, str]:
    return {
        name: json.dumps(make(), indent=2, sort_keys=True) + "\n" for name, make in SCHEMAS.items()
    }


def write_schemas(*, check: bool = False) -> list[str]:
    """Write (with ``check``: only compare) the shipped schema files; return those that differ."""
    changed = []
    for name, text in rendered_schemas().items():
        target = SCHEMA_DIR / name
        if not target.exists() or target.read_text() != text:
            changed.append(name)
            if not check:
                target.write_text(text)
    return changed
