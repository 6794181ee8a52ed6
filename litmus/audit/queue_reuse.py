"""The audit queue of a new release: only the configurations whose inputs changed are queried.

``audit_queue`` (litmus.audit.workflow) reads every labeled row, the current verdicts, the
spot-check draw, the steps of every queued trajectory and the suite's instances. A
configuration's queue rows are computed from:

- its own rows of ``trajectory_labels``, by their write token (litmus.tokens: replaced by
  ``label_partition``, the only writer, in the same transaction as the rows), and the
  ``raw_trajectories``/``raw_steps`` of those trajectories, which ingestion only ever inserts
  (new trajectories of a configuration are only queued once it is labeled again, which renews
  the token);
- its own rows of ``spot_check_sample`` (a digest of the rows, computed in DuckDB: the table
  holds a few percent of the trajectories);
- every verdict (a digest of all of ``audit_verdicts``: human-sized, and which trajectory a
  verdict names is the auditor's text, so no configuration is assumed) and the loaded suites
  (``suites``: written once per suite version together with its instances);
- the code: the queue's SQL, the text of the views it reads, DuckDB's version and the schema
  version.

The stored rows of every configuration whose digest of those inputs is what was recorded
with them are kept; the others are queried again (``AUDIT_QUEUE_SQL`` with ``$partition_keys``)
and the whole is put in the order the full query gives. The recorded digest also carries the
number of rows stored, so rows lost behind the digests' back are queried again. The digests
live in ``result_inputs`` (result ``audit_queue``) and are written in the same transaction as
the rows. ``litmus audit export`` still runs the full query (the sheet an auditor fills in).
"""

from __future__ import annotations

import hashlib

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from litmus.audit.workflow import AUDIT_QUEUE_SQL, audit_queue
from litmus.reuse import stored_digests, table_rows_digests
from litmus.tokens import labeled_rows_tokens
from litmus.warehouse import schema_version

AUDIT_QUEUE = "audit_queue"

# The views the queue reads, by name: their definitions are part of the code it runs.
_VIEW_DEFINITIONS_SQL = """
SELECT view_name, sql FROM duckdb_views()
WHERE NOT internal AND view_name IN ('labeled_trajectories', 'current_audit_verdicts')
ORDER BY view_name
"""

# The full query's order (AUDIT_QUEUE_SQL's ORDER BY, on the output columns of the same name).
_STORED_ROWS_SQL = """
SELECT * FROM audit_queue WHERE list_contains($keys, partition_key)
ORDER BY partition_key, family_id, split, trajectory_id
"""
_COMBINED_SQL = """
SELECT * FROM (
    SELECT * FROM audit_queue WHERE list_contains($keys, partition_key)
    UNION ALL BY NAME
    SELECT * FROM _fresh_audit_queue
)
ORDER BY partition_key, family_id, split, trajectory_id
"""


def _shared_inputs(con: duckdb.DuckDBPyConnection) -> str:
    """A digest of what every configuration's queue is computed from: code, verdicts, suites."""
    digest = hashlib.sha256(AUDIT_QUEUE_SQL.encode())
    digest.update(f";duckdb={duckdb.__version__};schema={schema_version(con)!r};".encode())
    for name, sql in con.execute(_VIEW_DEFINITIONS_SQL).fetchall():
        digest.update(f"view {len(name)}:{name} {len(sql or '')}:{sql or ''};".encode())
    verdicts = table_rows_digests(con, "audit_verdicts")
    for key in sorted(verdicts):
        digest.update(f"verdicts {len(key)}:{key}={verdicts[key]};".encode())
    suites = con.execute(
        "SELECT suite, suite_version, suite_hash, CAST(loaded_at AS VARCHAR) FROM suites "
        "ORDER BY ALL"
    ).fetchall()
    digest.update(repr(suites).encode())
    return digest.hexdigest()


def queue_input_digests(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Per labeled configuration: a digest of everything its queue rows are computed from
    (call inside a transaction: configurations labeled before tokens existed get one)."""
    tokens = labeled_rows_tokens(con)
    shared = _shared_inputs(con)
    spot_checks = table_rows_digests(con, "spot_check_sample")
    return {
        key: hashlib.sha256(
            f"{shared};labels={token};spot_checks={spot_checks.get(key, '-')}".encode()
        ).hexdigest()
        for key, token in sorted(tokens.items())
    }


def _recorded(digest: str, rows: int) -> str:
    return f"{digest}:{rows}"


def audit_queue_reusing_unchanged(
    con: duckdb.DuckDBPyConnection,
) -> tuple[pa.Table, dict[str, str], list[str]]:
    """What :func:`litmus.audit.workflow.audit_queue` returns (every configuration, spot-checks
    included), with the stored rows of every configuration whose inputs are unchanged. Call
    inside the transaction that stores the rows; returns the rows, the digests to record with
    them (:func:`litmus.reuse.record_digests`) and the configurations queried again."""
    digests = queue_input_digests(con)
    recorded = stored_digests(con, AUDIT_QUEUE)
    stored_rows = dict(
        con.execute("SELECT partition_key, count(*) FROM audit_queue GROUP BY 1").fetchall()
    )
    reused = sorted(
        key
        for key, digest in digests.items()
        if recorded.get(key) == _recorded(digest, int(stored_rows.get(key, 0)))
    )
    recomputed = sorted(set(digests) - set(reused))
    if not reused:
        queue = audit_queue(con)  # the full query, as it always was
    elif not recomputed:
        queue = con.sql(_STORED_ROWS_SQL, params={"keys": reused}).to_arrow_table()
    else:
        fresh = audit_queue(con, recomputed)
        con.register("_fresh_audit_queue", fresh)
        try:
            queue = con.sql(_COMBINED_SQL, params={"keys": reused}).to_arrow_table()
        finally:
            con.unregister("_fresh_audit_queue")
    counts = {
        str(entry["values"]): int(entry["counts"])
        for entry in pc.value_counts(queue.column("partition_key")).to_pylist()
    }
    return (
        queue,
        {key: _recorded(digest, counts.get(key, 0)) for key, digest in digests.items()},
        recomputed,
    )
