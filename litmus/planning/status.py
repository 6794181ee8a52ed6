"""What the warehouse holds, per configuration: the numbers ``litmus status`` prints, and
whether the configuration's labels are **stale** (must be re-scored).

A configuration is stale when any of these holds (each gives a reason):

- some of its trajectories have no label (new data arrived for it);
- its labels were written by another labeler version than the current ``LABELER_VERSION``;
- its refusal signals came from another refusal-classifier version than the current one;
- its suite (name and version) was stored after its labels were written (the suite was
  re-loaded, so the oracles the labels were computed from may differ).

Re-scoring reads ``raw_trajectories`` in the warehouse, never the landed or raw-store files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from litmus.keys import CONFIGURATION_KEYS_SQL, labeled_partition_keys
from litmus.labeling import LABELER_VERSION, REFUSAL_RULES_VERSION
from litmus.settings import LitmusPaths


@dataclass(frozen=True)
class PartitionStatus:
    partition_key: str
    config_key: str
    trajectories: int
    labeled: int
    labeler_versions: tuple[str, ...]
    outcomes: dict[str, int]
    classifier_versions: tuple[str, ...] = ()
    stale_reasons: tuple[str, ...] = ()
    audit_reasons: dict[str, int] = field(default_factory=dict)  # needs_audit rows by reason

    @property
    def stale(self) -> bool:
        return bool(self.stale_reasons)


def current_classifier_version() -> str:
    """The default classifier's version (``litmus.labeling.refusal.default_classifier``)."""
    return REFUSAL_RULES_VERSION


# Per configuration: its rows, labels, label and classifier versions, outcomes, whether a
# suite it ran was stored again after its first label, and its needs_audit reasons.
_PARTITION_STATUS_SQL = f"""
WITH keys AS ({CONFIGURATION_KEYS_SQL}),
raw AS (
    SELECT partition_key, count(*) AS n,
           list(DISTINCT suite || chr(0) || suite_version) AS suites
    FROM raw_trajectories GROUP BY 1
),
labeled AS (
    SELECT partition_key, count(*) AS n,
           list(DISTINCT labeler_version ORDER BY labeler_version) AS versions,
           -- both labeled_at and the suites' loaded_at are UTC
           min(labeled_at) AS first_labeled_at_utc
    FROM trajectory_labels GROUP BY 1
),
signals AS (
    SELECT partition_key,
           list(DISTINCT classifier_version ORDER BY classifier_version) AS versions
    FROM refusal_signals GROUP BY 1
),
suite_loads AS (
    SELECT suite || chr(0) || suite_version AS suite_id, loaded_at FROM suites
),
suite_reloaded AS (
    SELECT raw.partition_key, max(s.loaded_at) AS last_suite_load
    FROM raw, unnest(raw.suites) AS u(suite_id) JOIN suite_loads s USING (suite_id)
    GROUP BY 1
),
outcomes AS (
    SELECT partition_key, map(list(outcome ORDER BY outcome), list(n ORDER BY outcome)) AS m
    FROM (SELECT partition_key, outcome, count(*) AS n
          FROM trajectory_labels GROUP BY 1, 2)
    GROUP BY 1
),
audit_reasons AS (
    SELECT partition_key,
           histogram(coalesce(audit_reason_code, 'unstated')) AS m
    FROM trajectory_labels WHERE label = 'needs_audit' GROUP BY 1
)
SELECT raw.partition_key, keys.config_key, raw.n, coalesce(labeled.n, 0),
       coalesce(labeled.versions, []), coalesce(signals.versions, []), outcomes.m,
       coalesce(suite_reloaded.last_suite_load > labeled.first_labeled_at_utc, false),
       audit_reasons.m
FROM raw
JOIN keys USING (partition_key)
LEFT JOIN labeled USING (partition_key)
LEFT JOIN signals USING (partition_key)
LEFT JOIN suite_reloaded USING (partition_key)
LEFT JOIN outcomes USING (partition_key)
LEFT JOIN audit_reasons USING (partition_key)
ORDER BY raw.partition_key
"""


def partition_statuses(
    con: duckdb.DuckDBPyConnection,
    *,
    labeler_version: str = LABELER_VERSION,
    classifier_version: str | None = None,
) -> list[PartitionStatus]:
    """Every configuration in ``raw_trajectories`` with its label counts and staleness,
    judged against ``labeler_version`` / ``classifier_version`` (default: the current code)."""
    classifier_version = classifier_version or current_classifier_version()
    statuses = []
    for (
        key,
        config,
        n_raw,
        n_labeled,
        versions,
        classifiers,
        outcome_map,
        reloaded,
        reason_map,
    ) in con.execute(_PARTITION_STATUS_SQL).fetchall():
        labeled = _Labeled(int(n_raw), int(n_labeled), tuple(versions), tuple(classifiers))
        statuses.append(
            PartitionStatus(
                partition_key=key,
                config_key=config,
                trajectories=labeled.rows,
                labeled=labeled.labeled,
                labeler_versions=labeled.labeler_versions,
                outcomes=dict(outcome_map or {}),
                classifier_versions=labeled.classifier_versions,
                stale_reasons=labeled.stale_reasons(
                    labeler_version, classifier_version, suite_reloaded=reloaded
                ),
                audit_reasons={k: int(v) for k, v in sorted((reason_map or {}).items())},
            )
        )
    return statuses


@dataclass(frozen=True)
class _Labeled:
    """How far a configuration's rows are labeled, and by which code."""

    rows: int
    labeled: int
    labeler_versions: tuple[str, ...]
    classifier_versions: tuple[str, ...]

    def stale_reasons(
        self, labeler_version: str, classifier_version: str, *, suite_reloaded: bool
    ) -> tuple[str, ...]:
        """Why the labels are not current (none: they are)."""
        reasons = []
        if self.labeled != self.rows:
            reasons.append(f"{self.labeled} of {self.rows} trajectories labeled")
        if not self.labeled:
            return tuple(reasons)
        if self.labeler_versions != (labeler_version,):
            reasons.append(
                f"labeler version {', '.join(self.labeler_versions)} (current {labeler_version})"
            )
        if self.classifier_versions != (classifier_version,):
            reasons.append(
                f"refusal classifier {', '.join(self.classifier_versions) or 'none'} "
                f"(current {classifier_version})"
            )
        if suite_reloaded:
            reasons.append("suite stored again after the labels were written")
        return tuple(reasons)


def stale_partitions(
    con: duckdb.DuckDBPyConnection,
    *,
    labeler_version: str = LABELER_VERSION,
    classifier_version: str | None = None,
) -> list[PartitionStatus]:
    """The configurations that must be re-scored, with why."""
    return [
        status
        for status in partition_statuses(
            con, labeler_version=labeler_version, classifier_version=classifier_version
        )
        if status.stale
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


def quarantined_records(
    con: duckdb.DuckDBPyConnection, file: str | None = None
) -> list[tuple[str, int, str, str, str]]:
    """(file, line, field, reason, reason code) of every quarantined record, or of the landed
    file ``file`` names (by name or content hash), in file and line order."""
    return con.execute(
        """
        SELECT source_name, line_no, field, reason, reason_code
        FROM quarantine
        WHERE ? IS NULL OR source_name = ? OR source_file_hash = ?
        ORDER BY source_name, line_no, field
        """,
        [file, file, file],
    ).fetchall()


def quarantined_file_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The names of the landed files with quarantined records, sorted."""
    rows = con.execute("SELECT DISTINCT source_name FROM quarantine ORDER BY 1").fetchall()
    return [name for (name,) in rows]


def raw_file_totals(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(raw files stored, records they held)."""
    files, records = con.execute(
        "SELECT count(*), coalesce(sum(records_total), 0) FROM raw_files"
    ).fetchone()
    return int(files), int(records)


def partition_suites(
    con: duckdb.DuckDBPyConnection, partition_key: str | None = None
) -> dict[str, str]:
    """partition key → the suites its trajectories ran (``suite@version``, sorted, joined by
    `` + ``), of every partition or of ``partition_key``."""
    return dict(
        con.execute(
            "SELECT partition_key, string_agg(DISTINCT suite || '@' || suite_version, ' + ' "
            "ORDER BY suite || '@' || suite_version) FROM raw_trajectories "
            "WHERE ? IS NULL OR partition_key = ? GROUP BY 1",
            [partition_key, partition_key],
        ).fetchall()
    )


def suite_sizes(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """``suite@version`` → (families, instances) of every stored suite."""
    return {
        f"{suite}@{version}": (int(families), int(instances))
        for suite, version, families, instances in con.execute(
            "SELECT suite, suite_version, count(DISTINCT family_id), count(*) "
            "FROM suite_instances GROUP BY ALL"
        ).fetchall()
    }


@dataclass(frozen=True)
class PartitionContents:
    """What one configuration's accepted trajectories came from."""

    trajectories: int
    runs: int
    source_files: int
    suites: int


def partition_contents(con: duckdb.DuckDBPyConnection, partition_key: str) -> PartitionContents:
    row = con.execute(
        """
        SELECT count(*), count(DISTINCT run_id), count(DISTINCT source_file_hash),
               count(DISTINCT suite || '@' || suite_version)
        FROM raw_trajectories WHERE partition_key = ?
        """,
        [partition_key],
    ).fetchone()
    return PartitionContents(*(int(value) for value in row))


def waiting_landed_files(con: duckdb.DuckDBPyConnection, paths: LitmusPaths) -> list[str]:
    """The landed run files (names under landing/) that no ingestion stored yet: no raw file
    of the same name and size (a cheap look, no hashing: ``litmus run`` decides by content)."""
    from litmus.runs import landed_files

    stored = set(con.execute("SELECT original_name, size_bytes FROM raw_files").fetchall())
    waiting = []
    for path in landed_files(paths) if paths.landing.is_dir() else []:
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if size and (path.name, size) not in stored:
            waiting.append(path.relative_to(paths.landing).as_posix())
    return waiting


@dataclass(frozen=True)
class PartitionReview:
    """Where a configuration stands after its rule labels: human audit and publication."""

    partition_key: str
    audited: int  # rows whose label came from a human verdict (audit or override)
    pending_audit: int  # rows still needs_audit once the verdicts are applied
    outcomes: dict[str, int]  # the outcomes a leaderboard would count, verdicts applied
    audit_current: bool  # the audited rows reflect the current labels and verdicts
    gates_evaluated: bool
    withheld_by: tuple[str, ...]  # the gates that do not pass
    pending_reasons: dict[str, int] = field(default_factory=dict)  # pending rows by reason
    labeling_note: str | None = None  # a labeling disagreement over its bound withholds it

    @property
    def publication(self) -> str:
        """What the publication relation (``litmus.gates.publication_decision``) says of it."""
        from litmus.gates.publication_decision import Publication, Reason, status_text

        entry = Publication(
            self.partition_key,
            gated=self.gates_evaluated,
            failed_gates=tuple(Reason(gate, gate) for gate in self.withheld_by),
            labeling_note=self.labeling_note,
        )
        return status_text(entry, audit_current=self.audit_current)


def partition_reviews(con: duckdb.DuckDBPyConnection) -> dict[str, PartitionReview]:
    """partition_key → its audit and gate state, for every labeled configuration."""
    from litmus.audit.audited import stale_audited_partitions
    from litmus.gates.publication_decision import publication

    labeled = labeled_partition_keys(con)
    decided = publication(con, labeled)
    out_of_date = stale_audited_partitions(con)
    audited: dict[str, tuple[int, int, dict, dict]] = {
        key: (int(n_audited), int(n_pending), dict(outcome_map or {}), dict(reason_map or {}))
        for key, n_audited, n_pending, outcome_map, reason_map in con.execute(
            """
            SELECT partition_key,
                   count(*) FILTER (WHERE label_source IN ('audit', 'override')),
                   count(*) FILTER (WHERE label = 'needs_audit'),
                   histogram(outcome),
                   histogram(coalesce(audit_reason_code, 'unstated'))
                       FILTER (WHERE label = 'needs_audit')
            FROM audited_trajectories
            GROUP BY 1
            """
        ).fetchall()
    }
    reviews = {}
    for key in labeled:
        n_audited, n_pending, outcomes, reasons = audited.get(key, (0, 0, {}, {}))
        entry = decided[key]
        reviews[key] = PartitionReview(
            partition_key=key,
            audited=n_audited,
            pending_audit=n_pending,
            outcomes=outcomes,
            pending_reasons={k: int(v) for k, v in sorted(reasons.items())},
            audit_current=key not in out_of_date,
            gates_evaluated=entry.gated,
            withheld_by=tuple(reason.code for reason in entry.failed_gates),
            labeling_note=entry.labeling_note,
        )
    return reviews


NOT_ON_BOARD = (
    "passes its gates, but is not on the published board (the last publication failed or "
    "has not run yet: `litmus run`)"
)


def published_partitions(exports: Path) -> set[str] | None:
    """The configurations the last committed publication shows as published (read from its
    receipt, without verifying it); None when nothing was ever published there."""
    from litmus.trust.publication import RECEIPT_NAME

    try:
        receipt = json.loads((exports / RECEIPT_NAME).read_text(encoding="utf-8"))
        return {
            str(entry["partition_key"])
            for entry in receipt["configurations"]
            if entry.get("status") == "published"
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def publication_state(review: PartitionReview, on_board: set[str] | None) -> str:
    """What ``litmus status`` says of a configuration's publication: "published" when the
    published board shows it, and only then; when its rows have been re-scored since (a run
    cut short, or newer runs waiting), what they now decide follows."""
    state = review.publication
    shown = on_board is not None and review.partition_key in on_board
    if state == "published" and not shown:
        return NOT_ON_BOARD
    if state != "published" and shown:
        return f"published; since then {state} (the next `litmus run` publishes that)"
    return state
