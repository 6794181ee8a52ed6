"""Every job and asset selection of the code location, and the run tags the automation reads.

- ``ingest_landed_files``: store landed run files and suites, add configuration partitions.
- ``land_and_score_configuration``: store every landed file, then score ONE configuration
  partition in the same run, so scoring always sees its ingested rows (two separate runs
  could start in either order). Ingestion is idempotent: a second such run skips files
  already stored. Requested by the landing sensor.
- ``score_configuration``: score one partition from the warehouse's raw rows only (raw →
  labeled → audited → gated). ``litmus run``, ``litmus rescore`` and the re-score schedule.
- ``refresh_audit``: rebuild one partition's audited rows and re-run its gates, without
  re-labeling (audit verdicts loaded, or gate verdicts missing).
- ``publish_leaderboard``: the metrics, leaderboard and release drift, once scoring is done.
  ``litmus run`` runs it in-process; under the daemon its declarative automation condition
  (:data:`PUBLISH_WHEN_SCORED`, evaluated by the ``publish_when_scored`` sensor) requests
  one run once a batch of scoring runs has finished.

"Scoring a partition" means every asset partitioned by ``configurations`` (raw → labeled →
audited, and whatever per-configuration gates the other domains add); publishing means the
metrics group and everything downstream of those, minus the partitioned assets themselves.
Both are derived from the domain packages' asset lists, so a new per-configuration asset is
picked up without editing this file.

A scoring run of a configuration that a gate withholds fails in Dagster's sense: the gate's
blocking check fails the ``publication_gates`` step and skips ``publishable_configuration``.

:func:`job_for` maps a plan item to its job, for the in-process executor and the daemon
alike; :func:`run_requests` turns a plan into the daemon's run requests (the landing sensor
and the re-score schedule).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Collection, Iterable
from typing import Any

import dagster as dg

from litmus.planning.plan import Action, Plan, PlanItem
from litmus_dagster.audit import audit_assets
from litmus_dagster.gates import gate_assets
from litmus_dagster.ingestion import ingestion_assets
from litmus_dagster.labeling import labeling_assets
from litmus_dagster.metrics import metrics_assets
from litmus_dagster.metrics.assets import METRICS_GROUP
from litmus_dagster.partitions import configurations


def _per_configuration_keys(*asset_lists: Iterable[Any]) -> list[dg.AssetKey]:
    keys = []
    for assets in asset_lists:
        for asset in assets:
            if isinstance(asset, dg.AssetsDefinition) and asset.partitions_def == configurations:
                keys.extend(asset.keys)
    return keys


INGESTION = dg.AssetSelection.assets("suite_catalog", "raw_run_files")
PER_CONFIGURATION = dg.AssetSelection.assets(
    *_per_configuration_keys(
        ingestion_assets, labeling_assets, audit_assets, gate_assets, metrics_assets
    )
)
# Labels unchanged, verdicts (or the gates) changed: rebuild the audited rows and re-gate.
AUDIT_REFRESH = dg.AssetSelection.assets(
    "audited_trajectories", "publication_gates", "publishable_configuration"
)
PUBLISH = (
    dg.AssetSelection.groups(METRICS_GROUP) | PER_CONFIGURATION.downstream(include_self=False)
) - PER_CONFIGURATION

# Run tags: what a run is for.
ROLE_TAG = "litmus/role"
TRIGGER_TAG = "litmus/trigger"
LANDED_TAG = "litmus/landed_sha256"
STALE_REASON_TAG = "litmus/stale_reason"
SCORE_ROLE = "score"
PUBLISH_ROLE = "publish"

ingest_job = dg.define_asset_job(
    "ingest_landed_files",
    selection=INGESTION,
    description="Store landed run files and suites; add configuration partitions.",
    tags={ROLE_TAG: SCORE_ROLE},
)

land_and_score_job = dg.define_asset_job(
    "land_and_score_configuration",
    selection=INGESTION | PER_CONFIGURATION,
    description=(
        "Store and parse every landed file, then score one configuration partition. "
        "Requested by the landing sensor."
    ),
    tags={ROLE_TAG: SCORE_ROLE},
)

score_configuration_job = dg.define_asset_job(
    "score_configuration",
    selection=PER_CONFIGURATION,
    partitions_def=configurations,
    description=(
        "Score one configuration partition from the warehouse's raw rows (raw → labeled → "
        "audited → gated; no ingestion). `litmus run`, `litmus rescore` and the re-score "
        "schedule."
    ),
    tags={ROLE_TAG: SCORE_ROLE},
)

refresh_audit_job = dg.define_asset_job(
    "refresh_audit",
    selection=AUDIT_REFRESH,
    partitions_def=configurations,
    description="Rebuild one configuration's audited rows from its labels and current verdicts "
    "and re-run its publication gates (no re-labeling).",
    tags={ROLE_TAG: SCORE_ROLE},
)

AC = dg.AutomationCondition
AUDITED = dg.AssetSelection.assets("audited_trajectories")
RELEASE_DRIFT = dg.AssetKey("release_drift")
# The last asset a publication writes: while it is still to come, a publication is running.
LEADERBOARD_RECEIPT = dg.AssetKey("leaderboard_receipt")

# Publish (SPEC §9) when some configuration's audited rows were rebuilt since the last
# publication, or the metric definitions changed (release_drift's code version carries their
# digest) — once no configuration is still queued or being scored and no publication is
# running, so one publication follows a whole batch of scoring runs. Evaluated on the job's
# root assets (the dbt staging models, the spot-check sample, the run fingerprints): every
# scoring run targets their per-configuration parents, so it counts as in progress from the
# moment it is queued until it wrote them.
NEW_AUDITED_ROWS = (
    AC.any_deps_updated()
    .allow(AUDITED)
    .since_last_handled()
    .with_label("audited rows rebuilt since the last publication")
)
# (a release drift never published has nothing to re-publish: scoring publishes it first)
METRIC_DEFINITIONS_CHANGED = AC.asset_matches(
    RELEASE_DRIFT, AC.code_version_changed() & ~AC.missing()
).with_label("metric definitions changed")
NOTHING_IN_PROGRESS = (
    ~AC.any_deps_in_progress()
    & ~AC.in_progress()
    & ~AC.asset_matches(LEADERBOARD_RECEIPT, AC.in_progress())
).with_label("no scoring run or publication in progress")
with warnings.catch_warnings():
    # job automation conditions are a preview feature of this Dagster version
    warnings.simplefilter("ignore", category=dg.PreviewWarning)
    PUBLISH_WHEN_SCORED = AC.any_job_root_assets_match(
        NEW_AUDITED_ROWS | METRIC_DEFINITIONS_CHANGED
    ) & AC.all_job_root_assets_match(NOTHING_IN_PROGRESS)

    publish_job = dg.define_asset_job(
        "publish_leaderboard",
        selection=PUBLISH,
        description=(
            "dbt metrics, CIs, leaderboard and release drift over every scored partition. "
            "`litmus run`; under the daemon, requested by its automation condition once "
            "scoring is done."
        ),
        tags={ROLE_TAG: PUBLISH_ROLE},
        automation_condition=PUBLISH_WHEN_SCORED,
    )

ALL_JOBS = [ingest_job, land_and_score_job, score_configuration_job, refresh_audit_job, publish_job]


# ----------------------------------------------------------------------------- plan → runs


def job_for(item: PlanItem) -> dg.UnresolvedAssetJobDefinition:
    """The job that carries out one plan item (in-process and through the daemon alike)."""
    if item.action == Action.INGEST:
        return ingest_job
    if item.action == Action.LABEL:
        return land_and_score_job if item.landed else score_configuration_job
    if item.action == Action.REAUDIT:
        return refresh_audit_job
    return publish_job


def run_requests(
    plan: Plan,
    *,
    trigger: str,
    running: Collection[str] = (),
    run_keys: bool = False,
    job: dg.UnresolvedAssetJobDefinition | None = None,
) -> list[dg.RunRequest]:
    """The daemon's runs for ``plan``: one per configuration not already being scored
    (``running``; newly landed files are always requested), and one ingestion run for landed
    files without a configuration.

    With ``run_keys`` (a sensor, evaluated every few seconds) each request carries a key made
    of what it is for, so an unchanged reason is never requested twice; the hourly schedule
    asks again at every tick instead, which retries a failed run. A schedule targets one job
    (``job``): scoring re-audits and re-gates too, so it serves every configuration item.
    """
    requests = []
    for item in plan.items:
        if item.action == Action.PUBLISH:  # the publish automation's, after the scoring runs
            continue
        # a configuration being scored is not asked again, unless files just landed for it:
        # the cursor has them as handled, so this request is their one chance to be stored
        if item.partition_key in running and not item.landed:
            continue
        tags = {ROLE_TAG: SCORE_ROLE, TRIGGER_TAG: trigger}
        if item.landed:
            tags[LANDED_TAG] = ",".join(sorted(h[:16] for h in item.landed))
        else:
            tags[STALE_REASON_TAG] = "; ".join(item.reasons)[:200]
        requests.append(
            dg.RunRequest(
                run_key=_run_key(item) if run_keys else None,
                job_name=(job or job_for(item)).name,
                partition_key=item.partition_key,
                tags=tags,
            )
        )
    return requests


def _run_key(item: PlanItem) -> str:
    what = item.landed or item.reasons
    digest = hashlib.sha256(",".join(sorted(what)).encode()).hexdigest()[:16]
    if item.action == Action.INGEST:
        return f"ingest-{digest}"
    prefix = "land" if item.landed else str(item.action)
    return f"{prefix}-{item.partition_key}-{digest}"
