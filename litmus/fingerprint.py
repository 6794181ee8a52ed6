"""Run fingerprints (SPEC §10): one hash per scored run over everything its labels depend on.

A run's fingerprint covers the suite (name, version and content hash), the configuration
(model, release, harness, harness version, plug-in, policy versions), the judges named in its
records, the labeler and refusal-classifier versions its labels were made with, and the
SHA-256 of every raw file its records came from. Two scorings of the same inputs with the same
code therefore get the same fingerprint, and any difference in those inputs changes it.

The configuration fingerprint (shown on the leaderboard) hashes the sorted run fingerprints of
one configuration partition. Both are computed from the warehouse alone, so ``litmus verify``
can recompute them at any time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from litmus.canonical import canonical_json, sha256_text
from litmus.keys import CONFIGURATION_KEYS_SQL
from litmus.warehouse import atomically

RUN_FINGERPRINT_SCHEME = "litmus-run-fingerprint/1"
CONFIGURATION_FINGERPRINT_SCHEME = "litmus-configuration-fingerprint/1"

# Everything a run's labels depend on, one row per (partition, run). Lists are sorted so the
# canonical JSON, and with it the hash, does not depend on row order.
_RUN_INPUTS_SQL = f"""
WITH runs AS (
    SELECT partition_key, run_id,
           min(model) AS model, min(model_release) AS model_release,
           min(harness) AS harness, min(harness_version) AS harness_version,
           min(plugin) AS plugin,
           list_sort(list(DISTINCT policy_version), 'ASC', 'NULLS FIRST') AS policy_versions,
           list_sort(list(DISTINCT judge_name) FILTER (WHERE judge_name IS NOT NULL))
               AS judges,
           list_sort(list(DISTINCT source_file_hash)) AS raw_files,
           count(*) AS n_trajectories
    FROM raw_trajectories
    GROUP BY partition_key, run_id
),
run_suites AS (
    SELECT t.partition_key, t.run_id,
           list_sort(list(DISTINCT {{'suite': t.suite, 'suite_version': t.suite_version,
                                      'suite_hash': s.suite_hash}})) AS suites
    FROM (SELECT DISTINCT partition_key, run_id, suite, suite_version FROM raw_trajectories) t
    LEFT JOIN suites s USING (suite, suite_version)
    GROUP BY ALL
),
run_labelers AS (
    SELECT t.partition_key, t.run_id,
           list_sort(list(DISTINCT l.labeler_version)) AS labeler_versions
    FROM trajectory_labels l JOIN raw_trajectories t USING (trajectory_id)
    GROUP BY ALL
),
run_classifiers AS (
    SELECT t.partition_key, t.run_id,
           list_sort(list(DISTINCT r.classifier_version)) AS classifier_versions
    FROM refusal_signals r JOIN raw_trajectories t USING (trajectory_id)
    GROUP BY ALL
)
SELECT runs.*, keys.config_key, run_suites.suites,
       coalesce(run_labelers.labeler_versions, []) AS labeler_versions,
       coalesce(run_classifiers.classifier_versions, []) AS classifier_versions
FROM runs
JOIN ({CONFIGURATION_KEYS_SQL}) keys USING (partition_key)
LEFT JOIN run_suites USING (partition_key, run_id)
LEFT JOIN run_labelers USING (partition_key, run_id)
LEFT JOIN run_classifiers USING (partition_key, run_id)
ORDER BY partition_key, run_id
"""


@dataclass(frozen=True)
class RunFingerprint:
    partition_key: str
    run_id: str
    config_key: str
    fingerprint: str
    fingerprint_input: str
    n_trajectories: int


def _fingerprint_input(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "scheme": RUN_FINGERPRINT_SCHEME,
        "run_id": row["run_id"],
        "configuration": {
            "model": row["model"],
            "model_release": row["model_release"],
            "harness": row["harness"],
            "harness_version": row["harness_version"],
            "plugin": row["plugin"],
            "policy_versions": row["policy_versions"],
        },
        "suites": row["suites"] or [],
        "judges": row["judges"] or [],
        "labeler_versions": row["labeler_versions"],
        "classifier_versions": row["classifier_versions"],
        "raw_files": row["raw_files"],
    }


def compute_run_fingerprints(con: duckdb.DuckDBPyConnection) -> list[RunFingerprint]:
    """The fingerprint of every ingested run, from the warehouse as it is now."""
    # One row per run (a handful per configuration): hashing them in Python is not a data path.
    rows = con.sql(_RUN_INPUTS_SQL).to_arrow_table().to_pylist()
    fingerprints = []
    for row in rows:
        text = canonical_json(_fingerprint_input(row))
        fingerprints.append(
            RunFingerprint(
                partition_key=row["partition_key"],
                run_id=row["run_id"],
                config_key=row["config_key"],
                fingerprint=sha256_text(text),
                fingerprint_input=text,
                n_trajectories=int(row["n_trajectories"]),
            )
        )
    return fingerprints


def configuration_fingerprint(run_fingerprints: list[tuple[str, str]]) -> str:
    """Hash of one configuration's (run_id, run fingerprint) pairs, in any order."""
    runs = [{"run_id": run_id, "fingerprint": fp} for run_id, fp in sorted(run_fingerprints)]
    return sha256_text(canonical_json({"scheme": CONFIGURATION_FINGERPRINT_SCHEME, "runs": runs}))


def group_by_configuration(fingerprints: list[RunFingerprint]) -> dict[str, str]:
    """partition_key → configuration fingerprint."""
    runs: dict[str, list[tuple[str, str]]] = {}
    for fp in fingerprints:
        runs.setdefault(fp.partition_key, []).append((fp.run_id, fp.fingerprint))
    return {key: configuration_fingerprint(pairs) for key, pairs in sorted(runs.items())}


def configuration_fingerprints(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """partition_key → fingerprint of that configuration, recomputed from the warehouse."""
    return group_by_configuration(compute_run_fingerprints(con))


def store_run_fingerprints(
    con: duckdb.DuckDBPyConnection, fingerprints: list[RunFingerprint]
) -> None:
    """Replace ``run_fingerprints`` with ``fingerprints`` in one transaction."""
    now = datetime.now(UTC).replace(tzinfo=None)
    frame = pa.table(
        {
            "partition_key": pa.array([f.partition_key for f in fingerprints], pa.string()),
            "run_id": pa.array([f.run_id for f in fingerprints], pa.string()),
            "config_key": pa.array([f.config_key for f in fingerprints], pa.string()),
            "fingerprint": pa.array([f.fingerprint for f in fingerprints], pa.string()),
            "fingerprint_input": pa.array([f.fingerprint_input for f in fingerprints], pa.string()),
            "n_trajectories": pa.array([f.n_trajectories for f in fingerprints], pa.int64()),
            "computed_at": pa.array([now] * len(fingerprints), pa.timestamp("us")),
        }
    )
    con.register("incoming_fingerprints", frame)
    try:
        atomically(
            con,
            lambda: con.execute(
                "DELETE FROM run_fingerprints; "
                "INSERT INTO run_fingerprints SELECT * FROM incoming_fingerprints"
            ),
            what="run fingerprints",
        )
    finally:
        con.unregister("incoming_fingerprints")


def stored_run_fingerprints(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], str]:
    """(partition_key, run_id) → fingerprint as stored by the last publication (may be none)."""
    return {
        (key, run_id): fp
        for key, run_id, fp in con.execute(
            "SELECT partition_key, run_id, fingerprint FROM run_fingerprints"
        ).fetchall()
    }
