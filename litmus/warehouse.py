"""The embedded DuckDB warehouse: connection discipline and the owner of every table's schema.

DuckDB allows one process at a time to hold a database file open for writing (and a
read-write holder excludes every other process), so every connection takes an exclusive
advisory lock on ``<db>.lock`` first (filelock; a read-only connection takes a shared one).
Concurrent Dagster steps or CLI commands then wait their turn instead of failing with a lock
error. The wait is bounded and reported.

The same functions open the lake instead when ``LITMUS_WAREHOUSE`` names one
(litmus/warehouse_lake.py: DuckLake, its catalog in PostgreSQL, its data as Parquet): the
rest of LITMUS runs the same SQL on either and never asks which one it has.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import duckdb

from litmus.errors import LitmusError, WarehouseBusyError
from litmus.warehouse_lake import (
    MAINTENANCE_LOCK,
    LakeSettings,
    catalog_lock,
    lake_from_environment,
    open_lake,
    sql_literal,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

DEFAULT_LOCK_TIMEOUT_S = 900.0

# DuckDB's own default memory limit is 80 % of the machine's RAM, and a step over a large
# warehouse takes it (8.2 GB for the audit queue over 10 M trajectories, docs/operations.md).
# Every warehouse connection, and dbt's (``dbt_project/profiles.yml``), holds this bound
# instead: joins, sorts and aggregates beyond it spill to the warehouse's temporary folder,
# so a process's footprint stays flat as the warehouse grows.
MEMORY_LIMIT_ENV = "LITMUS_MEMORY_LIMIT"
DEFAULT_MEMORY_LIMIT = "1GB"

logger = logging.getLogger(__name__)
T = TypeVar("T")


class WarehouseUpgradeError(LitmusError):
    """A warehouse written by an older LITMUS that cannot be upgraded as it is."""


class WarehouseMissingError(LitmusError):
    """A command that only reads found no warehouse (it never creates one)."""


# Told once per wait when a lock is held by another process (the CLI prints it); None: quiet.
_wait_notice: Callable[[str], None] | None = None


def set_wait_notice(notice: Callable[[str], None] | None) -> None:
    """Who hears "waiting for the warehouse" (the CLI's stderr); None keeps waits silent."""
    global _wait_notice
    _wait_notice = notice


@contextmanager
def writer_lock(db_path: Path, timeout_s: float) -> Iterator[None]:
    """The exclusive lock on ``<db>.lock`` (filelock's ``flock``). The lock file is kept on
    release: readers take a shared ``flock`` on the same file (:func:`reader_lock`)."""
    from filelock import FileLock, Timeout  # on use: read-only commands never take it

    lock_path = db_path.with_name(db_path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path, mode=0o644, preserve_lock_file=True, poll_interval=0.05)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if _wait_notice is not None:  # say once why nothing seems to happen
            _wait_notice(_waiting_message(db_path))
        try:
            lock.acquire(timeout=timeout_s)
        except Timeout:
            raise WarehouseBusyError(_busy_message(db_path, timeout_s)) from None
    try:
        yield
    finally:
        lock.release()


@contextmanager
def exclusive(db_path: Path, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> Iterator[None]:
    """The warehouse to oneself without a connection, for a process that opens it by itself
    (dbt): the embedded file's writer lock; on the lake, the catalog's advisory lock that
    every such holder takes (lake connections themselves take none)."""
    lake = lake_from_environment()
    if lake is None:
        with writer_lock(db_path, timeout_s):
            yield
        return
    with (
        catalog_lock(lake, MAINTENANCE_LOCK, timeout_s, on_wait=_wait_notice, shared=True),
        catalog_lock(lake, "exclusive", timeout_s, on_wait=_wait_notice),
    ):
        yield


def _waiting_message(db_path: Path) -> str:
    return f"waiting for {db_path.name}: another LITMUS process holds it (lock {db_path.name}.lock)"


def _busy_message(db_path: Path, timeout_s: float) -> str:
    return (
        f"warehouse {db_path} stayed busy for {timeout_s:.0f}s "
        "(another LITMUS process is writing to it)"
    )


@contextmanager
def reader_lock(db_path: Path, timeout_s: float) -> Iterator[None]:
    """A shared lock: waits for a writer, never for another reader. Creates nothing: with no
    lock file (or one this user cannot open) there is no writer to wait for."""
    lock_path = db_path.with_name(db_path.name + ".lock")
    try:
        fd: int | None = os.open(lock_path, os.O_RDONLY)
    except OSError:
        fd = None
    if fd is None:
        yield
        return
    with _flocked(fd, db_path, timeout_s, fcntl.LOCK_SH):
        yield


@contextmanager
def _flocked(fd: int, db_path: Path, timeout_s: float, mode: int) -> Iterator[None]:
    told = False
    try:
        deadline = time.monotonic() + timeout_s
        delay = 0.02
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WarehouseBusyError(_busy_message(db_path, timeout_s)) from None
                if not told and _wait_notice is not None:
                    told = True  # say once why nothing seems to happen
                    _wait_notice(_waiting_message(db_path))
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


@contextmanager
def connect(
    db_path: str | Path, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse with the cross-process writer lock held for the connection's life
    (on the lake: no such lock; the schema upgraded under the catalog's advisory lock)."""
    path = Path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lake = lake_from_environment()
    if lake is not None:
        with _connect_lake(lake, path, timeout_s=timeout_s) as con:
            yield con
        return
    with writer_lock(path, timeout_s):
        con = duckdb.connect(str(path))
        try:
            limit_memory(con)
            con.execute("SET max_vacuum_tasks = 0")  # see RECLAIM_DELETED_SHARE
            try:
                upgrade_schema(con)
            except (WarehouseUpgradeError, WarehouseVersionError) as error:
                raise type(error)(f"{path}: {error}") from None
            yield con
            # Only a connection whose changes are not yet checkpointed (its log is not empty)
            # checkpoints at its close. The work is committed; merging is housekeeping a later
            # writer does again.
            wal = wal_path(path)
            if wal.exists() and wal.stat().st_size > 0:
                with suppress(duckdb.Error):
                    reclaim_deleted_rows_when_due(con)
        finally:
            con.close()  # checkpoints the file (with row-group merges only when due)


# A checkpoint (every writer's close, and DuckDB's own once the log outgrows its threshold)
# merges adjacent row groups that fit in fewer ("vacuum"). A configuration's rows are written
# as whole row groups of their own plus a short tail, so at each step's checkpoint DuckDB
# rewrote about a whole configuration only to merge the tails (docs/performance.md, "Row
# groups left as written"). Merging pays only to give back the rows deletes leave behind in
# row groups that are still partly alive (a fully deleted row group is dropped without it), so
# it is off (dbt's connection too: ``dbt_project/profiles.yml``), and a writer turns it back on
# for its closing checkpoint once some table's deleted rows are both this share of the rows it
# stores and a row group's worth, what one merge gives back. That checkpoint merges in every
# table, tails included (a writer that changed nothing does not checkpoint: the next one does).
# A small table rewritten at every run (tokens, gate verdicts) never sets it off, so it does not
# make every step merge every configuration's tails again.
RECLAIM_DELETED_SHARE = 0.25
ROW_GROUP_ROWS = 122_880  # DuckDB's rows per row group (its default; LITMUS keeps it)
RECLAIM_DELETED_ROWS = ROW_GROUP_ROWS


def wal_path(db_path: Path) -> Path:
    """DuckDB's write-ahead log beside ``db_path``: the changes not yet checkpointed."""
    return db_path.with_name(db_path.name + ".wal")


def deleted_rows(
    con: duckdb.DuckDBPyConnection, *, min_stored: int = 1
) -> dict[str, tuple[int, int]]:
    """Per table storing at least ``min_stored`` rows: (rows it stores, of them deleted).
    DuckDB's ``estimated_size`` counts a deleted row until a checkpoint merges its row group
    away."""
    stored = con.execute(
        "SELECT table_name, estimated_size FROM duckdb_tables() "
        "WHERE database_name = current_database() AND NOT temporary AND estimated_size >= ?",
        [max(1, min_stored)],
    ).fetchall()
    found: dict[str, tuple[int, int]] = {}
    for name, size in stored:
        live = con.execute("SELECT count(*) FROM query_table(?)", [name]).fetchall()[0][0]
        found[name] = (int(size), max(0, int(size) - int(live)))
    return found


def reclaim_deleted_rows_when_due(con: duckdb.DuckDBPyConnection) -> bool:
    """Turn row-group merging back on for this connection's closing checkpoint when a table's
    deleted rows reach both :data:`RECLAIM_DELETED_SHARE` of it and :data:`RECLAIM_DELETED_ROWS`;
    whether it did."""
    due = any(
        deleted >= RECLAIM_DELETED_ROWS and deleted >= RECLAIM_DELETED_SHARE * stored
        # a table storing fewer rows cannot hold that many deleted ones: not even counted
        for stored, deleted in deleted_rows(con, min_stored=RECLAIM_DELETED_ROWS).values()
    )
    if due:
        con.execute("RESET max_vacuum_tasks")
    return due


def warehouse_exists(db_path: str | Path) -> bool:
    """Whether there is a warehouse to read: the embedded file at ``db_path``; a configured
    lake always (its first writer creates its tables; reading a lake never written fails
    with :class:`WarehouseMissingError`)."""
    return lake_from_environment() is not None or Path(db_path).is_file()


# The lake connections open in this process, with their lake (what :func:`serialized` locks).
_lake_connections: dict[int, LakeSettings] = {}


@contextmanager
def _connect_lake(
    lake: LakeSettings, path: Path, *, timeout_s: float, read_only: bool = False
) -> Iterator[duckdb.DuckDBPyConnection]:
    spill = path.with_name(path.name + ".tmp")  # what the embedded file spills to
    with ExitStack() as held:
        if not read_only:  # no writer beside lake maintenance
            held.enter_context(
                catalog_lock(lake, MAINTENANCE_LOCK, timeout_s, on_wait=_wait_notice, shared=True)
            )
        with _opened_lake(lake, spill, timeout_s=timeout_s, read_only=read_only) as con:
            yield con


@contextmanager
def _opened_lake(
    lake: LakeSettings, spill: Path, *, timeout_s: float, read_only: bool
) -> Iterator[duckdb.DuckDBPyConnection]:
    try:
        opened = open_lake(lake, read_only=read_only, temp_directory=spill)
        con = opened.__enter__()
    except duckdb.Error as error:
        if read_only:
            raise WarehouseMissingError(f"no lake to read at {lake.catalog}: {error}") from None
        raise
    _lake_connections[id(con)] = lake
    try:
        limit_memory(con)
        try:
            if read_only:
                check_schema_version(con)
            elif schema_version(con) != latest_schema_version():
                with catalog_lock(lake, "schema", timeout_s, on_wait=_wait_notice):
                    upgrade_schema(con, keyed=False)
        except (WarehouseUpgradeError, WarehouseVersionError) as error:
            raise type(error)(f"lake {lake.catalog}: {error}") from None
        yield con
    finally:
        _lake_connections.pop(id(con), None)
        opened.__exit__(None, None, None)


@contextmanager
def serialized(
    con: duckdb.DuckDBPyConnection, purpose: str, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> Iterator[None]:
    """Run the block alone among the warehouse's writers for ``purpose`` (work whose
    check-then-insert must not interleave, as registering a suite). The embedded file's
    writer lock already makes every connection alone; a lake connection takes the catalog's
    advisory lock for ``purpose``. Open no transaction before it: one that began earlier reads
    a snapshot from before the other writer's commit."""
    lake = _lake_connections.get(id(con))
    if lake is None:
        yield
        return
    with catalog_lock(lake, purpose, timeout_s, on_wait=_wait_notice):
        yield


# How often a unit of work that lost a write-write race on the lake is run again.
CONFLICT_ATTEMPTS = 6


def is_write_conflict(error: BaseException) -> bool:
    """A commit that lost to another writer's concurrent change (DuckLake's optimistic
    transactions: "Transaction conflict", "another transaction has deleted from it")."""
    text = str(error)
    return isinstance(error, duckdb.Error) and (
        "conflict" in text.lower() or "another transaction" in text
    )


def retry_on_conflict(work: Callable[[], T], *, what: str, attempts: int = CONFLICT_ATTEMPTS) -> T:
    """``work()``, run again (after a short random wait growing each time) while it fails on a
    write conflict, at most ``attempts`` times in all; each retry is logged. ``work`` must be
    one whole transaction (its rollback undoes everything it did). The embedded warehouse
    never conflicts (one writer at a time), so there it runs once."""
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except duckdb.Error as error:
            if not is_write_conflict(error) or attempt == attempts:
                raise
            wait_s = min(2.0, 0.05 * 2**attempt) * (0.5 + random.random())
            message = (
                f"{what}: write conflict with another writer (attempt {attempt} of {attempts}),"
                f" retrying in {wait_s:.2f}s: {str(error).splitlines()[0][:200]}"
            )
            logger.warning(message)
            if _wait_notice is not None:
                _wait_notice(message)
            time.sleep(wait_s)
    raise AssertionError("unreachable")  # the loop returns or raises


@contextmanager
def connect_read_only(
    db_path: str | Path, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open an existing warehouse for reading only (``litmus status``, ``verify``): nothing
    is created, not the file, its folder or a table, and a read-only home is enough."""
    path = Path(db_path)
    lake = lake_from_environment()
    if lake is not None:
        with _connect_lake(lake, path, timeout_s=timeout_s, read_only=True) as con:
            yield con
        return
    if not path.is_file():
        raise WarehouseMissingError(
            f"no warehouse at {path}: nothing has been ingested here (`litmus run` creates "
            "it; --home picks another state folder)"
        )
    with reader_lock(path, timeout_s):
        con = duckdb.connect(str(path), read_only=True)
        try:
            limit_memory(con)
            try:
                check_schema_version(con)
            except WarehouseVersionError as error:
                raise WarehouseVersionError(f"{path}: {error}") from None
            yield con
        finally:
            con.close()


def quoted_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (an embedded quote doubled)."""
    return '"' + name.replace('"', '""') + '"'


def atomically(con: duckdb.DuckDBPyConnection, work: Callable[[], T], *, what: str) -> T:
    """``work()`` as one transaction: committed at its end, rolled back when anything (an
    interrupt included) escapes it. Every write transaction of LITMUS goes through here. On
    the lake a commit that lost a write-write race to another writer is rolled back and
    ``work`` run again (:func:`retry_on_conflict`: bounded, each retry logged), so ``work``
    reads what it decides on inside itself, and a retry sees the other writer's commit;
    ``what`` names it in the log. The embedded file has one writer at a time: it runs once."""

    def once() -> T:
        with transaction(con):
            return work()

    return retry_on_conflict(once, what=what)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the block as one DuckDB transaction: committed at its end, rolled back when
    anything (an interrupt included) escapes it. Writers use :func:`atomically`, which
    retries a lost write conflict; this is its one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        roll_back(con)
        raise


def roll_back(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back the open transaction after an error, keeping that error the one reported.

    A COMMIT that fails (a full disk: "No space left on device") has already ended the
    transaction, and ROLLBACK would then raise "cannot rollback - no transaction is active",
    hiding the cause; so a failing ROLLBACK is not raised here."""
    with suppress(duckdb.Error):  # nothing left to roll back: the caller re-raises
        con.execute("ROLLBACK")


def execute_many(
    con: duckdb.DuckDBPyConnection, sql: str, parameter_sets: Sequence[Sequence[object]]
) -> None:
    """``con.executemany(sql, parameter_sets)``, doing nothing for no parameter sets (DuckDB
    refuses an empty list, and an empty home or an all-quarantined landing has none)."""
    if parameter_sets:
        con.executemany(sql, parameter_sets)


def ordered_text_digests(
    con: duckdb.DuckDBPyConnection,
    rows_sql: str,
    order_by: str,
    parameters: dict[str, object] | None = None,
    *,
    batch_rows: int = 65_536,
) -> dict[str, str]:
    """``partition_key`` → the SHA-256 of its ``text`` values joined by newlines in the order
    ``order_by`` gives them (``rows_sql`` yields ``partition_key`` and ``text``; NULL texts
    are left out): the value of DuckDB's ``sha256(string_agg(text, chr(10) ORDER BY …))``.

    An ordered ``string_agg`` holds every group's whole text in memory at once and cannot
    spill: over 10 M trajectories that alone is more than the warehouse's memory limit. Here
    DuckDB sorts the rows (a sort spills) and the digest is fed batch by batch from the
    Arrow buffers, so memory stays one batch whatever the groups' size."""
    import hashlib

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    reader = con.execute(
        f"SELECT partition_key, text || chr(10) AS line FROM ({rows_sql}) "
        f"WHERE text IS NOT NULL ORDER BY partition_key, {order_by}",
        parameters or {},
    ).fetch_record_batch(batch_rows)
    digests: dict[str, str] = {}
    key: str | None = None
    digest = hashlib.sha256()
    separator = b""  # before a group's next row: none before its first
    for batch in reader:
        lines = batch.column(1).cast(pa.large_string())
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset :]
        data = memoryview(lines.buffers()[2] or b"")
        runs = pc.run_end_encode(batch.column(0), run_end_type=pa.int64())
        start = 0
        for run_key, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist(), strict=True):
            if run_key != key:
                if key is not None:
                    digests[key] = digest.hexdigest()
                key, digest, separator = run_key, hashlib.sha256(), b""
            digest.update(separator)
            digest.update(data[offsets[start] : offsets[end] - 1])  # its last newline waits
            separator, start = b"\n", end
    if key is not None:
        digests[key] = digest.hexdigest()
    return digests


def arrow_rows(frame: pd.DataFrame) -> pa.Table:
    """pandas → Arrow as the warehouse stores a frame: NaN/NA as NULL, text columns typed as
    strings (an all-null object column would otherwise be null-typed)."""
    import pyarrow as pa

    typed = frame.copy()
    for column in typed.columns:
        if typed[column].dtype == object:
            typed[column] = typed[column].astype("string")
    return pa.Table.from_pandas(typed, preserve_index=False)


def replace_rows(con: duckdb.DuckDBPyConnection, table_name: str, rows: object) -> None:
    """Replace every row of ``table_name`` (a fixed identifier, never user input; its columns are
    the schema's, litmus/sql/schema) with ``rows`` (a DataFrame or Arrow table), by column
    name. Call it inside :func:`transaction`, with whatever must commit together with it."""
    view = f"_incoming_{table_name}"
    con.register(view, rows)
    try:
        con.execute(f"DELETE FROM {table_name}")
        con.execute(f"INSERT INTO {table_name} BY NAME SELECT * FROM {view}")
    finally:
        con.unregister(view)


# What DuckDB may hold in memory while a file is ingested: the file's uncommitted rows spill
# to the database's temporary folder (``<db>.tmp``) beyond it, so a large file's ingestion
# stays within a bounded footprint instead of about four times the file (issue 14).
INGEST_MEMORY_LIMIT = "384MB"


def memory_limit() -> str:
    """The DuckDB memory limit of every warehouse connection: ``LITMUS_MEMORY_LIMIT`` when
    set (a DuckDB size such as ``2GB``), else :data:`DEFAULT_MEMORY_LIMIT`."""
    return os.environ.get(MEMORY_LIMIT_ENV, "").strip() or DEFAULT_MEMORY_LIMIT


def limit_memory(con: duckdb.DuckDBPyConnection, limit: str | None = None) -> None:
    """Set the connection's memory limit to ``limit`` (default: :func:`memory_limit`)."""
    chosen = limit or memory_limit()
    try:
        con.execute(f"SET memory_limit = {sql_literal(chosen)}")
    except duckdb.Error as error:
        source = f"{MEMORY_LIMIT_ENV}={chosen!r}" if limit is None else repr(chosen)
        raise LitmusError(
            f"{source} is not a DuckDB memory size (say e.g. 1GB or 512MB): {error}"
        ) from None


def out_of_memory_hint(error_class: str) -> str:
    """What to add to an error of class ``error_class`` (a name, as Dagster also records it):
    for DuckDB running out of the warehouse's memory limit, how to raise it; else nothing."""
    if error_class != "OutOfMemoryException":
        return ""
    return (
        f" (DuckDB reached the warehouse's memory limit, {memory_limit()}: set "
        f"{MEMORY_LIMIT_ENV} higher)"
    )


@contextmanager
def bounded_memory(
    con: duckdb.DuckDBPyConnection, limit: str = INGEST_MEMORY_LIMIT
) -> Iterator[None]:
    """DuckDB's memory limit set to ``limit`` for the block, then back to the warehouse's."""
    limit_memory(con, limit)
    try:
        yield
    finally:
        limit_memory(con)


# ----------------------------------------------------------------------------- the schema
#
# Every persistent table LITMUS writes is defined once, in the numbered files of
# ``litmus/sql/schema`` (dbt's models are dbt's). A writer connection applies the files the
# warehouse has not recorded in ``schema_migrations``, in version order and each in its own
# transaction, under the writer lock; a reader only checks the version and never creates
# anything. Other modules write rows into these tables, never their columns.

SCHEMA_DIR = Path(__file__).parent / "sql" / "schema"
_SCHEMA_FILE = re.compile(r"(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql")


class WarehouseVersionError(LitmusError):
    """The warehouse's schema version is not the one this LITMUS reads and writes."""


@dataclass(frozen=True)
class Migration:
    """One schema file: its statements, applied once and recorded with its version."""

    version: int
    path: Path

    @property
    def description(self) -> str:
        """The file's first line without its ``--`` (what ``schema_migrations`` records)."""
        first = self.sql().split("\n", 1)[0]
        return first.removeprefix("--").strip() if first.startswith("--") else self.path.stem

    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")


@functools.cache
def migrations(directory: Path = SCHEMA_DIR) -> tuple[Migration, ...]:
    """The schema files in version order: ``0001_name.sql``, ``0002_name.sql``, … no gaps."""
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _SCHEMA_FILE.fullmatch(path.name)
        if match is None:
            raise ValueError(f"{path}: a schema file is named NNNN_description.sql")
        found.append(Migration(int(match["version"]), path))
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise ValueError(
                f"{migration.path}: schema version {migration.version}, expected {expected} "
                "(versions run 1, 2, 3, … without gaps)"
            )
    if not found:
        raise ValueError(f"{directory}: no schema files")
    return tuple(found)


def latest_schema_version() -> int:
    return migrations()[-1].version


def schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The highest schema version the warehouse recorded; None when it records none (a new
    file, or one written before schema versions)."""
    try:  # one cheap query on every open: no catalog lookup first
        rows = con.execute("SELECT max(version) FROM schema_migrations").fetchall()
    except duckdb.CatalogException:
        return None
    return int(rows[0][0] or 0)


def upgrade_schema(con: duckdb.DuckDBPyConnection, *, keyed: bool = True) -> None:
    """Apply the schema files the warehouse has not recorded (the caller holds the writer
    lock). A warehouse written before schema versions is adopted: brought to the shape of
    version 1 and recorded as such, its data kept. ``keyed=False`` (the lake, which has no
    keys): each file's PRIMARY KEY / UNIQUE declarations are left out (:func:`without_keys`);
    uniqueness is the publication gates' and dbt's tests' to enforce."""
    found = schema_version(con)
    _refuse_newer(found)
    pending = migrations()[found or 0 :]
    if found is None and pending and _holds_tables(con):
        with transaction(con):
            _adopt_unversioned(con, pending[0])
            _record(con, pending[0], adopted=True)
        pending = pending[1:]
    for migration in pending:
        with transaction(con):
            con.execute(migration.sql() if keyed else without_keys(migration.sql()))
            _record(con, migration, adopted=False)


# A column's own key (its NOT NULL kept) and a table's key clause (its columns are NOT NULL).
_COLUMN_KEY = re.compile(r"\b(PRIMARY KEY|UNIQUE)(?=\s*(,|\n|\)|--))")
_TABLE_KEY = re.compile(r",(\s*--[^\n]*)?\s*\n\s*(PRIMARY KEY|UNIQUE)\s*\([^)]*\)")


def without_keys(sql: str) -> str:
    """A schema file's statements without PRIMARY KEY / UNIQUE (DuckLake has neither): a
    column's key becomes NOT NULL, a table's key clause goes. Proven against the keyed
    statements by tests/test_warehouse_lake.py (same tables, columns, types, nullability)."""
    if re.search(r"\bCREATE\s+(UNIQUE\s+)?INDEX\b|\bSEQUENCE\b", sql, re.IGNORECASE):
        raise WarehouseUpgradeError(
            "a schema file creates an index or a sequence, which the lake cannot hold: "
            "schema files from 0007 on use neither (docs/operations.md)"
        )
    return _COLUMN_KEY.sub("NOT NULL", _TABLE_KEY.sub("", sql))


def check_schema_version(con: duckdb.DuckDBPyConnection) -> None:
    """What a reader does instead of upgrading: refuse a warehouse of another version."""
    found = schema_version(con)
    _refuse_newer(found)
    latest = migrations()[-1]
    if found == latest.version:
        return
    missing = ", ".join(m.path.name for m in migrations()[found or 0 :])
    written = (
        "has no schema version (written by a LITMUS from before schema versions)"
        if found is None
        else f"is at schema version {found}"
    )
    raise WarehouseVersionError(
        f"the warehouse {written}; this LITMUS reads version {latest.version} (not yet "
        f"applied: {missing} in {SCHEMA_DIR}). Run a command that writes (`litmus run`) "
        "once to upgrade it"
    )


def _refuse_newer(found: int | None) -> None:
    latest = migrations()[-1]
    if found is not None and found > latest.version:
        raise WarehouseVersionError(
            f"the warehouse is at schema version {found}, newer than this LITMUS knows "
            f"(its latest is {latest.version}, {latest.path.name} in {SCHEMA_DIR}): use the "
            "LITMUS that wrote it, or another state folder (--home)"
        )


def _record(con: duckdb.DuckDBPyConnection, migration: Migration, *, adopted: bool) -> None:
    description = migration.description
    if adopted:
        description += " (adopted a warehouse written before schema versions)"
    con.execute(
        "INSERT INTO schema_migrations (version, applied_at, description) VALUES (?, ?, ?)",
        [migration.version, datetime.now(UTC).replace(tzinfo=None), description],
    )


def _holds_tables(con: duckdb.DuckDBPyConnection) -> bool:
    rows = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main'"
    ).fetchall()
    return bool(rows[0][0])


# ------------------------------------------------- adopting a warehouse from before versions

# Columns tables gained before schema versions existed: an older warehouse lacks them.
_LEGACY_COLUMNS: tuple[str, ...] = (
    "ALTER TABLE IF EXISTS suites ADD COLUMN IF NOT EXISTS sibling_policy VARCHAR",
    "ALTER TABLE IF EXISTS suite_instances ADD COLUMN IF NOT EXISTS private BOOLEAN DEFAULT false",
    "ALTER TABLE IF EXISTS raw_steps ADD COLUMN IF NOT EXISTS input_role VARCHAR",
    "ALTER TABLE IF EXISTS raw_steps ADD COLUMN IF NOT EXISTS input_content VARCHAR",
    "ALTER TABLE IF EXISTS trajectory_labels ADD COLUMN IF NOT EXISTS audit_reason_code VARCHAR",
)
# Labels written before oracle-less instances existed declared the harm evidence NOT NULL; it
# is now NULL (unknown) on a harmful instance without an oracle.
_DROP_NOT_NULL = {
    "attempted": "ALTER TABLE trajectory_labels ALTER COLUMN attempted DROP NOT NULL",
    "realized": "ALTER TABLE trajectory_labels ALTER COLUMN realized DROP NOT NULL",
    "blocked": "ALTER TABLE trajectory_labels ALTER COLUMN blocked DROP NOT NULL",
}
# Tables LITMUS recomputes from the others on every run: one of another shape is rebuilt
# empty (a configuration is then withheld until its next run fills them again).
DERIVED_TABLES: tuple[str, ...] = (
    "audited_trajectories",
    "publication_gates",
    "precision_flags",
    "labeling_agreement",
    "metric_cis",
    "public_private_gaps",
    "result_inputs",
    "release_drift",
    "plugin_deltas",
    "leaderboard",
    "audit_queue",
    "spot_check_sample",
    "run_fingerprints",
)
# Columns raw_steps gained after its first release, each filled from the step's trajectory.
_STEP_CONTEXT_COLUMNS = ("partition_key", "suite", "suite_version", "instance_id")


def _adopt_unversioned(con: duckdb.DuckDBPyConnection, baseline: Migration) -> None:
    """Bring a warehouse written before schema versions to ``baseline``'s shape, inside the
    caller's transaction: columns added since, raw_steps rebuilt with its step context,
    derived tables of an older shape dropped, then every missing table created."""
    steps_to_refill = _set_aside_raw_steps_without_context(con)
    for statement in _LEGACY_COLUMNS:
        con.execute(statement)
    still_required = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_name = 'trajectory_labels' AND is_nullable = 'NO' "
        "AND column_name IN ('attempted', 'realized', 'blocked') ORDER BY 1"
    ).fetchall()
    for (column,) in still_required:
        con.execute(_DROP_NOT_NULL[column])
    expected = _shapes_of(baseline)
    for table in DERIVED_TABLES:
        shape = _shape(con, table)
        if shape and shape != expected[table]:
            con.execute(f"DROP TABLE {table}")  # a constant name from DERIVED_TABLES
            if table == "audited_trajectories":  # the gates judged the rows dropped
                con.execute("DELETE FROM publication_gates")
    con.execute(baseline.sql())
    for table, columns in expected.items():
        missing = [name for name, _ in columns if name not in dict(_shape(con, table))]
        if missing:
            raise WarehouseUpgradeError(f"cannot upgrade {table}: it has no {', '.join(missing)}")
    if steps_to_refill:
        _refill_raw_steps(con)


def _set_aside_raw_steps_without_context(con: duckdb.DuckDBPyConnection) -> bool:
    """Rename a raw_steps written before the step context columns existed (the baseline then
    creates the new one); whether it did."""
    existing = table_columns(con, "raw_steps")
    present = [c for c in _STEP_CONTEXT_COLUMNS if c in existing]
    if not existing or len(present) == len(_STEP_CONTEXT_COLUMNS):
        return False
    if present:
        raise WarehouseUpgradeError(
            f"cannot upgrade raw_steps: it has only some of {_STEP_CONTEXT_COLUMNS}"
        )
    con.execute("ALTER TABLE raw_steps RENAME TO raw_steps_before_upgrade")
    return True


def _refill_raw_steps(con: duckdb.DuckDBPyConnection) -> None:
    before = con.execute("SELECT count(*) FROM raw_steps_before_upgrade").fetchall()[0][0]
    after = con.execute(
        "INSERT INTO raw_steps BY NAME "
        "SELECT s.*, t.partition_key, t.suite, t.suite_version, t.instance_id "
        "FROM raw_steps_before_upgrade s JOIN raw_trajectories t USING (trajectory_id)"
    ).fetchall()[0][0]
    if after != before:
        raise WarehouseUpgradeError(
            f"cannot upgrade raw_steps: {before - after} steps have no trajectory"
        )
    con.execute("DROP TABLE raw_steps_before_upgrade")


def _shape(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    """A table's (column, type) pairs in order; empty when there is no such table."""
    return [
        (name, kind)
        for name, kind in con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
    ]


def _shapes_of(migration: Migration) -> dict[str, list[tuple[str, str]]]:
    """Every base table a schema file creates, with its shape (built in a scratch database)."""
    with duckdb.connect() as scratch:
        scratch.execute(migration.sql())
        tables = [
            row[0]
            for row in scratch.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        return {table: _shape(scratch, table) for table in tables}


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    # fetchall, not fetchone: DuckDB 2 keeps a half-read result open, and the next con.sql()
    # on this connection would then fail
    rows = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchall()
    return bool(rows and rows[0][0])


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The column names of a table (or view) in ``main``, in declaration order."""
    return [
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
    ]
