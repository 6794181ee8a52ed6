"""What the warehouse holds, per configuration: the numbers ``litmus status`` prints."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from litmus.labeler import LABELER_VERSION


@dataclass(frozen=True)
class PartitionStatus:
    partition_key: str
    config_key: str
    trajectories: int
    labeled: int
    labeler_versions: tuple[str, ...]
    outcomes: dict[str, int]

    @property
    def stale(self) -> bool:
        return self.labeled != self.trajectories or self.labeler_versions != (LABELER_VERSION,)


def partition_statuses(con: duckdb.DuckDBPyConnection) -> list[PartitionStatus]:
    rows = con.execute(
        """
        WITH raw AS (
            SELECT partition_key, any_value(config_key) AS config_key, count(*) AS n
            FROM raw_trajectories GROUP BY 1
        ),
        labeled AS (
            SELECT partition_key, count(*) AS n,
                   list(DISTINCT labeler_version ORDER BY labeler_version) AS versions
            FROM labeled_trajectories GROUP BY 1
        ),
        outcomes AS (
            SELECT partition_key, map(list(outcome ORDER BY outcome), list(n ORDER BY outcome)) AS m
            FROM (SELECT partition_key, outcome, count(*) AS n
                  FROM labeled_trajectories GROUP BY 1, 2)
            GROUP BY 1
        )
        SELECT raw.partition_key, raw.config_key, raw.n, coalesce(labeled.n, 0),
               coalesce(labeled.versions, []), outcomes.m
        FROM raw LEFT JOIN labeled USING (partition_key) LEFT JOIN outcomes USING (partition_key)
        ORDER BY raw.partition_key
        """
    ).fetchall()
    return [
        PartitionStatus(
            partition_key=key,
            config_key=config,
            trajectories=int(n_raw),
            labeled=int(n_labeled),
            labeler_versions=tuple(versions),
            outcomes=dict(outcome_map or {}),
        )
        for key, config, n_raw, n_labeled, versions, outcome_map in rows
    ]


def quarantine_summary(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, int]]:
    return [
        (name, reason, int(n))
        for name, reason, n in con.execute(
            """
            SELECT source_name, split_part(reason, ':', 1) AS reason, count(*)
            FROM quarantine GROUP BY 1, 2 ORDER BY 1, 2
            """
        ).fetchall()
    ]
