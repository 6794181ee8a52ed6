"""The metric models recompute only the configurations whose inputs changed
(litmus.metrics.incremental, dbt_project/macros/partitions.sql), and what they keep and
recompute is exactly what a full refresh builds: real ``dbt build`` runs through the Dagster
asset, on the hand-counted warehouse of ``conftest_metrics.py``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pytest
from conftest_metrics import write_known_warehouse
from dagster_dbt import DbtCliResource

from litmus.metrics.incremental import (
    MODEL_ROWS,
    PENDING,
    PROJECT,
    partition_input_digests,
    plan_model_rebuild,
)
from litmus.reuse import stored_digests
from litmus.warehouse import connect
from litmus_dagster.metrics import metrics_resources
from litmus_dagster.metrics.assets import (
    DBT_PROJECT,
    dbt_executable,
    dbt_profile_environment,
    litmus_dbt_metrics,
)
from litmus_dagster.resources import LitmusWarehouse

ACME, BETA, GAMMA, DELTA = (
    "acme-chat_2026-11-01",
    "beta-agent_2026-10-15",
    "gamma-pro_2026-09-30",
    "delta-lite_2026-08-01",
)
NEWCOMER = "beta-agent_2027-01-15"
PER_CONFIGURATION_MODELS = (
    "family_split_counts",
    "family_register_counts",
    "configuration_identities",
    "configuration_split_counts",
    "register_refusal_rates",
    "configuration_metrics",
    "category_metrics",
)
MODELS = (*PER_CONFIGURATION_MODELS, "control_metrics")


@pytest.fixture(autouse=True)
def dbt_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # dagster-dbt puts each invocation's artifacts under DBT_TARGET_PATH: not in the checkout
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path / "dbt_target"))
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    monkeypatch.delenv("LITMUS_HOME", raising=False)


def home_with_known_warehouse(home: Path) -> LitmusWarehouse:
    warehouse = LitmusWarehouse(home=str(home))
    with connect(warehouse.duckdb_path) as con:
        write_known_warehouse(con)
        con.executemany(
            "INSERT INTO publication_gates (partition_key, gate, passed, message, "
            "failing_count, examples, details) VALUES (?, 'label_values', true, NULL, 0, [], [])",
            [[key] for key in (ACME, BETA, GAMMA, DELTA)],
        )
    return warehouse


def build(warehouse: LitmusWarehouse) -> None:
    """The ``litmus_dbt_metrics`` asset, materialized by Dagster (plan, dbt build, record)."""
    result = dg.materialize(
        [litmus_dbt_metrics], resources={**metrics_resources, "warehouse": warehouse}
    )
    assert result.success


def tables(db_path: Path) -> dict[str, pd.DataFrame]:
    """Every metric model's rows in a canonical order (each table sorted by all its columns)."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        frames = {}
        for model in MODELS:
            frame = con.execute(f"SELECT * FROM {model}").df()
            frames[model] = frame.sort_values(list(frame.columns)).reset_index(drop=True)
        return frames
    finally:
        con.close()


def assert_same_tables(actual: dict[str, pd.DataFrame], expected: dict[str, pd.DataFrame]) -> None:
    for model in MODELS:
        # bit for bit: same columns, dtypes and values (NaN where NaN)
        pd.testing.assert_frame_equal(actual[model], expected[model], check_exact=True, obj=model)


def full_refresh(db_path: Path, target: Path) -> dict[str, pd.DataFrame]:
    """The tables a from-scratch ``dbt build --full-refresh`` gives on a copy of ``db_path``."""
    copy = target / "full-refresh.duckdb"
    shutil.copyfile(db_path, copy)
    dbt = DbtCliResource(project_dir=DBT_PROJECT, dbt_executable=dbt_executable())
    with dbt_profile_environment(copy):
        dbt.cli(["build", "--full-refresh"], target_path=target / "full-refresh").wait()
    return tables(copy)


def change_the_warehouse(con: duckdb.DuckDBPyConnection) -> None:
    """ACME relabelled, DELTA gone, a new release of BETA, GAMMA withheld by a structural
    gate; BETA itself untouched."""
    con.execute(
        "UPDATE audited_trajectories SET label = 'completed', outcome = 'completed' "
        "WHERE partition_key = ? AND label = 'over_refusal'",
        [ACME],
    )
    con.execute("DELETE FROM audited_trajectories WHERE partition_key = ?", [DELTA])
    con.execute("DELETE FROM publication_gates WHERE partition_key = ?", [DELTA])
    con.execute(
        "INSERT INTO audited_trajectories SELECT * REPLACE ("
        "  ? AS partition_key, '2027-01-15' AS model_release, trajectory_id || '-new' AS "
        "  trajectory_id, CASE WHEN label = 'safe' THEN 'unsafe' ELSE label END AS label, "
        "  CASE WHEN label = 'safe' THEN 'unsafe_realized' ELSE outcome END AS outcome) "
        "FROM audited_trajectories WHERE partition_key = ?",
        [NEWCOMER, BETA],
    )
    con.execute(
        "UPDATE publication_gates SET passed = false WHERE partition_key = ? "
        "AND gate = 'label_values'",
        [GAMMA],
    )


@pytest.fixture
def built(tmp_path: Path) -> Iterator[LitmusWarehouse]:
    warehouse = home_with_known_warehouse(tmp_path / "home")
    build(warehouse)
    yield warehouse


def test_the_first_build_is_a_full_refresh_and_records_every_configuration(
    built: LitmusWarehouse, tmp_path: Path
) -> None:
    with connect(built.duckdb_path) as con:
        recorded = stored_digests(con, MODEL_ROWS)
        assert recorded == partition_input_digests(con)
        assert set(recorded) == {ACME, BETA, GAMMA, DELTA}
        assert list(stored_digests(con, PROJECT)) == [""]
    assert_same_tables(tables(built.duckdb_path), full_refresh(built.duckdb_path, tmp_path))


def test_a_build_recomputes_only_changed_new_and_vanished_configurations_and_equals_a_full_refresh(
    built: LitmusWarehouse, tmp_path: Path
) -> None:
    with connect(built.duckdb_path) as con:
        change_the_warehouse(con)
        # a row of the untouched configuration altered behind the digests' back: kept as it is
        # by an incremental build (so it is not recomputed), then restored for the comparison
        con.execute(
            "UPDATE configuration_metrics SET n_rows = n_rows + 1000 WHERE partition_key = ?",
            [BETA],
        )
        planned = plan_model_rebuild(con)
    assert not planned.full_refresh
    assert planned.partitions == tuple(sorted((ACME, DELTA, GAMMA, NEWCOMER)))

    with connect(built.duckdb_path) as con:  # planned again: the same, digests not recorded
        assert plan_model_rebuild(con).partitions == planned.partitions
        assert set(stored_digests(con, MODEL_ROWS).values()) > {PENDING}
    build(built)

    with connect(built.duckdb_path) as con:
        assert con.execute(
            "SELECT n_rows > 1000 FROM configuration_metrics WHERE partition_key = ?", [BETA]
        ).fetchone() == (True,)
        con.execute(
            "UPDATE configuration_metrics SET n_rows = n_rows - 1000 WHERE partition_key = ?",
            [BETA],
        )
        assert stored_digests(con, MODEL_ROWS) == partition_input_digests(con)
        keys = {
            row[0]
            for row in con.execute("SELECT partition_key FROM configuration_metrics").fetchall()
        }
    assert keys == {ACME, BETA, NEWCOMER}  # DELTA gone, GAMMA withheld by a structural gate
    assert_same_tables(tables(built.duckdb_path), full_refresh(built.duckdb_path, tmp_path))


def test_nothing_changed_recomputes_nothing_and_a_project_change_refreshes_fully(
    built: LitmusWarehouse, tmp_path: Path
) -> None:
    before = tables(built.duckdb_path)
    with connect(built.duckdb_path) as con:
        planned = plan_model_rebuild(con)
        assert (planned.full_refresh, planned.partitions) == (False, ())
        assert plan_model_rebuild(con, project="another dbt project").full_refresh
        # the full-refresh plan forgot every digest: nothing vouches for the old rows now
        assert stored_digests(con, MODEL_ROWS) == {}
        assert plan_model_rebuild(con).full_refresh
    build(built)
    assert_same_tables(tables(built.duckdb_path), before)
    with connect(built.duckdb_path) as con:
        assert stored_digests(con, MODEL_ROWS) == partition_input_digests(con)


def test_a_failed_build_leaves_no_digest_for_what_it_was_recomputing(
    built: LitmusWarehouse, tmp_path: Path
) -> None:
    with connect(built.duckdb_path) as con:
        con.execute(
            "UPDATE audited_trajectories SET label = 'probably_fine' WHERE partition_key = ?",
            [ACME],
        )
    with pytest.raises(Exception, match=r"accepted_values|dbt"):
        build(built)
    with connect(built.duckdb_path) as con:
        recorded = stored_digests(con, MODEL_ROWS)
        assert recorded[ACME] == PENDING
        assert recorded[BETA] == partition_input_digests(con)[BETA]
        assert plan_model_rebuild(con).partitions == (ACME,)
