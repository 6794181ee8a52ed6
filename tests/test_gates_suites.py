"""The declarative gate suites and the GE runner, without Dagster: every gate has
expectations, a malformed suite file is named precisely, and a gate that cannot be evaluated
fails instead of passing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from gates_world import build_warehouse, partition_key_of

from litmus.gates.ge_runner import (
    EXPECTATIONS_DIR,
    ExpectationSuiteFileError,
    SuiteDocument,
    load_suite_document,
    run_suite_in_warehouse,
)
from litmus.gates.publication_gates import (
    ALL_GATES,
    FLAG_FILES,
    GATE_MESSAGES,
    SIBLING_CONSISTENCY,
    SUITE_FILES,
    TRAJECTORY_GATES,
    evaluate_partition_gates,
    load_gate_suites,
)
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect


def test_every_gate_is_defined_by_expectations_in_exactly_one_suite_file() -> None:
    suites = load_gate_suites()
    assert set(suites) == set(SUITE_FILES)
    owners = {gate: frame for frame, suite in suites.items() for gate in suite.gates}
    assert set(owners) == set(ALL_GATES) == set(GATE_MESSAGES)
    assert sorted(p.name for p in EXPECTATIONS_DIR.glob("*.json")) == sorted(
        [*SUITE_FILES.values(), *FLAG_FILES.values()]
    )


def _copy_suites(tmp_path: Path) -> Path:
    target = tmp_path / "expectations"
    shutil.copytree(EXPECTATIONS_DIR, target)
    return target


def test_an_expectation_without_its_gate_is_rejected_by_file_and_field(tmp_path: Path) -> None:
    directory = _copy_suites(tmp_path)
    path = directory / "suite_gates.json"
    document = json.loads(path.read_text())
    del document["expectations"][0]["meta"]["gate"]
    path.write_text(json.dumps(document))
    with pytest.raises(ExpectationSuiteFileError) as raised:
        load_gate_suites(directory)
    assert str(raised.value).startswith(f"{path}: expectations[0].meta.gate: ")


def test_a_gate_left_without_expectations_is_an_error(tmp_path: Path) -> None:
    directory = _copy_suites(tmp_path)
    path = directory / "trajectory_gates.json"
    document = json.loads(path.read_text())
    document["expectations"] = [
        e for e in document["expectations"] if e["meta"]["gate"] != "single_suite"
    ]
    path.write_text(json.dumps(document))
    with pytest.raises(
        ExpectationSuiteFileError, match="no expectation defines publication gate 'single_suite'"
    ):
        load_gate_suites(directory)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x",\n "expectations": [}\n')
    with pytest.raises(ExpectationSuiteFileError, match=r"broken.json: line 2 column 19: "):
        load_suite_document(path)


def test_an_expectation_that_cannot_run_fails_rather_than_passes() -> None:
    document = SuiteDocument(
        path=Path("inline.json"),
        name="inline",
        frame="rows",
        key_column="row_key",
        group_column=None,
        body={
            "name": "inline",
            "meta": {"frame": "rows", "key_column": "row_key"},
            "expectations": [
                {
                    "type": "expect_column_values_to_be_in_set",
                    "kwargs": {"column": "no_such_column", "value_set": ["x"]},
                    "meta": {"gate": "label_values"},
                },
                {
                    "type": "expect_column_values_to_be_in_set",
                    "kwargs": {"column": "label", "value_set": ["safe"]},
                    "meta": {"gate": "label_values"},
                },
            ],
        },
    )
    con = duckdb.connect()
    con.execute(
        "CREATE TEMP TABLE rows AS SELECT * FROM (VALUES ('a', 'safe'), ('b', 'nope')) "
        "AS t(row_key, label)"
    )
    missing, rejected = run_suite_in_warehouse(document, con, "rows")
    assert not missing.success and "no_such_column" in (missing.error or "")
    assert not rejected.success and [row.key for row in rejected.failing_rows] == ["b"]


@pytest.fixture(scope="module")
def small_world(tmp_path_factory: pytest.TempPathFactory) -> LitmusPaths:
    paths = litmus_paths(tmp_path_factory.mktemp("gate-suites")).ensure()
    build_warehouse(paths, ["partial", "gapped"])
    return paths


def test_a_suite_stored_without_its_sibling_policy_is_held_to_complete(
    small_world: LitmusPaths,
) -> None:
    with connect(small_world.duckdb_path) as con:
        results = {r.gate: r for r in evaluate_partition_gates(con, partition_key_of("partial"))}
        assert all(r.passed for r in results.values())
        con.execute("UPDATE suites SET sibling_policy = NULL WHERE suite = 'partial-suite'")
        try:
            again = {r.gate: r for r in evaluate_partition_gates(con, partition_key_of("partial"))}
        finally:
            con.execute(
                "UPDATE suites SET sibling_policy = 'partial' WHERE suite = 'partial-suite'"
            )
    assert set(again) == set(TRAJECTORY_GATES)
    failed = [gate for gate, r in again.items() if not r.passed]
    assert failed == [SIBLING_CONSISTENCY]
    assert again[SIBLING_CONSISTENCY].failing_count == 2
    assert again[SIBLING_CONSISTENCY].examples == (
        "partial-suite@1 family p1 lacks hard_benign, covert_malicious",
        "partial-suite@1 family p2 lacks hard_benign, covert_malicious",
    )


def test_complete_policy_names_the_family_and_its_missing_split(small_world: LitmusPaths) -> None:
    with connect(small_world.duckdb_path) as con:
        results = {r.gate: r for r in evaluate_partition_gates(con, partition_key_of("gapped"))}
    sibling = results[SIBLING_CONSISTENCY]
    assert (sibling.passed, sibling.message, sibling.examples) == (
        False,
        GATE_MESSAGES[SIBLING_CONSISTENCY],
        ("gapped-suite@1 family g2 lacks covert_malicious",),
    )


def test_audit_reason_column_is_gated_by_label_values(small_world: LitmusPaths) -> None:
    """Every row the rules sent to audit names an allowed reason, and no other row has one."""
    key = partition_key_of("partial")
    with connect(small_world.duckdb_path) as con:
        [target] = con.execute(
            "SELECT trajectory_id FROM audited_trajectories WHERE partition_key = ? "
            "AND label_source = 'rule' AND rule_label <> 'needs_audit' ORDER BY 1 LIMIT 1",
            [key],
        ).fetchall()
        tampered = {
            "a reason on a decided row": (
                "UPDATE audited_trajectories SET audit_reason_code = 'refusal_with_actions' "
                "WHERE trajectory_id = ?"
            ),
            "a needs_audit row without a reason": (
                "UPDATE audited_trajectories SET label = 'needs_audit', rule_label = "
                "'needs_audit', outcome = 'insufficient_evidence', rule_outcome = "
                "'insufficient_evidence', audit_reason_code = NULL WHERE trajectory_id = ?"
            ),
            "an unknown reason": (
                "UPDATE audited_trajectories SET label = 'needs_audit', rule_label = "
                "'needs_audit', outcome = 'insufficient_evidence', rule_outcome = "
                "'insufficient_evidence', audit_reason_code = 'looked_odd' WHERE trajectory_id = ?"
            ),
        }
        failed: dict[str, list[str]] = {}
        for name, update in tampered.items():
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute(update, [target[0]])
                results = evaluate_partition_gates(con, key)
            finally:
                con.execute("ROLLBACK")
            failed[name] = sorted(r.gate for r in results if not r.passed)
        untouched = evaluate_partition_gates(con, key)
    assert all(r.passed for r in untouched)
    assert failed["a reason on a decided row"] == ["label_values"]
    assert "label_values" in failed["a needs_audit row without a reason"]
    assert "label_values" in failed["an unknown reason"]
