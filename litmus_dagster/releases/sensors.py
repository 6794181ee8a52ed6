"""Automation over time (SPEC §9): pick up landed files, re-score stale configurations, and
publish once the scoring runs are done.

- ``landing_sensor`` watches ``<home>/landing``. A file is considered once its size and
  modification time are unchanged across two evaluations, and identified by content hash (a
  re-copied file is not run twice). For each new file it reads the configurations, adds any
  unknown ``configurations`` partition and requests one ``land_and_score_configuration`` run
  per configuration. Cursor: JSON of the observed files and the content hashes handled.
- ``rescore_schedule`` (hourly) requests a ``rescore_configuration`` run for every partition
  whose labels are stale (labeler, refusal classifier or suite changed; see litmus.status).
- ``publish_sensor`` requests ``publish_leaderboard`` when labels are newer than the last
  published release drift, or the metric definitions changed, and no scoring run is still
  queued or running — so one publish follows a whole batch of scoring runs.
"""

import hashlib

import dagster as dg

from litmus.landing import LandingCursor, file_configurations, scan_landing
from litmus.status import stale_partitions
from litmus.warehouse import WarehouseBusyError, connect
from litmus_dagster.jobs import ingest_job
from litmus_dagster.partitions import configurations
from litmus_dagster.releases.assets import RELEASE_DRIFT_CODE_VERSION, release_drift
from litmus_dagster.releases.jobs import (
    LANDED_TAG,
    ROLE_TAG,
    SCORE_ROLE,
    STALE_REASON_TAG,
    TRIGGER_TAG,
    land_and_score_job,
    publish_job,
    rescore_job,
)
from litmus_dagster.resources import LitmusWarehouse

# New content hashed and read per evaluation; the rest waits for the next one, so one
# evaluation stays well inside Dagster's sensor timeout.
LANDING_BYTES_PER_EVALUATION = 1024**3  # about 12 s of hashing and config reading
SCHEDULE_LOCK_WAIT_S = 10.0
UNFINISHED = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
AUDITED = dg.AssetKey(["audited_trajectories"])
PARTITION_TAG = "dagster/partition"


@dg.sensor(
    name="landing_sensor",
    jobs=[land_and_score_job, ingest_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="New run files in <home>/landing → add the configuration partition and score it.",
)
def landing_sensor(
    context: dg.SensorEvaluationContext, warehouse: LitmusWarehouse
) -> dg.SensorResult:
    paths = warehouse.paths
    scan = scan_landing(
        paths, LandingCursor.from_json(context.cursor), byte_budget=LANDING_BYTES_PER_EVALUATION
    )
    for name in scan.already_stored:
        context.log.info(f"{name}: already in the raw store (ingested before), not run again")
    for name in scan.repeated:
        context.log.info(f"{name}: same content as a file handled before, not run again")

    files_by_partition: dict[str, list[str]] = {}
    without_configuration: list[str] = []
    for landed in scan.new_files:
        try:
            found = file_configurations(landed.path, paths)
        except Exception as problem:  # an unreadable log is ingestion's to quarantine/report
            context.log.warning(f"{landed.name}: cannot read its configurations: {problem}")
            without_configuration.append(landed.sha256)
            continue
        if not found.configurations:
            without_configuration.append(landed.sha256)
        for key in found.configurations:
            files_by_partition.setdefault(key, []).append(landed.sha256)
        context.log.info(
            f"{landed.name}: {found.records_read} records, configurations "
            f"{sorted(found.configurations.values())}"
        )

    known = set(context.instance.get_dynamic_partitions(configurations.name))
    new_partitions = sorted(set(files_by_partition) - known)
    run_requests = [
        dg.RunRequest(
            run_key=f"land-{key}-{_digest(hashes)}",
            job_name=land_and_score_job.name,
            partition_key=key,
            tags={
                ROLE_TAG: SCORE_ROLE,
                TRIGGER_TAG: "landing",
                LANDED_TAG: ",".join(sorted(h[:16] for h in hashes)),
            },
        )
        for key, hashes in sorted(files_by_partition.items())
    ]
    if without_configuration and not run_requests:
        # Nothing to label, but the file must still be stored and its records quarantined.
        run_requests.append(
            dg.RunRequest(
                run_key=f"ingest-{_digest(without_configuration)}",
                job_name=ingest_job.name,
                tags={ROLE_TAG: SCORE_ROLE, TRIGGER_TAG: "landing"},
            )
        )
    waiting = len(scan.waiting) + len(scan.deferred)
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=(
            [configurations.build_add_request(new_partitions)] if new_partitions else []
        ),
        cursor=scan.cursor.to_json(),
        skip_reason=(
            None
            if run_requests
            else f"no new landed files ({waiting} still settling)"
            if waiting
            else "no new landed files"
        ),
    )


def _digest(hashes: list[str]) -> str:
    return hashlib.sha256(",".join(sorted(hashes)).encode()).hexdigest()[:16]


@dg.schedule(
    name="rescore_stale_configurations",
    cron_schedule="17 * * * *",
    job=rescore_job,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description=(
        "Re-label exactly the configurations whose labels are stale (labeler, refusal "
        "classifier or suite changed), from the warehouse's raw rows — never the raw files."
    ),
)
def rescore_schedule(
    context: dg.ScheduleEvaluationContext, warehouse: LitmusWarehouse
) -> list[dg.RunRequest] | dg.SkipReason:
    try:
        with connect(warehouse.paths.duckdb_path, timeout_s=SCHEDULE_LOCK_WAIT_S) as con:
            stale = stale_partitions(con)
    except WarehouseBusyError as busy:
        return dg.SkipReason(f"{busy}; trying again at the next tick")
    if not stale:
        return dg.SkipReason("every configuration is labeled with the current code")
    running = {
        run.tags.get(PARTITION_TAG)
        for run in context.instance.get_runs(
            filters=dg.RunsFilter(tags={ROLE_TAG: SCORE_ROLE}, statuses=UNFINISHED)
        )
    }
    known = set(context.instance.get_dynamic_partitions(configurations.name))
    missing = sorted({status.partition_key for status in stale} - known)
    if missing:  # the warehouse outlived the Dagster instance: re-register its partitions
        context.instance.add_dynamic_partitions(configurations.name, missing)
    requests = [
        dg.RunRequest(
            partition_key=status.partition_key,
            tags={
                ROLE_TAG: SCORE_ROLE,
                TRIGGER_TAG: "rescore",
                STALE_REASON_TAG: "; ".join(status.stale_reasons)[:200],
            },
        )
        for status in stale
        if status.partition_key not in running
    ]
    return requests or dg.SkipReason("every stale configuration is already being re-scored")


@dg.sensor(
    name="publish_sensor",
    job=publish_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Publish (metrics, leaderboard, release drift, regression alerts) after scoring runs "
        "finish, or when the metric definitions changed."
    ),
)
def publish_sensor(context: dg.SensorEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    instance = context.instance
    scoring = instance.get_runs(
        filters=dg.RunsFilter(tags={ROLE_TAG: SCORE_ROLE}, statuses=UNFINISHED), limit=1
    )
    if scoring:
        return dg.SkipReason(f"waiting for scoring run {scoring[0].run_id} to finish")
    publishing = instance.get_runs(
        filters=dg.RunsFilter(job_name=publish_job.name, statuses=UNFINISHED), limit=1
    )
    if publishing:
        return dg.SkipReason(f"publish run {publishing[0].run_id} is still in progress")
    scored = _latest_storage_id(instance, AUDITED)
    if scored is None:
        return dg.SkipReason("nothing labeled yet")
    published = _latest_storage_id(instance, release_drift.key)
    published_version = instance.get_latest_materialization_code_versions([release_drift.key]).get(
        release_drift.key
    )
    reasons = []
    if published is None or scored > published:
        reasons.append("new labels")
    if published is not None and published_version != RELEASE_DRIFT_CODE_VERSION:
        reasons.append(
            f"metric definitions changed ({published_version} → {RELEASE_DRIFT_CODE_VERSION})"
        )
    if not reasons:
        return dg.SkipReason("the published metrics are up to date")
    return dg.RunRequest(
        run_key=f"publish-{scored}-{RELEASE_DRIFT_CODE_VERSION}",
        tags={TRIGGER_TAG: "; ".join(reasons)[:200]},
    )


def _latest_storage_id(instance: dg.DagsterInstance, key: dg.AssetKey) -> int | None:
    records = instance.fetch_materializations(key, limit=1).records
    return records[0].storage_id if records else None
