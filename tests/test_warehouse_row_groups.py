"""How a LITMUS writer leaves DuckDB's row groups at its closing checkpoint
(``litmus.warehouse.RECLAIM_DELETED_SHARE``): a configuration written in whole row groups
keeps them (its tail is not merged into the next configuration's at every checkpoint), and
the rows deletes leave behind are still given back once they are a large share of a table.
"""

from pathlib import Path

import dagster as dg
import duckdb
import pytest
from conftest_metrics import write_known_warehouse

from litmus.warehouse import RECLAIM_DELETED_SHARE, ROW_GROUP_ROWS, connect, deleted_rows
from litmus_dagster.metrics import metrics_assets, metrics_resources
from litmus_dagster.resources import LitmusWarehouse

TAIL_ROWS = 1_000


def _row_group_sizes(con: duckdb.DuckDBPyConnection, table: str) -> list[int]:
    rows = con.execute(
        "SELECT row_group_id, sum(count) FROM pragma_storage_info(?) "
        "WHERE column_id = 0 AND segment_type <> 'VALIDITY' GROUP BY 1 ORDER BY 1",
        [table],
    ).fetchall()
    return [int(count) for _, count in rows]


def _write_configuration(con: duckdb.DuckDBPyConnection, configuration: int) -> None:
    con.execute(
        "INSERT INTO configuration_rows SELECT ?, i FROM range(?) r(i)",
        [f"config-{configuration}", ROW_GROUP_ROWS + TAIL_ROWS],
    )


def test_configurations_written_in_whole_row_groups_keep_them(tmp_path: Path) -> None:
    litmus_db = tmp_path / "litmus.duckdb"
    with connect(litmus_db) as con:
        con.execute("CREATE TABLE configuration_rows (partition_key VARCHAR, v BIGINT)")
    for configuration in range(2):
        with connect(litmus_db) as con:  # one step per configuration, as the pipeline's
            _write_configuration(con, configuration)
    with connect(litmus_db) as con:
        assert _row_group_sizes(con, "configuration_rows") == [ROW_GROUP_ROWS, TAIL_ROWS] * 2
        assert con.execute(
            "SELECT count(DISTINCT partition_key), count(*) FROM configuration_rows"
        ).fetchone() == (2, 2 * (ROW_GROUP_ROWS + TAIL_ROWS))
        assert deleted_rows(con)["configuration_rows"] == (2 * (ROW_GROUP_ROWS + TAIL_ROWS), 0)

    # what DuckDB's default checkpoint does with the same writes: the first tail and the
    # second configuration rewritten into shared row groups
    plain_db = tmp_path / "plain.duckdb"
    with duckdb.connect(str(plain_db)) as con:
        con.execute("CREATE TABLE configuration_rows (partition_key VARCHAR, v BIGINT)")
    for configuration in range(2):
        with duckdb.connect(str(plain_db)) as con:
            _write_configuration(con, configuration)
    with duckdb.connect(str(plain_db)) as con:
        assert len(_row_group_sizes(con, "configuration_rows")) < 4


def test_dbt_build_leaves_the_row_groups_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbt's own connection checkpoints the file too (its models are written there): the
    real build, in process, must not merge the row groups of the tables around them."""
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path / "dbt_target"))
    warehouse = LitmusWarehouse(home=str(tmp_path / "home"))
    with connect(warehouse.duckdb_path) as con:
        write_known_warehouse(con)
        con.execute("CREATE TABLE configuration_rows (partition_key VARCHAR, v BIGINT)")
    for configuration in range(2):
        with connect(warehouse.duckdb_path) as con:
            _write_configuration(con, configuration)
    dbt_assets_def = next(a for a in metrics_assets if a.node_def.name == "litmus_dbt_metrics")

    result = dg.materialize(
        [dbt_assets_def], resources={**metrics_resources, "warehouse": warehouse}
    )

    assert result.success
    with connect(warehouse.duckdb_path) as con:
        assert con.execute("SELECT count(*) FROM configuration_metrics").fetchone()[0] > 0
        assert _row_group_sizes(con, "configuration_rows") == [ROW_GROUP_ROWS, TAIL_ROWS] * 2


def test_deleted_rows_are_given_back_once_they_are_a_large_share(tmp_path: Path) -> None:
    """Small configurations share row groups; rewriting most of them again and again
    (relabels, audit loads) leaves those row groups mostly deleted but alive. Without the
    reclaim their deleted rows stay forever (nearly half the table here); with it they are
    given back whenever they reach the share and a row group's worth."""
    db = tmp_path / "w.duckdb"
    configurations, rows_each = 48, 6_000
    kept = {key for key in range(configurations) if key % 8 == 7}  # never rewritten
    rewritten = [key for key in range(configurations) if key not in kept]
    with connect(db) as con:
        con.execute("CREATE TABLE churn (partition_key INTEGER, v VARCHAR)")
        for key in range(configurations):
            con.execute("INSERT INTO churn SELECT ?, 'a' || i FROM range(?) r(i)", [key, rows_each])
    shares = []
    for round_no in range(80):
        key = rewritten[(round_no * 5) % len(rewritten)]
        with connect(db) as con:
            stored, deleted = deleted_rows(con)["churn"]  # as the last writer left it
            shares.append(deleted / stored)
            con.execute("BEGIN")
            con.execute("DELETE FROM churn WHERE partition_key = ?", [key])
            con.execute(
                "INSERT INTO churn SELECT ?, ? || i FROM range(?) r(i)",
                [key, f"r{round_no}-", rows_each],
            )
            con.execute("COMMIT")
    with connect(db) as con:
        live = con.execute(
            "SELECT count(*), count(DISTINCT partition_key), "
            "count(*) FILTER (WHERE partition_key IN (SELECT unnest(?)) AND v LIKE 'a%') "
            "FROM churn",
            [sorted(kept)],
        ).fetchone()
    assert live == (configurations * rows_each, configurations, len(kept) * rows_each)
    assert max(shares) >= RECLAIM_DELETED_SHARE  # the churn did reach the share
    # DuckDB merges once the live rows fit in fewer row groups: a little beyond the share
    assert max(shares[40:]) < RECLAIM_DELETED_SHARE + 0.1, shares
    assert min(shares[40:]) < 0.05, shares
