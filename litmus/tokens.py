"""Per-configuration write tokens: a random value replaced whenever a configuration's rows of a
table are rewritten, in the same transaction as the rows.

A result computed from one configuration's rows can record the token it read and keep its own
rows while the token is unchanged, without reading (or digesting) the rows again: the work of
a new release then follows what it changed, not the warehouse. This only holds because every
write of the table goes through one function that renews the token (``label_partition`` for
``trajectory_labels``, ``refresh_audited_partition`` for ``audited_trajectories``). The tokens
live in ``result_inputs`` (result = the table's name).

Each table has its own constant SQL below (no table name is ever spliced into SQL text).
"""

from __future__ import annotations

import uuid

import duckdb

from litmus.warehouse import execute_many

LABELED_ROWS = "trajectory_labels"
AUDITED_ROWS = "audited_trajectories"

# For each table: drop the tokens of configurations without rows; list configurations with
# rows but no token (written before tokens existed).
_TOKEN_BACKFILL_SQL: dict[str, tuple[str, str]] = {
    LABELED_ROWS: (
        """
        DELETE FROM result_inputs
        WHERE result = $result
          AND partition_key NOT IN (SELECT DISTINCT partition_key FROM trajectory_labels)
        """,
        """
        SELECT DISTINCT partition_key FROM trajectory_labels
        WHERE partition_key IS NOT NULL AND partition_key NOT IN (
            SELECT partition_key FROM result_inputs WHERE result = $result)
        ORDER BY 1
        """,
    ),
    AUDITED_ROWS: (
        """
        DELETE FROM result_inputs
        WHERE result = $result
          AND partition_key NOT IN (SELECT DISTINCT partition_key FROM audited_trajectories)
        """,
        """
        SELECT DISTINCT partition_key FROM audited_trajectories
        WHERE partition_key IS NOT NULL AND partition_key NOT IN (
            SELECT partition_key FROM result_inputs WHERE result = $result)
        ORDER BY 1
        """,
    ),
}


def renew_partition_token(con: duckdb.DuckDBPyConnection, result: str, partition_key: str) -> None:
    """A new token for ``partition_key``'s rows of ``result`` (call in the writing transaction)."""
    con.execute(
        "DELETE FROM result_inputs WHERE result = ? AND partition_key = ?", [result, partition_key]
    )
    con.execute(
        "INSERT INTO result_inputs VALUES (?, ?, ?)", [result, partition_key, uuid.uuid4().hex]
    )


def partition_tokens(con: duckdb.DuckDBPyConnection, result: str) -> dict[str, str]:
    """The token of each configuration with rows in ``result`` (``LABELED_ROWS`` or
    ``AUDITED_ROWS``; call inside a transaction). Rows without one (written before tokens
    existed) get one now: it stands for the rows as they are, and the next rewrite replaces
    it; tokens of configurations without rows are dropped. Reads ``DISTINCT partition_key``
    and ``result_inputs`` only."""
    drop_vanished, without_token = _TOKEN_BACKFILL_SQL[result]
    con.execute(drop_vanished, {"result": result})
    missing = con.execute(without_token, {"result": result}).fetchall()
    execute_many(
        con,
        "INSERT INTO result_inputs VALUES (?, ?, ?)",
        [[result, key, uuid.uuid4().hex] for (key,) in missing],
    )
    rows = con.execute(
        "SELECT partition_key, inputs_digest FROM result_inputs WHERE result = ?", [result]
    ).fetchall()
    return dict(rows)


def labeled_rows_tokens(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """:func:`partition_tokens` of ``trajectory_labels``."""
    return partition_tokens(con, LABELED_ROWS)


def audited_rows_tokens(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """:func:`partition_tokens` of ``audited_trajectories``."""
    return partition_tokens(con, AUDITED_ROWS)
