"""Moving a team to the lake: copy an embedded warehouse file into a new lake (``litmus
lake-import``), every table LITMUS's schema defines, in one lake transaction (all of it or
nothing). dbt's tables are not copied: the next ``litmus run`` builds them on the lake."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from litmus.warehouse import (
    DEFAULT_LOCK_TIMEOUT_S,
    WarehouseMissingError,
    WarehouseVersionError,
    atomically,
    connect,
    latest_schema_version,
    quoted_identifier,
    reader_lock,
)
from litmus.warehouse_lake import LakeSettingError, lake_from_environment, sql_literal

SOURCE_ALIAS = "embedded_source"


@dataclass
class LakeImport:
    """What was copied: rows per table; the source's tables left for dbt to rebuild."""

    rows: dict[str, int] = field(default_factory=dict)
    not_copied: list[str] = field(default_factory=list)


def import_embedded_warehouse(
    source: Path,
    *,
    progress: Callable[[str], None] = lambda _: None,
    timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
) -> LakeImport:
    """Copy the embedded warehouse ``source`` into the lake ``LITMUS_WAREHOUSE`` names, which
    must hold no rows yet. ``source`` is read under its shared lock (no writer meanwhile) and
    must be at this LITMUS's schema version (a `litmus run` without LITMUS_WAREHOUSE upgrades
    it)."""
    lake = lake_from_environment()
    if lake is None:
        raise LakeSettingError(
            "lake-import copies into the lake LITMUS_WAREHOUSE names (ducklake:postgres:…, "
            "with LITMUS_LAKE_DATA_PATH): it is not set"
        )
    if not source.is_file():
        raise WarehouseMissingError(f"no embedded warehouse at {source}")
    report = LakeImport()
    with reader_lock(source, timeout_s), connect(source, timeout_s=timeout_s) as con:
        con.execute(f"ATTACH {sql_literal(str(source))} AS {SOURCE_ALIAS} (READ_ONLY)")
        try:
            version = con.execute(
                f"SELECT max(version) FROM {SOURCE_ALIAS}.main.schema_migrations"
            ).fetchall()[0][0]
            if version != latest_schema_version():
                raise WarehouseVersionError(
                    f"{source} is at schema version {version}, this LITMUS writes "
                    f"{latest_schema_version()}: run `litmus run` on it once (without "
                    "LITMUS_WAREHOUSE) to upgrade it, then import it"
                )
            lake_tables = _base_tables(con, "lake") - {"schema_migrations"}
            source_tables = _base_tables(con, SOURCE_ALIAS) - {"schema_migrations"}
            holding = sorted(t for t in lake_tables if _rows(con, "lake", t))
            if holding:
                raise LakeSettingError(
                    f"the lake already holds rows ({', '.join(holding[:5])}): lake-import "
                    "copies into a new lake only"
                )

            def copy() -> None:
                for table in sorted(lake_tables & source_tables):
                    name = quoted_identifier(table)
                    con.execute(
                        f"INSERT INTO lake.main.{name} BY NAME "
                        f"SELECT * FROM {SOURCE_ALIAS}.main.{name}"
                    )
                    report.rows[table] = _rows(con, "lake", table)
                    progress(f"{table}: {report.rows[table]:,} rows")

            atomically(con, copy, what="lake-import")
            report.not_copied = sorted(source_tables - lake_tables)
        finally:
            con.execute(f"DETACH {SOURCE_ALIAS}")
    return report


def _base_tables(con: duckdb.DuckDBPyConnection, catalog: str) -> set[str]:
    return {
        row[0]
        for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = ? "
            "AND table_schema = 'main' AND table_type = 'BASE TABLE'",
            [catalog],
        ).fetchall()
    }


def _rows(con: duckdb.DuckDBPyConnection, catalog: str, table: str) -> int:
    query = f"SELECT count(*) FROM {catalog}.main.{quoted_identifier(table)}"
    return int(con.execute(query).fetchall()[0][0])
