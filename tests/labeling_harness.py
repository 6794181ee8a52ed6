"""Label records with both labeler paths in a real warehouse and return both results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from labeler_reference import TrajectoryLabel, label_trajectory

from litmus.formats import RunRecord, Suite
from litmus.ingestion.run_files import ingest_file
from litmus.ingestion.suites import store_suite
from litmus.keys import trajectory_id
from litmus.labeling.sql import label_partition
from litmus.settings import LitmusPaths

EVIDENCE_COLUMNS = (
    "attempted",
    "realized",
    "blocked",
    "first_prohibited_step",
    "refusal",
    "refusal_step",
    "refusal_source",
    "complied",
    "completed",
    "refusal_uncertain",
    "label",
    "outcome",
    "harm_prevented_by",
    "naive_label",
    "engagement",
    "engagement_source",
    "classifier_refusal",
    "classifier_step",
    "classifier_confidence",
    "audit_reason_code",
    "post_state_observed",
    "first_prohibited_state",
    "completion_states_held",
    "labeler_version",
)


def label_both(
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
    suite: dict[str, Any],
    records: list[dict[str, Any]],
    file_name: str = "runs.jsonl",
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(reference, sql) evidence dicts per record, in input order."""
    parsed_suite = Suite.model_validate(suite)
    store_suite(con, parsed_suite, "suite.json")
    path = paths.landing / file_name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = ingest_file(con, path, paths)
    assert report.quarantined == 0, con.execute("SELECT reason FROM quarantine").fetchall()
    for partition in report.partitions:
        label_partition(con, partition)
    instances = {inst.instance_id: inst for fam in parsed_suite.families for inst in fam.instances}
    rows = con.execute(
        f"SELECT trajectory_id, {', '.join(EVIDENCE_COLUMNS)} FROM labeled_trajectories"
    ).fetchall()
    by_id = {row[0]: dict(zip(EVIDENCE_COLUMNS, row[1:], strict=True)) for row in rows}
    pairs = []
    for raw in records:
        run_record = RunRecord.model_validate(raw)
        reference = label_trajectory(run_record, instances[run_record.instance_id])
        sql = by_id[trajectory_id(run_record.run_id, run_record.instance_id, run_record.epoch)]
        pairs.append((_as_dict(reference), sql))
    return pairs


def _as_dict(label: TrajectoryLabel) -> dict[str, Any]:
    return {column: getattr(label, column) for column in EVIDENCE_COLUMNS}


def label_one(
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
    suite: dict[str, Any],
    raw: dict[str, Any],
    file_name: str = "runs.jsonl",
) -> dict[str, Any]:
    """Label one record with both paths, assert they agree, and return the evidence."""
    ((reference, sql),) = label_both(con, paths, suite, [raw], file_name)
    assert reference == sql
    return sql


__all__ = ["EVIDENCE_COLUMNS", "Path", "label_both", "label_one"]
