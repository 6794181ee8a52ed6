"""Building a receipt: the facts of the published leaderboard read from the warehouse."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from litmus.fingerprint import (
    RunFingerprint,
    compute_run_fingerprints,
    group_by_configuration,
)
from litmus.ingestion import derivation
from litmus.keys import CONFIGURATION_KEYS_SQL
from litmus.trust.receipts.code_identity import PROJECT_DIR, code_versions, publisher_identity
from litmus.trust.receipts.digests import (
    leaderboard_table_rows,
    plain_rows,
    row_digest,
    rows_digest,
)
from litmus.trust.receipts.document import RECEIPT_KIND, RECEIPT_VERSION, ReceiptError
from litmus.warehouse import ordered_text_digests

NOT_EVALUATED = "not evaluated"


@dataclass(frozen=True)
class ReceiptScope:
    """What one receipt covers: its raw files, suites, configurations and their runs. The
    warehouse goes on (a newer landed file is ingested and labeled before it is published):
    verification reads the warehouse within this scope, and counts the rest as newer."""

    raw_files: frozenset[str]
    suites: frozenset[tuple[str, str]]
    configurations: frozenset[str]
    runs: frozenset[tuple[str, str]]  # (partition_key, run_id)

    @classmethod
    def of(cls, receipt: Mapping[str, Any]) -> ReceiptScope:
        def entries(name: str) -> list[Mapping[str, Any]]:
            listed = receipt.get(name)
            return [e for e in listed if isinstance(e, Mapping)] if isinstance(listed, list) else []

        configurations = entries("configurations")
        return cls(
            raw_files=frozenset(str(e.get("sha256")) for e in entries("raw_files")),
            suites=frozenset(
                (str(e.get("suite")), str(e.get("suite_version"))) for e in entries("suites")
            ),
            configurations=frozenset(str(e.get("partition_key")) for e in configurations),
            runs=frozenset(
                (str(c.get("partition_key")), str(run.get("run_id")))
                for c in configurations
                if isinstance(c.get("runs"), list)
                for run in c["runs"]
                if isinstance(run, Mapping)
            ),
        )


def suite_facts(
    con: duckdb.DuckDBPyConnection, scope: ReceiptScope | None = None
) -> list[dict[str, Any]]:
    suites = plain_rows(
        con.sql(
            "SELECT suite, suite_version, suite_hash, source_name FROM suites ORDER BY 1, 2"
        ).to_arrow_table()
    )
    if scope is None:
        return suites
    return [s for s in suites if (s["suite"], s["suite_version"]) in scope.suites]


def raw_file_facts(
    con: duckdb.DuckDBPyConnection, scope: ReceiptScope | None = None
) -> list[dict[str, Any]]:
    """Every raw file (of ``scope``): what it is, its record counts, and the digests of the
    rows ingestion derived from it (``derived``: table, configuration, rows, sha256)."""
    files = plain_rows(
        con.sql(
            """
            SELECT file_hash AS sha256, original_name AS name, file_format AS format,
                   size_bytes, records_total, records_accepted, records_quarantined
            FROM raw_files ORDER BY file_hash
            """
        ).to_arrow_table()
    )
    if scope is not None:
        files = [entry for entry in files if entry["sha256"] in scope.raw_files]
    digests = derivation.recorded_digests(con)
    for entry in files:
        entry["derived"] = derivation.receipt_entries(digests, entry["sha256"])
    return files


ALERT_COLUMNS = (
    "fingerprint, lineage, suite, suite_version, from_release, to_release, "
    "from_partition_key, to_partition_key, metric, delta, ci_low, ci_high, threshold, "
    "regressions"
)


def alert_facts(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every release alert raised, as published beside the board (its delivery, which changes
    after publication, and the time it was raised, which two scorings of the same inputs do
    not share, left out)."""
    return plain_rows(
        con.sql(f"SELECT {ALERT_COLUMNS} FROM alerts ORDER BY fingerprint").to_arrow_table()
    )


def gate_facts(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict[str, Any]]]:
    gates: dict[str, list[dict[str, Any]]] = {}
    for row in plain_rows(
        con.sql(
            "SELECT partition_key, gate, passed, message FROM publication_gates "
            "ORDER BY partition_key, gate, message"
        ).to_arrow_table()
    ):
        key = row.pop("partition_key")
        gates.setdefault(key, []).append(row)
    return gates


def label_digests(
    con: duckdb.DuckDBPyConnection, raw_files: frozenset[str] | None = None
) -> dict[str, str]:
    """partition_key → digest of its audited labels (what the metrics read); of the
    trajectories of ``raw_files`` only, when given."""
    return ordered_text_digests(
        con,
        """
        SELECT partition_key, trajectory_id,
               concat_ws('|', trajectory_id, label, outcome, coalesce(label_source, '')) AS text
        FROM audited_trajectories
        WHERE $files IS NULL OR trajectory_id IN (
            SELECT trajectory_id FROM raw_trajectories
            WHERE list_contains($files, source_file_hash))
        """,
        "trajectory_id, text",
        {"files": None if raw_files is None else sorted(raw_files)},
    )


def audit_facts(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """partition_key → its audit verdicts (count, auditors, verdict files, digest): the human
    inputs behind audited labels."""
    return {
        row.pop("partition_key"): row
        for row in plain_rows(
            con.sql(
                """
                SELECT partition_key, count(*) AS verdicts,
                       list_sort(list(DISTINCT auditor)) AS auditors,
                       list_sort(list(DISTINCT source_sha256)) AS verdict_files,
                       sha256(string_agg(
                           concat_ws('|', verdict_id, CAST(load_seq AS VARCHAR), trajectory_id,
                                     verdict, CAST(override AS VARCHAR), auditor,
                                     coalesce(reason, '')),
                           chr(10) ORDER BY load_seq, source_line, verdict_id)) AS digest
                FROM audit_verdicts GROUP BY partition_key ORDER BY partition_key
                """
            ).to_arrow_table()
        )
    }


NO_VERDICTS: dict[str, Any] = {"verdicts": 0}


def configuration_facts(
    con: duckdb.DuckDBPyConnection, raw_files: frozenset[str] | None = None
) -> dict[str, dict[str, Any]]:
    """partition_key → config key and policy versions, for every ingested configuration (of
    the trajectories of ``raw_files`` only, when given)."""
    return {
        row["partition_key"]: row
        for row in plain_rows(
            con.sql(
                f"""
                SELECT partition_key, keys.config_key,
                       list_sort(list(DISTINCT policy_version), 'ASC', 'NULLS FIRST')
                           AS policy_versions
                FROM raw_trajectories JOIN ({CONFIGURATION_KEYS_SQL}) keys USING (partition_key)
                WHERE $files IS NULL OR list_contains($files, source_file_hash)
                GROUP BY partition_key, keys.config_key ORDER BY partition_key
                """,
                params={"files": None if raw_files is None else sorted(raw_files)},
            ).to_arrow_table()
        )
    }


def _bootstrap_settings(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    return plain_rows(
        con.sql(
            "SELECT DISTINCT seed, n_resamples, confidence FROM metric_cis ORDER BY ALL"
        ).to_arrow_table()
    )


def runs_by_configuration(
    fingerprints: list[RunFingerprint],
) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for fp in fingerprints:
        runs.setdefault(fp.partition_key, []).append(
            {
                "run_id": fp.run_id,
                "fingerprint": fp.fingerprint,
                "n_trajectories": fp.n_trajectories,
            }
        )
    return runs


@dataclass(frozen=True)
class ConfigurationEvidence:
    """What a receipt states of each configuration (partition key → fact), read from the
    warehouse: once to write a receipt and again, the same way, to verify one."""

    facts: dict[str, dict[str, Any]]  # config_key, policy versions
    fingerprints: dict[str, str]  # the configuration's fingerprint
    runs: dict[str, list[dict[str, Any]]]  # each run's fingerprint
    gates: dict[str, Any]
    label_digests: dict[str, str]
    audits: dict[str, Any]


def configuration_evidence(
    con: duckdb.DuckDBPyConnection, scope: ReceiptScope | None = None
) -> ConfigurationEvidence:
    """Of every configuration, or of the configurations, runs and raw files of ``scope``."""
    run_fingerprints = compute_run_fingerprints(con)
    if scope is None:
        return ConfigurationEvidence(
            facts=configuration_facts(con),
            fingerprints=group_by_configuration(run_fingerprints),
            runs=runs_by_configuration(run_fingerprints),
            gates=gate_facts(con),
            label_digests=label_digests(con),
            audits=audit_facts(con),
        )
    covered = [fp for fp in run_fingerprints if (fp.partition_key, fp.run_id) in scope.runs]

    def within(facts: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in facts.items() if key in scope.configurations}

    return ConfigurationEvidence(
        facts=within(configuration_facts(con, scope.raw_files)),
        fingerprints=group_by_configuration(covered),
        runs=runs_by_configuration(covered),
        gates=within(gate_facts(con)),
        label_digests=within(label_digests(con, scope.raw_files)),
        audits=within(audit_facts(con)),
    )


def _configurations(
    con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]], scope: ReceiptScope | None
) -> list[dict[str, Any]]:
    evidence = configuration_evidence(con, scope)
    facts = evidence.facts
    status = {
        row["partition_key"]: row["status"] for row in rows if row["row_kind"] == "configuration"
    }
    configurations = []
    keys = set(facts) | set(status)
    for key in sorted(keys if scope is None else keys & scope.configurations):
        configurations.append(
            {
                "partition_key": key,
                "config_key": facts.get(key, {}).get("config_key"),
                "status": status.get(key, "not on the leaderboard"),
                "policy_versions": facts.get(key, {}).get("policy_versions", []),
                "fingerprint": evidence.fingerprints.get(key),
                "runs": evidence.runs.get(key, []),
                "gates": evidence.gates.get(key, NOT_EVALUATED),
                "label_digest": evidence.label_digests.get(key),
                "audit": evidence.audits.get(key, NO_VERDICTS),
            }
        )
    return configurations


def _leaderboard_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    entries = [
        {
            "name": row["name"],
            "row_kind": row["row_kind"],
            "partition_key": row["partition_key"],
            "digest": row_digest(row),
            "values": row,
        }
        for row in rows
    ]
    names = [entry["name"] for entry in entries]
    if len(set(names)) != len(names):
        raise ReceiptError("leaderboard rows do not have unique names; cannot issue a receipt")
    return {
        "columns": list(rows[0]) if rows else [],
        "rows": entries,
        "digest": rows_digest((e["name"], e["digest"]) for e in entries),
    }


def build_receipt(
    con: duckdb.DuckDBPyConnection,
    *,
    publisher: str | None = None,
    published_at: datetime | None = None,
    project_dir: Path = PROJECT_DIR,
    published_files: Mapping[str, Any] | None = None,
    exported_files: Mapping[str, Any] | None = None,
    scope: ReceiptScope | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The unsigned receipt of a leaderboard: of ``rows`` (the staged board's, which its
    publication commits to the ``leaderboard`` table: litmus.trust.publication), else of the
    board the table holds; with the digests of the files it is published as
    (``publication.file_digests``) and of the other files in exports/ (drift plots:
    ``publication.exported_digests``).

    ``scope`` (verification): the facts of what an earlier receipt covers."""
    rows = leaderboard_table_rows(con) if rows is None else rows
    if rows is None:
        raise ReceiptError("the warehouse has no leaderboard table yet; publish one first")
    configurations = _configurations(con, rows, scope)
    policy_versions = sorted(
        {v for c in configurations for v in c["policy_versions"]},
        key=lambda v: (v is not None, v or ""),
    )
    when = (published_at or datetime.now(UTC)).astimezone(UTC)
    return {
        "receipt": RECEIPT_KIND,
        "receipt_version": RECEIPT_VERSION,
        "published_at": when.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "publisher": publisher or publisher_identity(),
        "code": code_versions(project_dir),
        "bootstrap": _bootstrap_settings(con),
        "policy_versions": policy_versions,
        "suites": suite_facts(con, scope),
        "raw_files": raw_file_facts(con, scope),
        "configurations": configurations,
        "leaderboard": _leaderboard_section(rows),
        "alerts": alert_facts(con),
        "published_files": dict(published_files or {}),
        "exported_files": dict(exported_files or {}),
    }
