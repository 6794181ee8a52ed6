"""The publication relation (litmus/gates/publication_decision.py): the one decision of whether a
configuration is published, with its reasons, that the board, status and the UI read."""

from __future__ import annotations

import duckdb
from test_releases_status import labeled_warehouse

from litmus.audit.audited import refresh_audited_partition
from litmus.gates.publication_decision import (
    AUDIT_OUT_OF_DATE,
    LABELING_GATE,
    NOT_GATED,
    NOT_GATED_REASON,
    NOT_SCORED,
    NOT_SCORED_REASON,
    publication,
)
from litmus.gates.publication_gates import (
    GATE_MESSAGES,
    RATES_IN_UNIT_INTERVAL,
    evaluate_partition_gates,
    record_partition_gates,
)
from litmus.metrics.leaderboard import withheld_from_gates
from litmus.planning.status import partition_reviews, partition_statuses
from litmus.settings import LitmusPaths
from litmus.warehouse import connect
from litmus_dagster.cli.status import print_configuration_status


def codes(con: duckdb.DuckDBPyConnection, key: str) -> list[str]:
    return [reason.code for reason in publication(con, [key])[key].reasons]


def test_each_reason_to_withhold_in_order_and_nothing_else(
    litmus_home: LitmusPaths, warehouse: duckdb.DuckDBPyConnection
) -> None:
    key = labeled_warehouse(warehouse, litmus_home)
    # labeled, never audited nor gated: withheld; status says the audit waits for a refresh
    assert codes(warehouse, key) == [NOT_GATED]
    assert publication(warehouse, [key])[key].board_reasons == [NOT_GATED_REASON]
    assert partition_reviews(warehouse)[key].publication == f"withheld: {AUDIT_OUT_OF_DATE}"

    refresh_audited_partition(warehouse, key)
    assert codes(warehouse, key) == [NOT_GATED]
    assert withheld_from_gates(warehouse, [key]) == {key: [NOT_GATED_REASON]}

    record_partition_gates(warehouse, key, evaluate_partition_gates(warehouse, key))
    warehouse.execute("UPDATE publication_gates SET passed = true")
    entry = publication(warehouse, [key])[key]
    assert entry.published and entry.describe() == "published" and entry.reasons == ()

    warehouse.execute(
        "UPDATE publication_gates SET passed = NULL, message = NULL WHERE gate = 'coverage'"
    )
    warehouse.execute(
        "UPDATE publication_gates SET passed = false, message = ? WHERE gate = 'needs_audit'",
        [GATE_MESSAGES["needs_audit"]],
    )
    entry = publication(warehouse, [key])[key]
    assert entry.describe() == "withheld: coverage, needs_audit"  # gate order, NULL fails
    assert entry.board_reasons == [
        "coverage: coverage failed",
        f"needs_audit: {GATE_MESSAGES['needs_audit']}",
    ]

    warehouse.execute(
        "INSERT INTO labeling_agreement (partition_key, labeling_status, labeling_note) "
        "VALUES (?, 'withheld', 'disagreement 30% over the 10% bound')",
        [key],
    )
    assert codes(warehouse, key) == ["coverage", "needs_audit", LABELING_GATE]
    # the verdicts on record judge the audited rows the metrics are computed from: rows out
    # of date change nothing on the board until they are refreshed (which forgets them)
    warehouse.execute("DELETE FROM audited_trajectories")
    assert codes(warehouse, key) == ["coverage", "needs_audit", LABELING_GATE]
    assert partition_reviews(warehouse)[key].publication == f"withheld: {AUDIT_OUT_OF_DATE}"
    refresh_audited_partition(warehouse, key)
    assert codes(warehouse, key) == [NOT_GATED, LABELING_GATE]


def test_status_and_board_read_the_same_relation(
    litmus_home: LitmusPaths, warehouse: duckdb.DuckDBPyConnection
) -> None:
    key = labeled_warehouse(warehouse, litmus_home)
    refresh_audited_partition(warehouse, key)
    record_partition_gates(warehouse, key, evaluate_partition_gates(warehouse, key))
    for passed in (True, False):
        warehouse.execute("UPDATE publication_gates SET passed = ?", [passed])
        entry = publication(warehouse, [key])[key]
        assert partition_reviews(warehouse)[key].publication == entry.describe()
        assert withheld_from_gates(warehouse, [key]).get(key) == (
            None if entry.published else entry.board_reasons
        )


def test_a_configuration_labeled_and_gated_but_not_scored_yet_says_so_not_a_gate_failure(
    litmus_home: LitmusPaths, warehouse: duckdb.DuckDBPyConnection, capsys
) -> None:
    """A run cut short after labeling, before its metrics: the rates gate has no verdict yet.
    That is "not scored yet", in status and on the board, never a failed rates gate."""
    key = labeled_warehouse(warehouse, litmus_home)
    refresh_audited_partition(warehouse, key)
    record_partition_gates(warehouse, key, evaluate_partition_gates(warehouse, key))
    warehouse.execute(
        "UPDATE publication_gates SET passed = true WHERE gate <> ?", [RATES_IN_UNIT_INTERVAL]
    )
    entry = publication(warehouse, [key])[key]
    assert entry.describe() == f"withheld: {NOT_SCORED}"
    assert entry.board_reasons == [NOT_SCORED_REASON]
    assert withheld_from_gates(warehouse, [key]) == {key: [NOT_SCORED_REASON]}
    [status] = partition_statuses(warehouse)
    print_configuration_status(status, partition_reviews(warehouse)[key], on_board=None)
    line = capsys.readouterr().out.splitlines()[0]
    assert line.endswith("  withheld: not scored yet"), line
    assert RATES_IN_UNIT_INTERVAL not in line

    # a rates verdict that failed is a gate failure, said as one
    warehouse.execute(
        "UPDATE publication_gates SET passed = false WHERE gate = ?", [RATES_IN_UNIT_INTERVAL]
    )
    assert publication(warehouse, [key])[key].describe() == f"withheld: {RATES_IN_UNIT_INTERVAL}"
    # with another gate failed, that gate is the reason (its rates are not computed at all)
    warehouse.execute(
        "UPDATE publication_gates SET passed = NULL WHERE gate = ?", [RATES_IN_UNIT_INTERVAL]
    )
    warehouse.execute("UPDATE publication_gates SET passed = false WHERE gate = 'coverage'")
    assert publication(warehouse, [key])[key].describe() == (
        f"withheld: coverage, {RATES_IN_UNIT_INTERVAL}"
    )


def test_configurations_with_verdicts_are_in_the_relation_unasked(tmp_path) -> None:
    with connect(tmp_path / "bare.duckdb") as con:  # the LITMUS schema, nothing labeled
        assert publication(con, ["a"])["a"].describe() == f"withheld: {NOT_GATED}"
        con.execute(
            "INSERT INTO publication_gates (partition_key, gate, passed, message, "
            "failing_count, examples, details) VALUES ('b', 'coverage', false, 'partial', 1, "
            "[], [])"
        )
        assert sorted(publication(con)) == ["b"]
        assert publication(con)["b"].board_reasons == ["coverage: partial"]
