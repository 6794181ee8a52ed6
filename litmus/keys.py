"""Identifiers derived from records: configuration key, partition key, trajectory id.

The configuration key is for people; the partition key is what Dagster, SQL and file names
see. Record values are untrusted, so the partition key is rebuilt from a small safe alphabet
and, whenever sanitizing changed anything, suffixed with a hash of the exact key so that two
different configurations can never collide onto one partition.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING

from litmus.formats import RunConfig

if TYPE_CHECKING:
    import duckdb

_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_COMPONENT = 40


def config_key(config: RunConfig) -> str:
    return (
        f"{config.model}@{config.model_release}/"
        f"{config.harness}@{config.harness_version}/{config.plugin}"
    )


def lineage_key(config: RunConfig) -> str:
    """Model × harness × plug-in: successive releases of one lineage are compared."""
    return f"{config.model}/{config.harness}/{config.plugin}"


def _safe_component(value: str) -> str:
    cleaned = _UNSAFE_CHARS.sub("-", value).strip("-.") or "x"
    return cleaned[:_MAX_COMPONENT]


def partition_key_for(config: RunConfig) -> str:
    """A Dagster-, SQL- and path-safe key: ``model@release+harness@version+plugin``."""
    parts = [
        config.model,
        config.model_release,
        config.harness,
        config.harness_version,
        config.plugin,
    ]
    safe = [_safe_component(p) for p in parts]
    key = f"{safe[0]}@{safe[1]}+{safe[2]}@{safe[3]}+{safe[4]}"
    if safe != parts:
        digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:8]
        key = f"{key}+{digest}"
    return key


# The configuration key of every ingested partition, derived here once for every reader that
# runs before dbt has built ``configuration_identities`` (ingestion metadata, status, gates,
# receipts). The partition key is built from the same record fields, so each partition has
# exactly one configuration key and min() only makes the choice explicit.
CONFIGURATION_KEYS_SQL = """
SELECT partition_key, min(config_key) AS config_key
FROM raw_trajectories GROUP BY partition_key
"""


def configuration_key(con: duckdb.DuckDBPyConnection, partition_key: str) -> str:
    """The display key of a partition (the partition key itself when it has no rows)."""
    rows = con.execute(
        f"SELECT config_key FROM ({CONFIGURATION_KEYS_SQL}) WHERE partition_key = ?",
        [partition_key],
    ).fetchall()
    return rows[0][0] if rows and rows[0][0] else partition_key


def configuration_keys(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """partition key → configuration key, of every ingested partition."""
    return dict(con.execute(CONFIGURATION_KEYS_SQL).fetchall())


def labeled_partition_keys(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The partition key of every labeled configuration, in order."""
    return [
        key for (key,) in con.execute(
            "SELECT DISTINCT partition_key FROM trajectory_labels ORDER BY 1"
        ).fetchall()
    ]  # fmt: skip


def trajectory_id(run_id: str, instance_id: str, epoch: int) -> str:
    """Stable id of one trajectory: SPEC §7 allows one per (run, instance, epoch)."""
    payload = json.dumps([run_id, instance_id, epoch], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]
