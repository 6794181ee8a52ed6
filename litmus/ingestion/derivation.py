"""What ingestion derived from each raw file: digests to notice a change, and the rows
ingested again to prove one (SPEC §10; issue 44).

Per raw file and configuration, the number of ``raw_trajectories``, ``raw_steps`` and
``raw_post_states`` rows ingestion stored from it and a digest of them; per raw file, the same
of its ``quarantine`` rows. They are computed in DuckDB in the file's ingestion transaction,
from the rows being stored (``raw_file_digests``), and again the same way from the stored
rows:

- before a configuration is labeled (:func:`check_configuration`): rows edited, inserted or
  deleted since their ingestion make labeling refuse, in one line;
- by ``litmus verify``, against the digests the receipt lists (a change since publication).

The digest is cheap (DuckDB's 64-bit ``hash`` of every stored column, summed over the rows;
0.1-0.3 s per 250,000 rows where canonical JSON and SHA-256 per row took 4-6 s): a tripwire,
not a proof. It cannot be one: whoever can write the warehouse can write its digests too.
The proof is ``litmus.trust.rederivation.rederive`` and :func:`compare_rows`:
``litmus verify`` ingests the raw files (pinned by their SHA-256 in the receipt) again into a
scratch warehouse with the same code and compares every stored row with the rows that gives,
exactly (``EXCEPT ALL``), per table, raw file and configuration.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from litmus.errors import LitmusError
from litmus.warehouse import atomically, quoted_identifier, table_columns
from litmus.warehouse_lake import sql_literal

# the quarantine columns a raw file (and the name it was landed under) determines: not its time
QUARANTINE_COLUMNS = ("source_name", "line_no", "field", "reason", "raw_excerpt")
EMPTY_DIGEST = "0"
# Names the digest function: DuckDB's hash of a fixed text. A DuckDB whose hash differs gives
# another scheme, and the digests recorded under the old one are taken again (record_pending).
SCHEME_SQL = "'duckdb-hash-sum:' || hash('litmus raw file digest')::VARCHAR"
PENDING = "pending"

# (file hash, table, configuration or None) → (rows, digest)
DigestKey = tuple[str | None, str, str | None]
Digests = dict[DigestKey, tuple[int, str]]


class DerivationError(LitmusError):
    """Stored rows that no longer are what ingestion derived from their raw file."""


def _row_hash(alias: str, columns: Sequence[str]) -> str:
    """SQL: a row's 64-bit hash, over every column by name (a struct: NULLs count)."""
    pairs = ", ".join(f"'{name}': {alias}.{quoted_identifier(name)}" for name in columns)
    return f"hash({{{pairs}}})::HUGEINT"


# rows summed, not XORed: a row stored twice does not cancel out
_DIGEST = "coalesce(sum(h), 0)::VARCHAR"


def _trajectories_sql(con: duckdb.DuckDBPyConnection, source: str) -> str:
    row = _row_hash("t", table_columns(con, "raw_trajectories"))
    return f"""
        SELECT file_hash, 'raw_trajectories' AS table_name, partition_key, count(*) AS n_rows,
               {_DIGEST} AS digest
        FROM (SELECT t.source_file_hash AS file_hash, t.partition_key, {row} AS h
              FROM {source} t)
        GROUP BY ALL
    """


# The tables whose rows belong to a trajectory (and through it to a raw file).
CHILD_TABLES = ("raw_steps", "raw_post_states")


def _child_sql(con: duckdb.DuckDBPyConnection, table: str, source: str) -> str:
    """``source``: rows with every column of ``table`` (one of CHILD_TABLES) and their
    trajectory's ``file_hash``."""
    if table not in CHILD_TABLES:
        raise ValueError(f"not a table of trajectory rows: {table!r}")
    row = _row_hash("s", table_columns(con, table))
    return f"""
        SELECT file_hash, '{table}' AS table_name, partition_key, count(*) AS n_rows,
               {_DIGEST} AS digest
        FROM (SELECT s.file_hash, s.partition_key, {row} AS h FROM {source} s)
        GROUP BY ALL
    """


_QUARANTINE_SQL = f"""
    SELECT source_file_hash AS file_hash, 'quarantine' AS table_name,
           NULL::VARCHAR AS partition_key, count(*) AS n_rows, {_DIGEST} AS digest
    FROM (SELECT q.source_file_hash, {_row_hash("q", QUARANTINE_COLUMNS)} AS h FROM <source> q)
    GROUP BY ALL
"""

# The rows ingestion is about to store (its staged tables, as litmus.ingestion.run_files
# publishes them): steps take their trajectory's partition and instance.
_STAGED_STEPS = """(
    SELECT s.* EXCLUDE (source_line, partition_key, suite, suite_version, instance_id),
           t.partition_key, t.suite, t.suite_version, t.instance_id,
           t.source_file_hash AS file_hash
    FROM staged_steps s
    JOIN staged_trajectories t
      ON t.source_line = s.source_line AND t.trajectory_id = s.trajectory_id
)"""
_STAGED_POST_STATES = """(
    SELECT trajectory_id, partition_key, post_state, source_file_hash AS file_hash
    FROM staged_trajectories WHERE post_state IS NOT NULL
)"""
_STAGED = {"raw_steps": _STAGED_STEPS, "raw_post_states": _STAGED_POST_STATES}
# A step (post-state) whose trajectory is gone keeps its configuration and has no raw file.
_STORED_CHILDREN = """(
    SELECT s.*, t.source_file_hash AS file_hash
    FROM {table} s
    LEFT JOIN (SELECT DISTINCT trajectory_id, source_file_hash FROM raw_trajectories
               WHERE {where}) t USING (trajectory_id)
    WHERE {step_where}
)"""


def _insert(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> None:
    con.execute(f"INSERT INTO raw_file_digests SELECT *, {SCHEME_SQL} FROM ({sql})", list(params))


def record_staged(con: duckdb.DuckDBPyConnection, file_hash: str) -> None:
    """Record the digests of a file's staged rows (in its ingestion transaction; they are
    what it stores). Its quarantine row is written even when nothing was quarantined."""
    _insert(con, _trajectories_sql(con, "staged_trajectories"))
    for table in CHILD_TABLES:
        _insert(con, _child_sql(con, table, _STAGED[table]))
    _insert(
        con,
        f"SELECT ?, 'quarantine', NULL, count(*), {_DIGEST} "
        f"FROM (SELECT {_row_hash('q', QUARANTINE_COLUMNS)} AS h FROM staged_quarantine q)",
        [file_hash],
    )


def record_stored(con: duckdb.DuckDBPyConnection, file_hash: str) -> None:
    """Record a file's digests again from its stored rows: after a retry of its quarantined
    records (a suite loaded since) changed them, and once for a file ingested before digests
    were recorded."""
    con.execute("DELETE FROM raw_file_digests WHERE file_hash = ?", [file_hash])
    found = _stored_digests(con, file_hash=file_hash)
    found.setdefault((file_hash, "quarantine", None), (0, EMPTY_DIGEST))
    scheme = con.execute(f"SELECT {SCHEME_SQL}").fetchall()[0][0]
    con.executemany(
        "INSERT INTO raw_file_digests VALUES (?, ?, ?, ?, ?, ?)",
        [[*key, *value, scheme] for key, value in sorted(found.items(), key=_order)],
    )


def record_pending(con: duckdb.DuckDBPyConnection) -> int:
    """Record the digests of every raw file ingested before digests were recorded (marked
    ``pending`` when the warehouse was upgraded) or recorded under another digest scheme:
    trust on first use, from the rows stored now. How many files."""
    pending = [
        row[0]
        for row in con.execute(
            f"SELECT DISTINCT file_hash FROM raw_file_digests "
            f"WHERE table_name = ? OR scheme <> {SCHEME_SQL} ORDER BY 1",
            [PENDING],
        ).fetchall()
    ]
    for file_hash in pending:  # each file's digests replaced in one transaction
        atomically(
            con,
            lambda file_hash=file_hash: record_stored(con, file_hash),
            what=f"digests of raw file {file_hash[:12]}",
        )
    return len(pending)


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> Digests:
    return {
        (file_hash, table, partition): (int(n), digest)
        for file_hash, table, partition, n, digest in con.execute(sql, list(params)).fetchall()
    }


def _stored_digests(
    con: duckdb.DuckDBPyConnection,
    *,
    file_hash: str | None = None,
    partition_key: str | None = None,
) -> Digests:
    """The digests of the rows stored now: all, one file's, or one configuration's (its
    trajectories and steps; quarantine rows belong to no configuration)."""
    if file_hash is not None:
        where, params = "source_file_hash = ?", [file_hash]
        child_where, child_params = "t.trajectory_id IS NOT NULL", params
    elif partition_key is not None:
        where, params = "partition_key = ?", [partition_key]
        child_where, child_params = "s.partition_key = ?", [partition_key, partition_key]
    else:
        where, params = "true", []
        child_where, child_params = "true", []
    trajectories = f"(SELECT * FROM raw_trajectories WHERE {where})"
    found = _fetch(con, _trajectories_sql(con, trajectories), params)
    for table in CHILD_TABLES:
        children = _STORED_CHILDREN.format(table=table, where=where, step_where=child_where)
        found |= _fetch(con, _child_sql(con, table, children), child_params)
    if partition_key is None:
        quarantine = f"(SELECT * FROM quarantine WHERE {where})"
        found |= _fetch(con, _QUARANTINE_SQL.replace("<source>", quarantine), params)
    return found


def recorded_digests(con: duckdb.DuckDBPyConnection, partition_key: str | None = None) -> Digests:
    """The digests recorded at ingestion (``raw_file_digests``): all, or one configuration's."""
    columns = "file_hash, table_name, partition_key, n_rows, digest"
    if partition_key is None:
        return _fetch(con, f"SELECT {columns} FROM raw_file_digests")
    return _fetch(
        con,
        f"SELECT {columns} FROM raw_file_digests WHERE partition_key = ?",
        [partition_key],
    )


def stored_digests(con: duckdb.DuckDBPyConnection, partition_key: str | None = None) -> Digests:
    return _stored_digests(con, partition_key=partition_key)


def _order(item: tuple[DigestKey, Any]) -> tuple[str, str, str]:
    (file_hash, table, partition), _ = item
    return (file_hash or "", table, partition or "")


@dataclass(frozen=True)
class Difference:
    """One (file, table, configuration) whose rows differ from what was derived."""

    file_hash: str | None
    table: str
    partition_key: str | None
    expected: tuple[int, str]
    found: tuple[int, str]

    def sentence(self, names: Mapping[str, str], found_where: str, expected_what: str) -> str:
        where = f"table {self.table}"
        if self.partition_key is not None:
            where += f", configuration {self.partition_key}"
        if self.file_hash is None:
            source = "rows of no raw file"
        else:
            name = names.get(self.file_hash)
            source = f"raw file {self.file_hash[:12]}…" + (f" ({name})" if name else "")
        (n_expected, d_expected), (n_found, d_found) = self.expected, self.found
        if n_expected != n_found:
            change = f"{n_found} row(s) {found_where}, {n_expected} {expected_what}"
        else:
            change = (
                f"{n_found} row(s) with digest {d_found[:12]} {found_where}, "
                f"{d_expected[:12]} {expected_what} (rows edited)"
            )
        return f"{where}, {source}: {change}"


def differences(expected: Digests, found: Digests) -> list[Difference]:
    """Every group whose rows differ; a group absent on one side has 0 rows there."""
    absent = (0, EMPTY_DIGEST)
    keys = sorted(set(expected) | set(found), key=lambda k: _order((k, None)))
    return [
        Difference(*key, expected.get(key, absent), found.get(key, absent))
        for key in keys
        if expected.get(key, absent) != found.get(key, absent)
    ]


def raw_file_names(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("SELECT file_hash, original_name FROM raw_files").fetchall())


def check_configuration(con: duckdb.DuckDBPyConnection, partition_key: str) -> None:
    """Refuse (one line) to label a configuration whose stored trajectories or steps are not
    what ingestion derived from their raw files: edited, inserted or deleted since."""
    found = differences(recorded_digests(con, partition_key), stored_digests(con, partition_key))
    if found:
        first = found[0].sentence(raw_file_names(con), "stored", "ingested")
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise DerivationError(
            f"configuration {partition_key}: refusing to label rows that no longer match "
            f"their raw file: {first}{more}; restore the warehouse from a backup or ingest "
            "the raw files into a fresh home"
        )


# ------------------------------------------------------------------- receipts and verify


def receipt_entries(digests: Digests, file_hash: str) -> list[dict[str, Any]]:
    """A raw file's derived rows as a receipt lists them."""
    return [
        {"table": table, "partition_key": partition, "rows": n, "digest": digest}
        for (owner, table, partition), (n, digest) in sorted(digests.items(), key=_order)
        if owner == file_hash
    ]


def from_receipt_entries(file_hash: str, entries: Iterable[Any]) -> Digests:
    """The digests a receipt lists for one raw file (malformed entries are left out: the
    field comparison names them)."""
    found: Digests = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("rows"), int):
            key = (file_hash, str(entry.get("table")), entry.get("partition_key"))
            found[key] = (entry["rows"], str(entry.get("digest")))
    return found


@dataclass(frozen=True)
class RowDifference:
    """Rows of one (table, raw file, configuration) that differ from the rows ingesting the
    raw file again gives: ``extra`` the warehouse holds and it does not give, ``lacking`` it
    gives and the warehouse does not hold (an edited row is one of each)."""

    table: str
    file_hash: str
    partition_key: str | None
    extra: int
    lacking: int

    def sentence(self, names: Mapping[str, str]) -> str:
        where = f"table {self.table}"
        if self.partition_key is not None:
            where += f", configuration {self.partition_key}"
        name = names.get(self.file_hash)
        source = f"raw file {self.file_hash[:12]}…" + (f" ({name})" if name else "")
        return (
            f"{where}, {source}: {self.extra} row(s) in the warehouse that ingesting the raw "
            f"file again does not give; {self.lacking} it gives that the warehouse lacks"
        )


def _set_difference_sql(mine: str, again: str, partition: str) -> str:
    return f"""
        WITH mine AS ({mine}), again AS ({again}),
             extra AS (SELECT * FROM mine EXCEPT ALL SELECT * FROM again),
             lacking AS (SELECT * FROM again EXCEPT ALL SELECT * FROM mine)
        SELECT file_hash, {partition} AS partition_key, sum(n_extra)::BIGINT,
               sum(n_lacking)::BIGINT
        FROM (SELECT *, 1 AS n_extra, 0 AS n_lacking FROM extra
              UNION ALL BY NAME SELECT *, 0 AS n_extra, 1 AS n_lacking FROM lacking)
        GROUP BY ALL ORDER BY ALL
    """


def compare_rows(
    con: duckdb.DuckDBPyConnection, rederived_db: Path, file_hashes: Sequence[str]
) -> list[RowDifference]:
    """Every stored row of ``file_hashes`` against the rows ingesting them again gave
    (the warehouse at ``rederived_db``), exactly: per table, raw file and configuration.
    ``con`` may be read-only; the scratch warehouse is attached read-only for the comparison
    and detached after."""
    files = list(file_hashes)
    trajectory_columns = ", ".join(
        quoted_identifier(c) for c in table_columns(con, "raw_trajectories")
    )
    quarantine_columns = ", ".join(QUARANTINE_COLUMNS)
    queries = {
        "raw_trajectories": _set_difference_sql(
            f"SELECT {trajectory_columns}, source_file_hash AS file_hash FROM raw_trajectories "
            "WHERE list_contains($files, source_file_hash)",
            f"SELECT {trajectory_columns}, source_file_hash AS file_hash "
            "FROM again.raw_trajectories",
            "partition_key",
        ),
        "quarantine": _set_difference_sql(
            f"SELECT {quarantine_columns}, source_file_hash AS file_hash FROM quarantine "
            "WHERE list_contains($files, source_file_hash)",
            f"SELECT {quarantine_columns}, source_file_hash AS file_hash FROM again.quarantine",
            "NULL::VARCHAR",
        ),
    }
    for table in CHILD_TABLES:
        columns = ", ".join(f"s.{quoted_identifier(c)}" for c in table_columns(con, table))
        queries[table] = _set_difference_sql(
            f"SELECT {columns}, t.source_file_hash AS file_hash FROM {table} s "
            "JOIN (SELECT DISTINCT trajectory_id, source_file_hash FROM raw_trajectories "
            "WHERE list_contains($files, source_file_hash)) t USING (trajectory_id)",
            f"SELECT {columns}, t.source_file_hash AS file_hash FROM again.{table} s "
            "JOIN (SELECT DISTINCT trajectory_id, source_file_hash FROM again.raw_trajectories)"
            " t USING (trajectory_id)",
            "partition_key",
        )
    order = ("raw_trajectories", *CHILD_TABLES, "quarantine")
    queries = {table: queries[table] for table in order}
    # ATTACH takes no parameters on every DuckDB version this runs on
    con.execute(f"ATTACH {sql_literal(str(rederived_db))} AS again (READ_ONLY)")
    try:
        return [
            RowDifference(table, file_hash, partition, int(extra), int(lacking))
            for table, sql in queries.items()
            for file_hash, partition, extra, lacking in con.execute(
                sql, {"files": files}
            ).fetchall()
        ]
    finally:
        con.execute("DETACH again")


def scratch_folder() -> tempfile.TemporaryDirectory[str]:
    """A temporary folder for :func:`rederive`'s warehouse, deleted when closed."""
    return tempfile.TemporaryDirectory(prefix="litmus-verify-")
