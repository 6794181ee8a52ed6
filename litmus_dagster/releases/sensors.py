"""Automation over time (SPEC §9): pick up landed files, re-score stale configurations, and
publish once the scoring runs are done. The landing sensor and the schedule compute the same
plan as ``litmus run`` (``litmus.planning.plan``) and hand it to the one executor
(``litmus_dagster.jobs.run_requests``), which turns each item into a run of its job.

- ``landing_sensor`` watches ``<home>/landing``. A file is considered once its size and
  modification time are unchanged across two evaluations, and identified by content hash (a
  re-copied file is not run twice). It reads the configurations of each new file, registers
  any unknown ``configurations`` partition and plans: one ``land_and_score_configuration``
  run per landed configuration, plus whatever else the warehouse needs (stale labels, audit
  verdicts loaded), each requested once per reason. It also records each verdict file
  ``litmus audit load`` stored since its last evaluation as a materialization of
  ``audit_verdicts`` (the command itself does not load Dagster). Cursor: JSON of the
  observed files and the content hashes handled.
- ``rescore_schedule`` (hourly) requests a ``score_configuration`` run for every configuration
  the plan names (labels stale: labeler, refusal classifier or suite changed, see
  litmus.planning.status; or audited rows / gates out of date), asking again at every tick.
- ``publish_when_scored`` evaluates the declarative automation condition of
  ``publish_leaderboard`` (``litmus_dagster.jobs.PUBLISH_WHEN_SCORED``): one run when audited
  rows were rebuilt since the last publication, or the metric definitions changed, once no
  scoring run is still queued or running — so one publish follows a whole batch of scoring
  runs.
"""

import dagster as dg

from litmus.planning.plan import LandedConfiguration, Plan, WarehouseFacts, compute_plan, read_facts
from litmus.releases.landing import LandingCursor, file_configurations, scan_landing
from litmus.warehouse import WarehouseBusyError, warehouse_exists
from litmus_dagster.audit.assets import verdict_load_events
from litmus_dagster.jobs import (
    PUBLISH,
    ROLE_TAG,
    SCORE_ROLE,
    TRIGGER_TAG,
    ingest_job,
    land_and_score_job,
    publish_job,
    refresh_audit_job,
    run_requests,
    score_configuration_job,
)
from litmus_dagster.partitions import register, registration_requests
from litmus_dagster.resources import LitmusWarehouse

# New content hashed and read per evaluation; the rest waits for the next one, so one
# evaluation stays well inside Dagster's sensor timeout.
LANDING_BYTES_PER_EVALUATION = 1024**3  # about 12 s of hashing and config reading
SCHEDULE_LOCK_WAIT_S = 10.0
# The sensor runs every 30 s: it does not wait long for a warehouse a run is writing (the
# landed files are planned anyway; the rest is planned at the next evaluation).
SENSOR_LOCK_WAIT_S = 2.0
UNFINISHED = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
PARTITION_TAG = "dagster/partition"


def warehouse_facts(warehouse: LitmusWarehouse, timeout_s: float) -> WarehouseFacts:
    """The plan's facts; raises WarehouseBusyError when a run holds the warehouse longer."""
    if not warehouse_exists(warehouse.duckdb_path):
        return WarehouseFacts()  # nothing ingested yet: only landed files to plan
    with warehouse.get_connection(timeout_s=timeout_s) as con:
        return read_facts(con)


def scoring_partitions(instance: dg.DagsterInstance) -> set[str]:
    """Configurations with a scoring run queued or in progress (not requested again)."""
    return {
        run.tags.get(PARTITION_TAG, "")
        for run in instance.get_runs(
            filters=dg.RunsFilter(tags={ROLE_TAG: SCORE_ROLE}, statuses=UNFINISHED)
        )
    }


def landing_plan(
    context: dg.SensorEvaluationContext, warehouse: LitmusWarehouse
) -> tuple[Plan, LandingCursor, list[str]]:
    """The plan of one landing-sensor evaluation, the cursor after it, and what it noted."""
    paths = warehouse.paths
    scan = scan_landing(
        paths, LandingCursor.from_json(context.cursor), byte_budget=LANDING_BYTES_PER_EVALUATION
    )
    for name in scan.already_stored:
        context.log.info(f"{name}: already in the raw store (ingested before), not run again")
    for name in scan.repeated:
        context.log.info(f"{name}: same content as a file handled before, not run again")

    landed: dict[str, LandedConfiguration] = {}
    without_configuration: list[str] = []
    for file in scan.new_files:
        try:
            found = file_configurations(file.path, paths)
        except Exception as problem:  # an unreadable log is ingestion's to quarantine/report
            context.log.warning(f"{file.name}: cannot read its configurations: {problem}")
            without_configuration.append(file.sha256)
            continue
        if not found.configurations:
            without_configuration.append(file.sha256)
        for key, config in found.configurations.items():
            before = landed.get(key, LandedConfiguration(config, ()))
            landed[key] = LandedConfiguration(
                config, (*before.hashes, file.sha256), (*before.names, file.name)
            )
        context.log.info(
            f"{file.name}: {found.records_read} records, configurations "
            f"{sorted(found.configurations.values())}"
        )
    notes = []
    try:
        facts = warehouse_facts(warehouse, SENSOR_LOCK_WAIT_S)
    except WarehouseBusyError as busy:
        facts = WarehouseFacts()
        notes.append(f"{busy}; planned the landed files only")
    plan = compute_plan(facts, landed=landed, landed_without_configuration=without_configuration)
    waiting = len(scan.waiting) + len(scan.deferred)
    if waiting:
        notes.append(f"{waiting} still settling")
    return plan, scan.cursor, notes


def verdict_loads_to_report(
    instance: dg.DagsterInstance, warehouse: LitmusWarehouse
) -> list[dg.AssetMaterialization]:
    """The verdict files ``litmus audit load`` stored since the instance last recorded one
    (that command does not load Dagster); a busy warehouse leaves them to the next tick."""
    if not warehouse_exists(warehouse.duckdb_path):
        return []
    try:
        with warehouse.get_connection(timeout_s=SENSOR_LOCK_WAIT_S) as con:
            return verdict_load_events(instance, con)
    except WarehouseBusyError:
        return []


@dg.sensor(
    name="landing_sensor",
    jobs=[land_and_score_job, ingest_job, score_configuration_job, refresh_audit_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "New run files in <home>/landing → add the configuration partition and score it; "
        "stale or re-audited configurations are scored too."
    ),
)
def landing_sensor(
    context: dg.SensorEvaluationContext, warehouse: LitmusWarehouse
) -> dg.SensorResult:
    plan, cursor, notes = landing_plan(context, warehouse)
    for note in notes:
        context.log.info(note)
    requests = run_requests(
        plan, trigger="landing", running=scoring_partitions(context.instance), run_keys=True
    )
    waiting = [note for note in notes if note.endswith("still settling")]
    return dg.SensorResult(
        run_requests=requests,
        asset_events=verdict_loads_to_report(context.instance, warehouse),
        dynamic_partitions_requests=registration_requests(context.instance, plan.partitions()),
        cursor=cursor.to_json(),
        skip_reason=(
            None
            if requests
            else f"no new landed files ({waiting[0]})"
            if waiting
            else "no new landed files"
        ),
    )


@dg.schedule(
    name="rescore_stale_configurations",
    cron_schedule="17 * * * *",
    job=score_configuration_job,
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
        plan = compute_plan(warehouse_facts(warehouse, SCHEDULE_LOCK_WAIT_S))
    except WarehouseBusyError as busy:
        return dg.SkipReason(f"{busy}; trying again at the next tick")
    if plan.empty:
        return dg.SkipReason("every configuration is labeled with the current code")
    # the warehouse outlived the Dagster instance: re-register its partitions
    register(context.instance, plan.partitions())
    requests = run_requests(
        plan,
        trigger="rescore",
        running=scoring_partitions(context.instance),
        job=score_configuration_job,
    )
    return requests or dg.SkipReason("every stale configuration is already being re-scored")


# The sensor that evaluates the publish job's condition, on by default like the landing
# sensor and the re-score schedule. Dagster would otherwise add its default automation sensor,
# which starts stopped; ``asset_job_keys`` is how a sensor claims a job's condition in this
# (pinned) Dagster version.
publish_automation = dg.AutomationConditionSensorDefinition(
    "publish_when_scored",
    target=PUBLISH,
    asset_job_keys={dg.AssetJobKey(publish_job.name)},
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
    run_tags={TRIGGER_TAG: "automation: scoring done or metric definitions changed"},
    description=(
        "Publish (metrics, leaderboard, release drift, regression alerts) once a batch of "
        "scoring runs has finished, or when the metric definitions changed."
    ),
)
