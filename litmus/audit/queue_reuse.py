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
with them are kept; the others are built again inside DuckDB (``AUDIT_QUEUE_SQL`` with
``$partition_keys``, in slices of their trajectories) and the whole is stored in the order the
full query gives. The recorded digest also carries the
number of rows stored, so rows lost behind the digests' back are queried again. The digests
live in ``result_inputs`` (result ``audit_queue``) and are written in the same transaction as
the rows. ``litmus audit export`` builds the queue the same way (``build_audit_queue``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import duckdb
import pyarrow as pa

from litmus.audit.workflow import AUDIT_QUEUE_SQL, BUILT_QUEUE_TABLE, build_audit_queue
from litmus.reuse import stored_digests, table_rows_digests
from litmus.tokens import labeled_rows_tokens
from litmus.warehouse import quoted_identifier, schema_version

AUDIT_QUEUE = "audit_queue"

# The views the queue reads, by name: their definitions are part of the code it runs.
_VIEW_DEFINITIONS_SQL = """
SELECT view_name, sql FROM duckdb_views()
WHERE NOT internal AND view_name IN ('current_audit_verdicts')
ORDER BY view_name
"""

# The table is kept in the full query's order (AUDIT_QUEUE_SQL's ORDER BY, on its output
# columns of the same name): the stored rows that are kept plus the ones built again.
_REORDERED_SQL = f"""
INSERT INTO audit_queue BY NAME
SELECT * FROM (
    SELECT * FROM _kept_audit_queue
    UNION ALL BY NAME
    SELECT * FROM {BUILT_QUEUE_TABLE}
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


def refresh_audit_queue(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, str], list[str]]:
    """Rebuild the ``audit_queue`` table as :func:`litmus.audit.workflow.audit_queue` would
    give it (every configuration, spot-checks included, in its order), keeping the stored
    rows of every configuration whose inputs are unchanged and building the others again,
    each in slices, inside DuckDB (nothing is read into Python: over 10 M trajectories the
    queue's evidence is gigabytes). Call inside the transaction that records the returned
    digests (:func:`litmus.reuse.record_digests`); also returns the configurations built
    again."""
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
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _kept_audit_queue AS "
        "SELECT * FROM audit_queue WHERE list_contains($keys, partition_key)",
        {"keys": reused},
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE {BUILT_QUEUE_TABLE} AS FROM audit_queue LIMIT 0")
    try:
        build_audit_queue(con, recomputed)
        con.execute("DELETE FROM audit_queue")
        con.execute(_REORDERED_SQL)
    finally:
        con.execute("DROP TABLE IF EXISTS _kept_audit_queue")
        con.execute(f"DROP TABLE IF EXISTS {BUILT_QUEUE_TABLE}")
    counts = dict(
        con.execute("SELECT partition_key, count(*) FROM audit_queue GROUP BY 1").fetchall()
    )
    return (
        {key: _recorded(digest, int(counts.get(key, 0))) for key, digest in digests.items()},
        recomputed,
    )


def queue_summary(
    con: duckdb.DuckDBPyConnection, columns: Sequence[str], preview_rows: int = 20
) -> tuple[int, dict[str, int], dict[str, int], pa.Table]:
    """The stored queue's size, its rows per configuration and per audit reason, and its
    first ``preview_rows`` rows (``columns`` of them, names of the table's own columns)."""
    known = {name for (name,) in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = 'audit_queue'"
    ).fetchall()}  # fmt: skip
    unknown = [name for name in columns if name not in known]
    if unknown:
        raise ValueError(f"not columns of audit_queue: {unknown}")
    by_configuration = dict(con.execute(
        "SELECT configuration, count(*) FROM audit_queue GROUP BY 1 ORDER BY 1"
    ).fetchall())  # fmt: skip
    by_reason = dict(con.execute(
        "SELECT audit_reason_code, count(*) FROM audit_queue GROUP BY 1 ORDER BY 1"
    ).fetchall())  # fmt: skip
    preview = con.sql(
        f"SELECT {', '.join(quoted_identifier(name) for name in columns)} FROM audit_queue "
        f"ORDER BY partition_key, family_id, split, trajectory_id LIMIT {int(preview_rows)}"
    ).to_arrow_table()
    return sum(by_configuration.values()), by_configuration, by_reason, preview
