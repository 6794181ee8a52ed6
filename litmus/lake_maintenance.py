"""Lake maintenance: DuckLake's compaction, snapshot expiry and file clean-up, run alone.

A lake only grows: every write adds Parquet files (and delete files for the rows it
replaced), every commit a snapshot, and nothing is removed while a snapshot refers to it.
:func:`maintain_lake` runs DuckLake's maintenance functions in the order its ``CHECKPOINT``
does (DuckLake 0.3, the extension built for DuckDB 1.5.5), but for flushing inlined rows
(small writes DuckLake keeps in the catalog rather than in files; they expire with their
snapshots): snapshots older than ``keep`` expired, adjacent small files merged, files with
many deleted rows rewritten, then the files nothing refers to any more deleted once they
are older than ``keep`` (a reader may still scan a file until then), and files the catalog
never tracked (left by a writer killed mid-transaction) likewise. None of these adds a file.

Maintenance runs with no writer beside it (ducklake #1094, #1472): it holds the catalog's
maintenance lock exclusively, which every writer holds shared for its connection's life
(litmus.warehouse), so it waits for the writers under way and they wait for it. The rows
every table holds are the same before and after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import duckdb

from litmus.warehouse import DEFAULT_LOCK_TIMEOUT_S
from litmus.warehouse_lake import (
    LAKE_ALIAS,
    MAINTENANCE_LOCK,
    LakeSettings,
    catalog_lock,
    lake_from_environment,
    open_lake,
    sql_literal,
)

DEFAULT_KEEP = timedelta(days=7)
_METADATA = f"__ducklake_metadata_{LAKE_ALIAS}"


@dataclass(frozen=True)
class LakeFiles:
    """What the catalog tracks: data files, delete files, snapshots."""

    data_files: int
    delete_files: int
    snapshots: int

    @property
    def files(self) -> int:
        return self.data_files + self.delete_files


@dataclass(frozen=True)
class MaintenanceReport:
    before: LakeFiles
    after: LakeFiles
    files_deleted: int  # from the data path: no longer referenced, or never tracked

    def summary(self) -> str:
        return (
            f"lake files {self.before.files:,} -> {self.after.files:,}, snapshots "
            f"{self.before.snapshots:,} -> {self.after.snapshots:,}, "
            f"{self.files_deleted:,} files deleted from the data path"
        )


def lake_files(con: duckdb.DuckDBPyConnection) -> LakeFiles:
    """The files and snapshots the lake's catalog tracks (live or kept for time travel)."""
    data, deletes, snapshots = con.execute(
        f"""
        SELECT (SELECT count(*) FROM {_METADATA}.ducklake_data_file),
               (SELECT count(*) FROM {_METADATA}.ducklake_delete_file),
               (SELECT count(*) FROM {_METADATA}.ducklake_snapshot)
        """
    ).fetchall()[0]
    return LakeFiles(int(data), int(deletes), int(snapshots))


def maintain_lake(
    lake: LakeSettings,
    *,
    keep: timedelta = DEFAULT_KEEP,
    timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
) -> MaintenanceReport:
    """Compact the lake and drop what is older than ``keep`` (see the module doc), alone."""
    say = progress or (lambda _: None)
    with catalog_lock(lake, MAINTENANCE_LOCK, timeout_s, on_wait=say), open_lake(lake) as con:
        before = lake_files(con)
        # read at each step: what a step before it scheduled for deletion counts its age
        # from then (with keep = 0, everything scheduled so far goes)
        cutoff = f"now() - INTERVAL '{max(0, int(keep.total_seconds()))} seconds'"
        alias = sql_literal(LAKE_ALIAS)
        deleted = 0
        for step, statement in (
            (
                "expiring old snapshots",
                f"CALL ducklake_expire_snapshots({alias}, older_than => {cutoff})",
            ),
            ("merging adjacent files", f"CALL ducklake_merge_adjacent_files({alias})"),
            ("rewriting files with deleted rows", f"CALL ducklake_rewrite_data_files({alias})"),
            (
                "deleting files no longer referenced",
                f"CALL ducklake_cleanup_old_files({alias}, older_than => {cutoff})",
            ),
            (
                "deleting files never tracked",
                f"CALL ducklake_delete_orphaned_files({alias}, older_than => {cutoff})",
            ),
        ):
            say(step)
            rows = con.execute(statement).fetchall()
            if step.startswith("deleting"):
                deleted += len(rows)
        after = lake_files(con)
    return MaintenanceReport(before, after, deleted)


def maintain_warehouse(
    *, keep: timedelta = DEFAULT_KEEP, progress: Callable[[str], None] | None = None
) -> MaintenanceReport | None:
    """Maintain the lake ``LITMUS_WAREHOUSE`` names; None on the embedded file, which needs
    none (DuckDB reuses its free blocks; docs/operations.md, "Deleted rows")."""
    lake = lake_from_environment()
    return None if lake is None else maintain_lake(lake, keep=keep, progress=progress)


def parquet_files(lake: LakeSettings) -> int:
    """How many Parquet files a local lake's data folder holds (tests, benchmarks)."""
    return sum(1 for _ in Path(lake.data_path).rglob("*.parquet"))
