"""The lake backend of the warehouse: DuckLake, its catalog in PostgreSQL, its data as Parquet.

Chosen by one setting, read when a connection opens (litmus.warehouse.connect): ::

    LITMUS_WAREHOUSE=ducklake:postgres:dbname=litmus_lake host=db.internal port=5432 user=litmus
    LITMUS_LAKE_DATA_PATH=/shared/litmus-lake/      # a folder every writer reaches (or s3://…)

Unset (or ``embedded``), the warehouse is the embedded DuckDB file. On the lake a connection
is an in-memory DuckDB with the lake attached as ``lake`` and made the default catalog, so
every statement LITMUS runs reads and writes the lake's tables unchanged. There is no
warehouse-wide writer lock: writers to different configurations commit side by side
(DuckLake's optimistic transactions), a conflicting commit is retried
(litmus.warehouse.retry_on_conflict), and the few sections that must not run twice at once
(schema migrations, suite registration, dbt and publication) take a PostgreSQL advisory lock
on the catalog database (:func:`catalog_lock`).

The extensions come from the ``lake`` extra's wheels (``duckdb-extension-ducklake``,
``-postgres-scanner``, ``-httpfs``), loaded from their files: nothing is downloaded at run
time, and a wheel of another DuckDB version is refused by name.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import duckdb

from litmus.errors import LitmusError, WarehouseBusyError

WAREHOUSE_ENV = "LITMUS_WAREHOUSE"
LAKE_DATA_PATH_ENV = "LITMUS_LAKE_DATA_PATH"
LAKE_PREFIX = "ducklake:postgres:"
LAKE_ALIAS = "lake"
CREATE_ATTEMPTS = 5
# the extension each wheel carries, by the module the wheel installs
_EXTENSION_MODULES = {
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "ducklake": "duckdb_extension_ducklake",
    "httpfs": "duckdb_extension_httpfs",
}


class LakeSettingError(LitmusError):
    """``LITMUS_WAREHOUSE`` / ``LITMUS_LAKE_DATA_PATH`` name no usable lake."""


@dataclass(frozen=True)
class LakeSettings:
    """Where the lake lives: its PostgreSQL catalog (a libpq connection string) and the
    folder or bucket prefix holding its Parquet files."""

    catalog: str
    data_path: str

    @property
    def remote_data(self) -> bool:
        return "://" in self.data_path


def lake_from_environment() -> LakeSettings | None:
    """The lake named by ``LITMUS_WAREHOUSE``; None for the embedded DuckDB file."""
    chosen = os.environ.get(WAREHOUSE_ENV, "").strip()
    if chosen in ("", "embedded"):
        return None
    if not chosen.startswith(LAKE_PREFIX) or not chosen[len(LAKE_PREFIX) :].strip():
        raise LakeSettingError(
            f"{WAREHOUSE_ENV}={chosen!r}: expected 'embedded' or "
            f"'{LAKE_PREFIX}<libpq connection string>' (e.g. "
            f"'{LAKE_PREFIX}dbname=litmus_lake host=127.0.0.1 port=5432 user=litmus')"
        )
    data_path = os.environ.get(LAKE_DATA_PATH_ENV, "").strip()
    if not data_path:
        raise LakeSettingError(
            f"{WAREHOUSE_ENV} names a lake but {LAKE_DATA_PATH_ENV} is not set: the folder "
            "(or s3:// prefix) every writer reaches, where the lake keeps its Parquet files"
        )
    if "://" not in data_path:
        data_path = str(Path(data_path).resolve()) + os.sep
    return LakeSettings(catalog=chosen[len(LAKE_PREFIX) :].strip(), data_path=data_path)


def extension_file(name: str) -> Path:
    """The ``.duckdb_extension`` file of ``name`` from its installed wheel, built for the
    DuckDB this process runs."""
    module_name = _EXTENSION_MODULES[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise LakeSettingError(
            f"the lake needs the DuckDB extension {name!r}: install LITMUS with its `lake` "
            f"extra (pip install 'litmus-scoring[lake]'), which brings {module_name}"
        ) from None
    folder = Path(next(iter(module.__path__))) / "extensions"
    found = sorted(folder.glob(f"v{duckdb.__version__}/*.duckdb_extension"))
    if not found:
        built = sorted(p.name for p in folder.glob("*"))
        raise LakeSettingError(
            f"{module_name} carries no {name} extension for DuckDB {duckdb.__version__} (it has "
            f"{', '.join(built) or 'none'}): install the wheel of the same version as duckdb"
        )
    return found[0]


def load_extensions(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    """LOAD ``names`` from their wheels' files, with installing and autoloading off."""
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    for name in names:
        con.execute(f"LOAD {sql_literal(str(extension_file(name)))}")


def sql_literal(text: str) -> str:
    """``text`` as a single-quoted SQL string literal (ATTACH and LOAD take no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def attach_lake(
    con: duckdb.DuckDBPyConnection, lake: LakeSettings, *, read_only: bool = False
) -> None:
    """Attach ``lake`` to ``con`` as :data:`LAKE_ALIAS` and make it the default catalog."""
    load_extensions(con, "postgres_scanner", "ducklake", *(["httpfs"] if lake.remote_data else []))
    options = [f"DATA_PATH {sql_literal(lake.data_path)}"]
    if read_only:
        options.append("READ_ONLY")
    statement = (
        f"ATTACH IF NOT EXISTS {sql_literal(LAKE_PREFIX + lake.catalog)} AS {LAKE_ALIAS} "
        f"({', '.join(options)})"
    )
    # The first ATTACH of a new lake creates its catalog tables; writers doing so at once
    # collide in PostgreSQL ("duplicate key value"), and the loser finds them made on its next
    # try.
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            con.execute(statement)
            break
        except duckdb.Error as error:
            if "Failed to initialize DuckLake" not in str(error) or attempt == CREATE_ATTEMPTS:
                raise
            time.sleep(0.2 * attempt)
    con.execute(f"USE {LAKE_ALIAS}")


@contextmanager
def open_lake(
    lake: LakeSettings, *, read_only: bool = False, temp_directory: Path | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB with the lake attached (the caller ensures or checks the schema).
    ``temp_directory``: where DuckDB spills what exceeds its memory limit."""
    con = duckdb.connect()
    try:
        if temp_directory is not None:
            con.execute(f"SET temp_directory = {sql_literal(str(temp_directory))}")
        attach_lake(con, lake, read_only=read_only)
        yield con
    finally:
        con.close()


def lock_key(purpose: str) -> int:
    """The advisory lock id of ``purpose`` (a signed 64-bit int, stable across processes)."""
    digest = hashlib.sha256(f"litmus:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextmanager
def catalog_lock(
    lake: LakeSettings,
    purpose: str,
    timeout_s: float,
    *,
    on_wait: Callable[[str], None] | None = None,
    shared: bool = False,
) -> Iterator[None]:
    """Hold PostgreSQL's transaction-level advisory lock for ``purpose`` on the catalog
    database for the block: every process (on any machine) asking for the same purpose waits;
    ``shared`` holders wait only for an exclusive one (and it for them). The lock lives in a
    transaction of a connection of its own; it is released when the block ends, and by
    PostgreSQL itself when the process dies."""
    locker = duckdb.connect()
    try:
        load_extensions(locker, "postgres_scanner")
        locker.execute(f"ATTACH {sql_literal(lake.catalog)} AS catalog (TYPE postgres, READ_ONLY)")
        locker.execute("BEGIN TRANSACTION")
        function = "pg_try_advisory_xact_lock_shared" if shared else "pg_try_advisory_xact_lock"
        query = f"SELECT {function}({lock_key(purpose)}) AS held"
        deadline = time.monotonic() + timeout_s
        delay, told = 0.02, False
        while not locker.execute(
            "SELECT held FROM postgres_query('catalog', ?)", [query]
        ).fetchall()[0][0]:
            if time.monotonic() >= deadline:
                raise WarehouseBusyError(
                    f"the lake's {purpose} lock stayed held for {timeout_s:.0f}s (another "
                    "LITMUS process holds it)"
                )
            if not told and on_wait is not None:
                told = True
                on_wait(f"waiting for the lake's {purpose} lock: another LITMUS process holds it")
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        yield
    finally:
        with suppress(duckdb.Error):
            locker.execute("ROLLBACK")
        locker.close()


# Lake maintenance rewrites and deletes data files under every table, so it runs alone
# (ducklake #1094: duplicates under concurrent maintenance): every writer holds this lock
# shared for its connection's life, maintenance holds it exclusively (litmus.lake_maintenance).
MAINTENANCE_LOCK = "maintenance"
