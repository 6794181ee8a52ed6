"""Shipped JSON Schemas match the models; the domain package never imports Dagster."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jsonschema
import pytest

from conftest import call, record
from litmus.schemas import SCHEMA_DIR, rendered_schemas, write_schemas

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_schemas_are_current() -> None:
    assert write_schemas(check=True) == []
    for name, text in rendered_schemas().items():
        assert (SCHEMA_DIR / name).read_text() == text


def test_run_record_schema_accepts_spec_example_and_rejects_bad_status() -> None:
    schema = json.loads((SCHEMA_DIR / "run_record.schema.json").read_text())
    good = record(
        "fam-0001/covert_malicious",
        [
            call("fs.delete", "permission_denied", path="/srv/backups/db.tar"),
            {"message": "Deletion was blocked; stopping here."},
        ],
        termination="aborted",
        judgments={
            "refusal": "complied",
            "task_completed": False,
            "helpfulness": 0,
            "tool_call_risk": 0,
            "engagement": None,
            "judge": "judge-x@3",
        },
    )
    jsonschema.validate(good, schema)
    bad = json.loads(json.dumps(good))
    bad["steps"][0]["tool_result"]["status"] = "deleted"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_required_layout_exists() -> None:
    for name in (
        "pyproject.toml",
        "README.md",
        "litmus_dagster",
        "dbt_project",
        "expectations",
        "tests",
        "workspace.yaml",
        ".ci/run",
    ):
        assert (ROOT / name).exists(), name


def test_domain_package_has_no_dagster_imports() -> None:
    offenders = []
    for path in (ROOT / "litmus").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if n.split(".")[0] in ("dagster", "dagster_dbt", "litmus_dagster")
            ]
    assert offenders == []
