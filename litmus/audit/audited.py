"""``audited_trajectories``: rule labels with the current human audit verdicts applied on top.

Verdicts never overwrite rule labels: ``rule_label``/``rule_outcome`` keep what the rules said
and ``label_source`` says where the published label came from — ``rule``, ``audit`` (a
verdict on a needs_audit row) or ``override`` (a verdict that deliberately replaces a rule
label). A trajectory's current verdict is the one the single precedence picks (the view
``current_audit_verdicts``, schema 0004: an override outranks an audit verdict, which outranks
a spot-check; the latest loaded of the same kind counts).
It applies when the rules said needs_audit, or when it is an explicit override; otherwise (the
rules have since decided the row themselves, say after a relabel) the rule label stands and
the verdict stays in the history.

The verdict is the label; the outcome follows from it (``litmus.audit.workflow.VERDICT_OUTCOMES``).
An override that agrees with the rule label keeps the rule outcome, which names the evidence.
"""

from __future__ import annotations

import duckdb

from litmus.audit.workflow import verdict_outcome_sql
from litmus.gates.publication_gates import invalidate_partition_gates
from litmus.reuse import table_rows_digests
from litmus.tokens import AUDITED_ROWS, renew_partition_token
from litmus.warehouse import atomically

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

    The configuration's publication gate verdicts are dropped in the same transaction when
    the rows changed: they judged the rows being replaced, so it stays withheld until its
    gates run again. Rows rebuilt the same but for the time they were labeled (a re-score of
    unchanged inputs) keep their verdicts, so a re-score cut short never withholds what the
    published board shows. Every write of the table goes through here, so the rows' token
    (litmus.tokens) is renewed with them: the spot-check draw reuses its rows while the token
    it read is unchanged. A write conflict with another writer (the lake) is retried.
    """
    return atomically(
        con,
        lambda: _refresh_audited_partition(con, partition_key),
        what=f"audited rows of {partition_key}",
    )


def _rows_digest(con: duckdb.DuckDBPyConnection, partition_key: str) -> str | None:
    """The digest of the configuration's rows but for the time they were labeled (the
    multiset: a spilling sort, hashed batch by batch; comparing the rows themselves held two
    copies of the configuration in memory)."""
    return table_rows_digests(
        con, "audited_trajectories", [partition_key], without=("labeled_at",)
    ).get(partition_key)


def _refresh_audited_partition(con: duckdb.DuckDBPyConnection, partition_key: str) -> int:
    before = _rows_digest(con, partition_key)
    con.execute("DELETE FROM audited_trajectories WHERE partition_key = ?", [partition_key])
    con.execute(APPLY_VERDICTS_SQL, {"partition_key": partition_key})
    if _rows_digest(con, partition_key) != before:
        invalidate_partition_gates(con, partition_key)
    renew_partition_token(con, AUDITED_ROWS, partition_key)
    count = con.execute(
        "SELECT count(*) FROM audited_trajectories WHERE partition_key = ?", [partition_key]
    ).fetchall()[0][0]
    return int(count)


def label_source_counts(con: duckdb.DuckDBPyConnection, partition_key: str) -> dict[str, int]:
    """How many of a partition's audited rows each label source decided (rules, audit, …)."""
    return {
        source: int(count)
        for source, count in con.execute(
            "SELECT label_source, count(*) FROM audited_trajectories "
            "WHERE partition_key = ? GROUP BY 1",
            [partition_key],
        ).fetchall()
    }


def partitions_needing_refresh(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Configurations whose audited rows no longer match their labels and current verdicts:
    missing or extra rows, rows from an older labeling, or a verdict loaded since."""
    return sorted(stale_audited_partitions(con))


def stale_audited_partitions(con: duckdb.DuckDBPyConnection) -> set[str]:
    """What :func:`partitions_needing_refresh` says, reading only."""
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
