"""The warehouse resource is dagster-duckdb's DuckDBResource with LITMUS's connections."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml
from dagster_duckdb import DuckDBResource

from litmus.errors import LitmusError
from litmus.warehouse import (
    DEFAULT_MEMORY_LIMIT,
    MEMORY_LIMIT_ENV,
    WarehouseBusyError,
    WarehouseMissingError,
    bounded_memory,
    connect,
    connect_read_only,
    limit_memory,
    ordered_text_digests,
)
from litmus_dagster.definitions import defs
from litmus_dagster.metrics.assets import DBT_PROJECT_DIR
from litmus_dagster.resources import LitmusWarehouse, warehouse_from_environment


def test_the_code_location_warehouse_is_a_duckdb_resource() -> None:
    assert isinstance(defs.resources["warehouse"], DuckDBResource)


def test_environment_variables_are_read_when_the_run_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITMUS_HOME", str(tmp_path / "at-load"))
    monkeypatch.setenv("LITMUS_DUCKDB_PATH", str(tmp_path / "at-load.duckdb"))
    warehouse = warehouse_from_environment()
    # changed after the definitions were built: a dg.EnvVar reads the value at run time
    monkeypatch.setenv("LITMUS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LITMUS_DUCKDB_PATH", str(tmp_path / "chosen.duckdb"))
    seen: dict[str, Path] = {}

    @dg.asset
    def opened(warehouse: LitmusWarehouse) -> None:
        seen["home"] = warehouse.paths.home
        with warehouse.get_connection() as con:
            [(path,)] = con.execute(
                "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
            ).fetchall()
            seen["file"] = Path(path)

    assert dg.materialize([opened], resources={"warehouse": warehouse}).success
    assert seen == {"home": tmp_path / "home", "file": tmp_path / "chosen.duckdb"}
    # the connection was LITMUS's own: the schema is there
    with connect(tmp_path / "chosen.duckdb") as con:
        assert con.execute("SELECT count(*) FROM raw_files").fetchone() == (0,)


def test_unset_variables_keep_the_litmus_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    monkeypatch.delenv("LITMUS_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    warehouse = warehouse_from_environment()
    assert warehouse.duckdb_path == tmp_path / ".litmus" / "warehouse.duckdb"


def test_a_connection_holds_the_writer_lock(tmp_path: Path) -> None:
    warehouse = LitmusWarehouse(home=str(tmp_path / "home"))
    with warehouse.get_connection():
        with (
            pytest.raises(WarehouseBusyError, match="stayed busy"),
            warehouse.get_connection(timeout_s=0.2),
        ):
            pass
        with (
            pytest.raises(WarehouseBusyError),
            warehouse.get_connection(read_only=True, timeout_s=0.2),
        ):
            pass
    with (
        warehouse.get_connection(read_only=True) as con,
        pytest.raises(duckdb.InvalidInputException, match="read-only"),
    ):
        con.execute("CREATE TABLE nothing (x INT)")


def test_read_only_creates_nothing(tmp_path: Path) -> None:
    warehouse = LitmusWarehouse(home=str(tmp_path / "home"))
    with (
        pytest.raises(WarehouseMissingError, match="no warehouse at"),
        warehouse.get_connection(read_only=True),
    ):
        pass
    assert not (tmp_path / "home").exists()


def test_duckdb_settings_are_litmus_own() -> None:
    with pytest.raises(ValueError, match="connection_config is not used"):
        LitmusWarehouse(connection_config={"threads": 1})


def _memory_limit(con: duckdb.DuckDBPyConnection) -> str:
    return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def _as_duckdb_reads_it(size: str) -> str:
    with duckdb.connect() as probe:
        probe.execute(f"SET memory_limit = '{size}'")
        return _memory_limit(probe)


def test_every_warehouse_connection_holds_the_memory_limit_not_duckdbs_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's default (80 % of RAM) is never what a warehouse connection runs under: the
    writer and the reader hold DEFAULT_MEMORY_LIMIT, or LITMUS_MEMORY_LIMIT when set, and a
    block under a lower bound gives the warehouse's limit back."""
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect() as plain:
        assert _memory_limit(plain) != _as_duckdb_reads_it(DEFAULT_MEMORY_LIMIT)
    with connect(path) as con:
        assert _memory_limit(con) == _as_duckdb_reads_it(DEFAULT_MEMORY_LIMIT)
        with bounded_memory(con, "64MB"):
            assert _memory_limit(con) == _as_duckdb_reads_it("64MB")
        assert _memory_limit(con) == _as_duckdb_reads_it(DEFAULT_MEMORY_LIMIT)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "300MB")
    with connect_read_only(path) as con:
        assert _memory_limit(con) == _as_duckdb_reads_it("300MB")
    with connect(path) as con:
        assert _memory_limit(con) == _as_duckdb_reads_it("300MB")


def test_a_memory_limit_duckdb_cannot_read_is_refused_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "lots'; DROP TABLE x; --")
    with (
        pytest.raises(LitmusError, match=f"{MEMORY_LIMIT_ENV}=.*not a DuckDB memory size"),
        connect(tmp_path / "warehouse.duckdb"),
    ):
        pass


def test_dbt_runs_under_the_same_memory_limit_as_the_warehouse() -> None:
    """Both dbt targets read LITMUS_MEMORY_LIMIT with the warehouse's own default."""
    profile = yaml.safe_load((DBT_PROJECT_DIR / "profiles.yml").read_text(encoding="utf-8"))
    targets = profile["litmus"]["outputs"]
    expected = f"{{{{ env_var('{MEMORY_LIMIT_ENV}', '{DEFAULT_MEMORY_LIMIT}') }}}}"
    assert {name: t["settings"]["memory_limit"] for name, t in targets.items()} == {
        name: expected for name in targets
    }


def test_ordered_text_digests_equal_duckdbs_ordered_string_agg_and_stream_under_the_limit(
    tmp_path: Path,
) -> None:
    """The streamed digest is DuckDB's ``sha256(string_agg(text, chr(10) ORDER BY …))``
    whatever the batch boundaries (NULL, empty and non-ASCII texts included), and it
    finishes under a memory limit the ordered aggregate runs out of."""
    con = duckdb.connect(str(tmp_path / "digests.duckdb"))
    con.execute(
        """
        CREATE TABLE rows AS
        SELECT 'p' || (i % 7)::VARCHAR AS partition_key,
               CASE WHEN i % 13 = 0 THEN NULL WHEN i % 11 = 0 THEN ''
                    ELSE 'tëxt ' || (i * 7919 % 100003)::VARCHAR || repeat('x', i % 5) END AS text
        FROM range(20000) r(i)
        """
    )
    expected = dict(
        con.execute(
            "SELECT partition_key, sha256(string_agg(text, chr(10) ORDER BY text)) "
            "FROM rows GROUP BY 1"
        ).fetchall()
    )
    for batch_rows in (5, 1000, 65_536):
        assert (
            ordered_text_digests(con, "SELECT * FROM rows", "text", batch_rows=batch_rows)
            == expected
        )
    big = "SELECT 'p' || (i % 3)::VARCHAR AS partition_key, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS text FROM range(4000000) r(i)"  # noqa: E501
    con.execute(f"CREATE TABLE big AS {big}")
    limit_memory(con, "128MB")
    with pytest.raises(duckdb.OutOfMemoryException):
        con.execute(
            "SELECT partition_key, sha256(string_agg(text, chr(10) ORDER BY text)) "
            "FROM big GROUP BY 1"
        ).fetchall()
    streamed = ordered_text_digests(con, "SELECT * FROM big", "text")
    limit_memory(con, "4GB")
    assert streamed == dict(
        con.execute(
            "SELECT partition_key, sha256(string_agg(text, chr(10) ORDER BY text)) "
            "FROM big GROUP BY 1"
        ).fetchall()
    )
