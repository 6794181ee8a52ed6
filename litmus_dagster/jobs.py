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

"Scoring a partition" means every asset partitioned by ``configurations`` (raw → labeled →
audited, and whatever per-configuration gates the other domains add); publishing means the
metrics group and everything downstream of those, minus the partitioned assets themselves.
Both are derived from the domain packages' asset lists, so a new per-configuration asset is
picked up without editing this file.
"""

from collections.abc import Iterable
from typing import Any

import dagster as dg

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
AUDIT_REFRESH = dg.AssetSelection.assets("audited_trajectories", "publication_gates")
PUBLISH = (
    dg.AssetSelection.groups(METRICS_GROUP) | PER_CONFIGURATION.downstream(include_self=False)
) - PER_CONFIGURATION

# Run tags: what a run is for (the publish sensor waits for every "score" run to finish).
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

publish_job = dg.define_asset_job(
    "publish_leaderboard",
    selection=PUBLISH,
    description="dbt metrics, CIs, leaderboard and release drift over every scored partition.",
    tags={ROLE_TAG: PUBLISH_ROLE},
)

ALL_JOBS = [ingest_job, land_and_score_job, score_configuration_job, refresh_audit_job, publish_job]
