"""The local instance's SQLite run history, with connections that stay open during a run.

The adapter for Dagster's private storage API (``dagster._core`` storage classes and the
instance ref): the only module that imports ``dagster._core`` or ``dagster._serdes``;
tests/test_adapters.py fails when a Dagster upgrade moves what it builds on.

Dagster's SQLite storages open a new SQLite connection (a fresh engine with ``NullPool``) for
every event they write and close it right after. In WAL mode closing the last connection to a
file checkpoints the log into the database and deletes it, and every commit syncs the log, so
each event cost several ``fsync`` calls: a ``litmus run`` writes about 1,300 events (step
starts and successes, materializations, check evaluations and their planned events, mirrored
in the cross-run index), which took a third of the run's wall time on a busy disk.

These subclasses keep one pooled engine per database file instead (at most a few run shards
at a time, plus the index and the run database) and commit with ``synchronous=NORMAL``: in WAL
mode a commit is then durable against a crash of the process (the log is written before
the commit returns) and the database can never be corrupted, only the last commits before a
power failure can be lost, which the run history tolerates (the warehouse, not Dagster's
history, is the record of what was scored). The files, their schema and WAL journaling are
exactly Dagster's, so ``dagster dev`` and the daemon (default storage) read and write the same
history.

Taking a pooled connection is a section a stop signal must not cut into
(``litmus_dagster.stop.deferred``): interrupted between the checkout and its caller's block,
the connection stayed checked out with its write transaction open, and every later write of
the process waited out SQLite's busy timeout (tests/test_run_history_storage.py).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster
import sqlalchemy as db
import yaml
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData

from litmus_dagster import stop

# Each open run shard holds a file descriptor; runs are written one after another, so a few
# are enough (the current run, and the ones a caller still reads back).
OPEN_RUN_SHARDS = 4
# An empty run shard as Dagster's ``_initdb`` leaves it (schema, alembic stamp, WAL mode),
# one per Dagster version, kept beside the history (``<home>/dagster``).
SHARD_TEMPLATE = "litmus_shard_template"


def _pooled_engine(conn_string: str) -> db.engine.Engine:
    # Dagster's own wait for a lock held by another process (the UI, the daemon)
    engine = db.create_engine(
        conn_string,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        pool_size=1,
        max_overflow=4,
    )

    @db.event.listens_for(engine, "connect")
    def _normal_sync(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")

    return engine


class LitmusSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's per-run-sharded SQLite event log with one open engine per shard."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, db.engine.Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._template: bytes | None = None
        super().__init__(base_dir, inst_data)

    def _engine(self, shard: str) -> db.engine.Engine:
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            if shard not in self._initialized_dbs and shard != INDEX_SHARD_NAME:
                self._seed_shard(shard)  # _initdb then finds the head revision: no DDL
            engine = _pooled_engine(self.conn_string_for_shard(shard))
            self._engines[shard] = engine
            runs = [name for name in self._engines if name != INDEX_SHARD_NAME]
            for stale in runs[:-OPEN_RUN_SHARDS]:
                self._engines.pop(stale).dispose()
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[db.engine.Connection]:
        # a stop signal must not land between taking the lock and the caller's block
        with stop.deferred(), self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _seed_shard(self, shard: str) -> None:
        """Start a new run's shard as a copy of the empty template instead of creating its
        tables one DDL statement at a time (about a third of a CPU-second per run: every
        configuration is a run). The copy is byte for byte what ``_initdb`` writes; a shard
        that already exists, or one another process creates first, is left alone."""
        path = self.path_for_shard(shard)
        if os.path.exists(path):
            return
        template = self._shard_template()
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False) as copy:
            copy.write(template)
        try:
            os.link(copy.name, path)  # never over a shard someone else just created
        except FileExistsError:
            pass
        finally:
            os.unlink(copy.name)

    def _shard_template(self) -> bytes:
        if self._template is None:
            folder = os.path.join(os.path.dirname(os.path.dirname(self._base_dir)), SHARD_TEMPLATE)
            path = os.path.join(folder, f"dagster-{dagster.__version__}.db")
            if not os.path.exists(path):
                os.makedirs(folder, exist_ok=True)
                with tempfile.TemporaryDirectory(dir=folder) as scratch:
                    fresh = os.path.join(scratch, "shard.db")
                    engine = _pooled_engine(f"sqlite:///{fresh}")
                    self._initdb(engine)
                    engine.dispose()  # the last connection's close checkpoints the WAL away
                    os.replace(fresh, path)
            with open(path, "rb") as template:
                self._template = template.read()
        return self._template

    def delete_events(self, run_id: str) -> None:
        self._close_shard(run_id)
        super().delete_events(run_id)

    def wipe(self) -> None:
        self.dispose()
        super().wipe()

    def _close_shard(self, shard: str) -> None:
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
        if engine is not None:
            engine.dispose()

    def dispose(self) -> None:
        with self._engines_lock:
            engines = list(self._engines.values())
            self._engines.clear()
        for engine in engines:
            engine.dispose()
        super().dispose()


class LitmusSqliteRunStorage(SqliteRunStorage):
    """Dagster's SQLite run storage (``runs.db``) with one open engine."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        super().__init__(conn_string, inst_data)
        self._pooled = _pooled_engine(conn_string)

    @contextmanager
    def connect(self) -> Iterator[db.engine.Connection]:
        with stop.deferred(), self._pooled.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        self._pooled.dispose()
        super().dispose()


class LitmusSqliteStorage(DagsterSqliteStorage):
    """The local instance's storage (``<home>/dagster``): Dagster's SQLite layout, with the
    run and event databases kept open (the schedule storage is Dagster's own)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        # DagsterSqliteStorage.__init__ with the two subclasses (whose constructors create or
        # migrate the files exactly as Dagster's do)
        self.base_dir = base_dir
        self._run_storage = LitmusSqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = LitmusSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> LitmusSqliteStorage:
        # (Dagster's names DagsterSqliteStorage itself, not cls)
        return cls(str(config_value["base_dir"]), inst_data=inst_data)

    @staticmethod
    def class_data(base_dir: str) -> ConfigurableClassData:
        """How an instance ref names this storage over ``base_dir`` (``<home>/dagster``)."""
        return ConfigurableClassData(
            LitmusSqliteStorage.__module__,
            LitmusSqliteStorage.__name__,
            yaml.dump({"base_dir": base_dir}, default_flow_style=False),
        )


def instance_ref(home: str) -> InstanceRef:
    """The instance ref of the Dagster home ``home``: its ``dagster.yaml`` as Dagster reads
    it, with this storage in place of Dagster's default SQLite one (a storage the file names,
    Postgres say, is used as it is)."""
    ref = InstanceRef.from_dir(home)
    if ref.storage_data == InstanceRef.config_defaults(home)["storage"]:
        ref = ref._replace(storage_data=LitmusSqliteStorage.class_data(home))
    return ref
