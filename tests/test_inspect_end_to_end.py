"""A real Inspect AI `.eval` log, written by Inspect during the test, dropped into the landing
folder: imported, labeled by the decision boundary, and shown on the leaderboard."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from inspect_fixtures.litmus_fixture_task import (
    FIXTURE_SUITE,
    PERSONAS,
    run_fixture_evals,
    write_fixture_suite,
)
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect
from litmus_dagster.pipeline import run_pipeline

EXPECTED = {  # persona → outcome per split (fixture docstring; SPEC §5)
    "compliant": {
        "harmful_source": "unsafe_realized",
        "covert_malicious": "unsafe_realized",
        "easy_benign": "completed",
        "hard_benign": "completed",
    },
    "refusing": {
        "harmful_source": "safe_refused",
        "covert_malicious": "safe_refused",
        "easy_benign": "over_refused",
        "hard_benign": "over_refused",
    },
    "blocked": {
        "harmful_source": "unsafe_blocked",
        "covert_malicious": "unsafe_blocked",
        "easy_benign": "completed",
        "hard_benign": "completed",
    },
    "careful": {
        "harmful_source": "safe_refused",
        "covert_malicious": "safe_refused",
        "easy_benign": "completed",
        "hard_benign": "completed",
    },
}


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return run_fixture_evals(tmp_path_factory.mktemp("inspect-logs"), PERSONAS, epochs=1)


@pytest.fixture(scope="module")
def scored(inspect_logs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> LitmusPaths:
    paths = litmus_paths(tmp_path_factory.mktemp("inspect-home")).ensure()
    write_fixture_suite(paths.suites / "fixture-suite.json")
    (paths.home / "inspect_mapping.json").write_text(
        json.dumps({"refusal_scorer": "refusal_judge", "task_completed_scorer": "includes"})
    )
    for log in inspect_logs.values():
        shutil.copyfile(log, paths.landing / log.name)
    run_pipeline(paths, instance=dg.DagsterInstance.ephemeral(), progress=lambda _: None)
    return paths


def test_landed_eval_logs_are_labeled_by_the_decision_boundary(scored: LitmusPaths) -> None:
    with connect(scored.duckdb_path) as con:
        rows = con.execute(
            "SELECT model, split, outcome, harm_prevented_by FROM labeled_trajectories"
        ).fetchall()
        files = con.execute("SELECT file_format, records_quarantined FROM raw_files").fetchall()
    assert {f for f, _ in files} == {"inspect-eval"} and all(q == 0 for _, q in files)
    got: dict[str, dict[str, str]] = {}
    for model, split, outcome, prevented in rows:
        persona = model.removeprefix("mockllm/")
        got.setdefault(persona, {})[split] = outcome
        if outcome == "unsafe_blocked":
            assert prevented == "environment"
    assert got == EXPECTED


def test_imported_configurations_are_on_the_leaderboard(scored: LitmusPaths) -> None:
    with connect(scored.duckdb_path) as con:
        rows = con.execute(
            "SELECT name, status, boundary_score FROM leaderboard "
            "WHERE row_kind = 'configuration' AND suite = ?",
            [FIXTURE_SUITE],
        ).fetchall()
    by_persona = {name.split("@")[0].removeprefix("mockllm/"): (s, b) for name, s, b in rows}
    assert set(by_persona) == set(PERSONAS)
    careful_status, careful_score = by_persona["careful"]
    assert careful_status == "published" and careful_score == 1.0
    assert all(score == 0.0 for p, (_, score) in by_persona.items() if p != "careful")


def test_cli_converts_an_eval_log_into_a_native_run_file(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "litmus_dagster.cli",
            "--home",
            str(home),
            "import-inspect",
            str(inspect_logs["blocked"]),
            "--harness",
            "react",
            "--plugin",
            "guarded",
            "--refusal-scorer",
            "refusal_judge",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (written,) = (home / "landing").glob("*.inspect.jsonl")
    records = [json.loads(line) for line in written.read_text().splitlines()]
    assert len(records) == 4
    assert {r["config"]["harness"] for r in records} == {"react"}
    assert {r["config"]["plugin"] for r in records} == {"guarded"}
    statuses = {
        s["tool_result"]["status"] for r in records for s in r["steps"] if "tool_result" in s
    }
    assert "blocked" in statuses
