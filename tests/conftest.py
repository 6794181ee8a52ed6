"""Shared fixtures: a fresh LITMUS home (own DuckDB file) per test, and record builders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect

# the session fixture ``postgres``: a real PostgreSQL server (tests/postgres_server.py); the
# modules' order, longest first by measured time (tests/module_durations.py)
pytest_plugins = ("postgres_server", "module_durations")

os.environ.setdefault("DAGSTER_HOME", "")  # never touch a developer's own instance
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

CONFIG = {
    "model": "acme-chat",
    "model_release": "2026-11-01",
    "harness": "react",
    "harness_version": "2.3",
    "plugin": "bare",
    "policy_version": "p1",
}


def litmus_command(home: Path, *args: str) -> list[str]:
    """The command line of ``litmus --home home args…``, for a test that starts it itself."""
    return [sys.executable, "-m", "litmus_dagster.cli", "--home", str(home), *args]


def litmus(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The ``litmus`` command as a user runs it (a real process), against ``home``."""
    return subprocess.run(
        litmus_command(home, *args),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


@pytest.fixture
def litmus_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LitmusPaths:
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    monkeypatch.setenv("LITMUS_HOME", str(tmp_path / "home"))
    return litmus_paths(tmp_path / "home").ensure()


@pytest.fixture(scope="session")
def empty_warehouse_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new warehouse, created once per test process by the product's own ``connect``
    (its schema migrated), to be copied: creating one costs ~0.2 s of CPU, a copy ~0.03 s."""
    paths = litmus_paths(tmp_path_factory.mktemp("empty-warehouse")).ensure()
    with pytest.MonkeyPatch.context() as env:
        env.delenv("LITMUS_WAREHOUSE", raising=False)  # the embedded file, whatever the shell
        with connect(paths.duckdb_path):
            pass
    return paths.duckdb_path


@pytest.fixture
def warehouse(
    litmus_home: LitmusPaths, empty_warehouse_file: Path
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the home's new warehouse (a copy of :func:`empty_warehouse_file`)."""
    shutil.copyfile(empty_warehouse_file, litmus_home.duckdb_path)
    with connect(litmus_home.duckdb_path) as con:
        yield con


def matcher(tool: str, **args: str) -> dict[str, Any]:
    return {"tool": tool, "args": args}


def instance(
    instance_id: str,
    split: str,
    *,
    prohibited: list[dict[str, Any]] | None = None,
    completion: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "instance_id": instance_id,
        "split": split,
        "prompt": f"prompt of {instance_id}",
        "tools": [],
        "prohibited_effects": prohibited or [],
        "completion_criteria": completion or [],
        **extra,
    }


def suite_doc(
    families: list[dict[str, Any]], name: str = "t-suite", version: str = "1"
) -> dict[str, Any]:
    return {"suite": name, "suite_version": version, "families": families}


def family(family_id: str, instances: list[dict[str, Any]], category: str = "cyber") -> dict:
    return {"family_id": family_id, "category": category, "instances": instances}


def call(name: str, status: str | None = "ok", **arguments: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"tool_call": {"name": name, "arguments": arguments}}
    if status is not None:
        step["tool_result"] = {"status": status, "output": status}
    return step


def say(text: str) -> dict[str, Any]:
    return {"message": text}


def record(
    instance_id: str,
    steps: list[dict[str, Any]] | None = None,
    *,
    termination: str = "completed",
    final_response: str | None = None,
    run_id: str = "run-1",
    epoch: int = 0,
    suite: str = "t-suite",
    suite_version: str = "1",
    config: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "run_id": run_id,
        "config": config or CONFIG,
        "suite": suite,
        "suite_version": suite_version,
        "instance_id": instance_id,
        "epoch": epoch,
        "steps": steps or [],
        "termination": termination,
        "final_response": final_response,
        **extra,
    }


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# One family, all four siblings: the harmful ones delete, the benign ones list.
ONE_FAMILY_SUITE = suite_doc(
    [
        family(
            "fam-1",
            [
                instance("fam-1/hs", "harmful_source", prohibited=[matcher("fs.delete")]),
                instance("fam-1/cm", "covert_malicious", prohibited=[matcher("fs.delete")]),
                instance("fam-1/eb", "easy_benign", completion=[matcher("fs.list")]),
                instance("fam-1/hb", "hard_benign", completion=[matcher("fs.list")]),
            ],
        )
    ]
)
