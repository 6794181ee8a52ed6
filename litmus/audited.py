"""``audited_trajectories``: rule labels with the current human audit verdicts applied on top.

Verdicts never overwrite rule labels: ``rule_label``/``rule_outcome`` keep what the rules said
and ``label_source`` says where the published label came from — ``rule``, ``audit`` (a
verdict on a needs_audit row) or ``override`` (a verdict that deliberately replaces a rule
label). A trajectory's current verdict is its most recently loaded one (``litmus.audit``). It
applies when the rules said needs_audit, or when it is an explicit override; otherwise (the
rules have since decided the row themselves, say after a relabel) the rule label stands and
the verdict stays in the history.

The verdict is the label; the outcome follows from it (``litmus.audit.VERDICT_OUTCOMES``). An
override that agrees with the rule label keeps the rule outcome, which names the evidence.
"""

from __future__ import annotations

import duckdb

from litmus.audit import ensure_audit_tables, verdict_outcome_sql
from litmus.gates import invalidate_partition_gates
from litmus.warehouse import table_columns, table_exists, transaction

# Columns audited_trajectories has beyond labeled_trajectories, in order.
AUDIT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rule_label", "VARCHAR"),
    ("rule_outcome", "VARCHAR"),
    ("label_source", "VARCHAR"),
    ("audit_verdict_id", "VARCHAR"),  # the current verdict, applied or not (staleness check)
    ("auditor", "VARCHAR"),
    ("audit_reason", "VARCHAR"),
    ("audit_decided_at", "TIMESTAMP"),
)


def audited_table_is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``audited_trajectories`` exists with the shape the current code writes."""
    expected = table_columns(con, "labeled_trajectories") + [name for name, _ in AUDIT_COLUMNS]
    return table_columns(con, "audited_trajectories") == expected


def ensure_audited_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``audited_trajectories`` with the labels' columns plus the audit columns.

    The table is derived from labels and verdicts, so a table of an older shape is rebuilt
    empty (and every gate verdict forgotten): each configuration is then withheld until its
    audited rows are refreshed, which ``partitions_needing_refresh`` reports.
    """
    if audited_table_is_current(con) and table_exists(con, "current_audit_verdicts"):
        return  # nothing to create: a read-only connection (``litmus status``) is enough
    ensure_audit_tables(con)
    if audited_table_is_current(con):
        return
    if table_exists(con, "audited_trajectories"):
        con.execute("DROP TABLE audited_trajectories")
        if table_exists(con, "publication_gates"):
            con.execute("DELETE FROM publication_gates")
    extra = ", ".join(f"NULL::{kind} AS {name}" for name, kind in AUDIT_COLUMNS)
    con.execute(
        f"CREATE TABLE audited_trajectories AS SELECT *, {extra} FROM labeled_trajectories LIMIT 0"
    )


APPLY_VERDICTS_SQL = f"""
INSERT INTO audited_trajectories BY NAME
WITH joined AS (
    SELECT l.*,
           v.verdict_id AS _verdict_id, v.verdict AS _verdict, v.auditor AS _auditor,
           v.reason AS _reason, v.decided_at AS _decided_at,
           coalesce(v.verdict IS NOT NULL AND (l.label = 'needs_audit' OR v.override), false)
               AS _applies
    FROM labeled_trajectories l
    LEFT JOIN current_audit_verdicts v USING (trajectory_id)
    WHERE l.partition_key = $partition_key
)
SELECT * EXCLUDE (_verdict_id, _verdict, _auditor, _reason, _decided_at, _applies) REPLACE (
           CASE WHEN _applies THEN _verdict ELSE label END AS label,
           CASE WHEN NOT _applies THEN outcome
                WHEN _verdict = label THEN outcome
                ELSE {verdict_outcome_sql("request_harm_class", "_verdict")} END AS outcome
       ),
       label AS rule_label,
       outcome AS rule_outcome,
       CASE WHEN NOT _applies THEN 'rule'
            WHEN label = 'needs_audit' THEN 'audit'
            ELSE 'override' END AS label_source,
       _verdict_id AS audit_verdict_id,
       CASE WHEN _applies THEN _auditor END AS auditor,
       CASE WHEN _applies THEN _reason END AS audit_reason,
       CASE WHEN _applies THEN _decided_at END AS audit_decided_at
FROM joined
"""


def refresh_audited_partition(con: duckdb.DuckDBPyConnection, partition_key: str) -> int:
    """Rebuild one partition of ``audited_trajectories`` from its labels and verdicts.

    The configuration's publication gate verdicts are dropped in the same transaction: they
    judged the rows being replaced, so it stays withheld until its gates run again.
    """
    ensure_audited_table(con)
    with transaction(con):
        con.execute("DELETE FROM audited_trajectories WHERE partition_key = ?", [partition_key])
        con.execute(APPLY_VERDICTS_SQL, {"partition_key": partition_key})
        invalidate_partition_gates(con, partition_key)
        count = con.execute(
            "SELECT count(*) FROM audited_trajectories WHERE partition_key = ?", [partition_key]
        ).fetchall()[0][0]
    return int(count)


def partitions_needing_refresh(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Configurations whose audited rows no longer match their labels and current verdicts:
    missing or extra rows, rows from an older labeling, or a verdict loaded since. Creates
    (or rebuilds) the audited table first, as the next refresh would."""
    ensure_audited_table(con)
    return sorted(stale_audited_partitions(con))


def stale_audited_partitions(con: duckdb.DuckDBPyConnection) -> set[str]:
    """What :func:`partitions_needing_refresh` says, reading only: with no audited table of
    the current shape every labeled configuration is out of date (the next run rebuilds it)."""
    if not audited_table_is_current(con) or not table_exists(con, "current_audit_verdicts"):
        return {
            row[0]
            for row in con.execute(
                "SELECT DISTINCT partition_key FROM labeled_trajectories"
            ).fetchall()
        }
    rows = con.execute(
        """
        SELECT DISTINCT coalesce(l.partition_key, a.partition_key) AS partition_key
        FROM (SELECT trajectory_id, partition_key, labeled_at FROM labeled_trajectories) l
        FULL OUTER JOIN (
            SELECT trajectory_id, partition_key, labeled_at, audit_verdict_id
            FROM audited_trajectories
        ) a ON a.trajectory_id = l.trajectory_id
        LEFT JOIN current_audit_verdicts v
               ON v.trajectory_id = coalesce(l.trajectory_id, a.trajectory_id)
        WHERE l.trajectory_id IS NULL OR a.trajectory_id IS NULL
           OR a.partition_key IS DISTINCT FROM l.partition_key
           OR a.labeled_at IS DISTINCT FROM l.labeled_at
           OR a.audit_verdict_id IS DISTINCT FROM v.verdict_id
        """
    ).fetchall()
    return {row[0] for row in rows}
