"""Jobs the release automation launches, and the run tags it reads back.

``land_and_score_configuration`` stores every landed file and then scores ONE configuration
partition in the same run, so scoring always sees its ingested rows (two separate runs could
start in either order). Ingestion is idempotent: a second such run skips files already
stored. ``rescore_configuration`` scores one partition from the warehouse's raw rows only.
``publish_leaderboard`` recomputes the metrics, the leaderboard and the release drift once the
scoring runs are done.

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

land_and_score_job = dg.define_asset_job(
    "land_and_score_configuration",
    selection=INGESTION | PER_CONFIGURATION,
    description=(
        "Store and parse every landed file, then score one configuration partition. "
        "Requested by the landing sensor."
    ),
    tags={ROLE_TAG: SCORE_ROLE},
)

rescore_job = dg.define_asset_job(
    "rescore_configuration",
    selection=PER_CONFIGURATION,
    description=(
        "Re-score one configuration partition from the warehouse's raw rows (no ingestion). "
        "Requested by the rescore schedule for stale partitions."
    ),
    tags={ROLE_TAG: SCORE_ROLE},
)

publish_job = dg.define_asset_job(
    "publish_leaderboard",
    selection=PUBLISH,
    description="dbt metrics, CIs, leaderboard and release drift over every scored partition.",
    tags={ROLE_TAG: PUBLISH_ROLE},
)
