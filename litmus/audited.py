"""``audited_trajectories``: rule labels with any human audit verdicts applied on top.

Verdicts never overwrite the rule label: ``rule_label``/``rule_outcome`` keep what the rules
said and ``label_source`` says where the published label came from.
"""

from __future__ import annotations

import duckdb

AUDITED_DDL = """
CREATE TABLE IF NOT EXISTS audited_trajectories AS
SELECT *, label AS rule_label, outcome AS rule_outcome, 'rule' AS label_source
FROM labeled_trajectories LIMIT 0
"""


def refresh_audited_partition(con: duckdb.DuckDBPyConnection, partition_key: str) -> int:
    """Rebuild one partition of ``audited_trajectories`` from its labels (and verdicts)."""
    con.execute(AUDITED_DDL)
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM audited_trajectories WHERE partition_key = ?", [partition_key])
        con.execute(
            """
            INSERT INTO audited_trajectories
            SELECT *, label AS rule_label, outcome AS rule_outcome, 'rule' AS label_source
            FROM labeled_trajectories WHERE partition_key = ?
            """,
            [partition_key],
        )
        count = con.execute(
            "SELECT count(*) FROM audited_trajectories WHERE partition_key = ?", [partition_key]
        ).fetchone()[0]
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return int(count)
