"""Which configurations a ``dbt build`` of the metric models has to recompute.

The per-configuration metric models (``dbt_project/models/metrics``, all but
``control_metrics``) are dbt incremental models: a build given the var ``litmus_rebuild``
deletes and recomputes the rows of exactly the configurations this module marked pending
in ``result_inputs`` (``macros/partitions.sql``).
This module decides the list, the way ``litmus.reuse`` decides which intervals to reuse:
each configuration's model rows are recorded (``result_inputs``, result
:data:`MODEL_ROWS`) with a digest of everything the models read for it, namely its audited
rows in the columns the staging view reads and its publication gate verdicts (a
structural gate keeps the configuration out of the metrics). A build recomputes the
configurations whose digest changed, the new ones and those that disappeared.

Anything else the rows depend on is the dbt project itself (models, macros, tests, the
project file, dbt's versions): its digest is recorded too (result :data:`PROJECT`), and when it
differs, or nothing was recorded yet, the build is a ``--full-refresh``. The digests are
recorded only after a build succeeded and only as they were read before it started, so a
digest never vouches for rows built from other inputs: anything written in between makes
the next build recompute more, never less. Recomputing a configuration gives the same rows
whatever else is in the warehouse (every model groups by ``partition_key``), so an
incremental build equals a full one; ``tests/test_metrics_dbt_incremental.py`` checks that on
real ``dbt build`` runs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from litmus import PROJECT_DIR
from litmus.reuse import record_digests, stored_digests
from litmus.warehouse import transaction

DBT_PROJECT_DIR = PROJECT_DIR / "dbt_project"
# The project's own files: a change to any makes a parsed manifest stale and the stored model
# rows suspect.
DBT_SOURCE_GLOBS = ("dbt_project.yml", "profiles.yml", "models/**/*", "macros/**/*", "tests/**/*")
MODEL_ROWS = "dbt_metric_models"
PROJECT = "dbt_metric_project"
REBUILD_VAR = "litmus_rebuild"
# The stored digest of a configuration being recomputed: equal to no digest of real inputs.
PENDING = "pending"

# What the models read of one configuration: its audited rows in the columns
# stg_trajectory_flags reads and the verdicts of the structural gates, which keep a
# configuration out of the metrics (the other gates, written later in a publication, do not
# change what the models compute). The rows are summarized by their count and two
# order-independent aggregates of DuckDB's 64-bit row hash (its sum, exact as HUGEINT, and
# its xor): a pass over the columns, ~30x cheaper than a SHA-256 over the sorted rows (0.03 s
# against 0.9 s CPU for 250,000 rows). Not a cryptographic digest, and it need not be: a
# configuration's rows change only when the labeler or an audit verdict rewrites them (values
# LITMUS computes, never text a run file chooses), and a row added by a new run file changes
# the count.
PARTITION_INPUTS_SQL = """
WITH row_digests AS (
    SELECT partition_key,
           concat_ws(':', count(*), sum(row_hash::HUGEINT), bit_xor(row_hash)) AS rows_digest
    FROM (
        SELECT partition_key,
               hash(trajectory_id, config_key, lineage_key, model, model_release, harness,
                    harness_version, plugin, suite, suite_version, family_id, category,
                    instance_id, split, request_harm_class, pair_id, register, label, outcome,
                    naive_label, refusal, engagement) AS row_hash
        FROM audited_trajectories
    )
    GROUP BY partition_key
),
gates AS (
    SELECT partition_key, to_json([gate, CAST(passed AS VARCHAR)]) AS gate_text
    FROM publication_gates
    WHERE list_contains(?, gate)
),
gate_digests AS (
    SELECT partition_key, sha256(string_agg(gate_text, chr(10) ORDER BY gate_text)) AS gates_digest
    FROM gates
    GROUP BY partition_key
)
SELECT partition_key, rows_digest, coalesce(gates_digest, '') AS gates_digest
FROM row_digests LEFT JOIN gate_digests USING (partition_key)
ORDER BY partition_key
"""


def project_digest(project_dir: Path = DBT_PROJECT_DIR) -> str:
    """The dbt project's files (by relative path and bytes) and the dbt versions that run them."""
    digest = hashlib.sha256()
    for package in ("dbt-core", "dbt-duckdb"):
        digest.update(f"{package}={importlib.metadata.version(package)};".encode())
    files = sorted(
        {
            path
            for pattern in DBT_SOURCE_GLOBS
            for path in project_dir.glob(pattern)
            if path.is_file()
        }
    )
    for path in files:
        digest.update(path.relative_to(project_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def partition_input_digests(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """partition_key → digest of what the metric models read for it (see the module doc)."""
    # on use: the gates module is not needed to plan a publication otherwise
    from litmus.gates.publication_gates import STRUCTURAL_ROW_GATES

    rows = con.execute(PARTITION_INPUTS_SQL, [list(STRUCTURAL_ROW_GATES)]).fetchall()
    return {
        key: hashlib.sha256(f"{rows}\0{gates}".encode()).hexdigest() for key, rows, gates in rows
    }


@dataclass(frozen=True)
class ModelRebuild:
    """One build of the metric models: from scratch, or recomputing ``partitions``."""

    full_refresh: bool
    partitions: tuple[str, ...]  # the configurations to recompute (when not a full refresh)
    digests: Mapping[str, str] = field(repr=False)  # to record once the build succeeded
    project: str = field(repr=False)

    def dbt_arguments(self) -> list[str]:
        """The var naming where the models find the configurations to recompute, the
        digests :func:`plan_model_rebuild` marked :data:`PENDING` (with ``--full-refresh``,
        which ignores it, so that the var never changes: a changed var makes dbt parse the
        whole project again, seconds per publication)."""
        rebuild = ["--vars", json.dumps({REBUILD_VAR: {"result": MODEL_ROWS, "pending": PENDING}})]
        return ["--full-refresh", *rebuild] if self.full_refresh else rebuild

    def describe(self) -> str:
        if self.full_refresh:
            return "full refresh (dbt project changed, or no model rows recorded yet)"
        if not self.partitions:
            return "no configuration's inputs changed"
        return f"recomputing {len(self.partitions)} configuration(s): {', '.join(self.partitions)}"


def plan_model_rebuild(con: duckdb.DuckDBPyConnection, project: str | None = None) -> ModelRebuild:
    """What the next ``dbt build`` of the metric models recomputes, read before it starts.

    The stored digests of what it recomputes become :data:`PENDING` at once (committed
    before dbt runs): a build that fails half-way leaves some tables with new rows, which no
    digest may vouch for, even if the inputs later return to what a stored digest described,
    and a configuration that disappeared stays listed until a build has deleted its rows."""
    project = project or project_digest()
    digests = partition_input_digests(con)
    stored = stored_digests(con, MODEL_ROWS)
    if stored_digests(con, PROJECT).get("") != project:
        with transaction(con):
            con.execute("DELETE FROM result_inputs WHERE result IN (?, ?)", [PROJECT, MODEL_ROWS])
        return ModelRebuild(True, tuple(sorted(digests)), digests, project)
    changed = {key for key, digest in digests.items() if stored.get(key) != digest}
    vanished = set(stored) - set(digests)
    rebuild = ModelRebuild(False, tuple(sorted(changed | vanished)), digests, project)
    if rebuild.partitions:
        with transaction(con):
            record_digests(
                con, MODEL_ROWS, {**stored, **dict.fromkeys(rebuild.partitions, PENDING)}
            )
    return rebuild


def record_model_rebuild(con: duckdb.DuckDBPyConnection, rebuild: ModelRebuild) -> None:
    """Record, once the build succeeded, what it computed its rows from."""
    with transaction(con):
        record_digests(con, MODEL_ROWS, rebuild.digests)
        record_digests(con, PROJECT, {"": rebuild.project})
