"""The LITMUS code location: each domain module exposes its definitions; this merges them."""

import dagster as dg

from litmus_dagster.audit import audit_assets
from litmus_dagster.gates import gate_assets, gate_checks
from litmus_dagster.ingestion import ingestion_assets
from litmus_dagster.jobs import ALL_JOBS
from litmus_dagster.labeling import labeling_assets
from litmus_dagster.maintenance import maintain_lake_job, maintain_lake_schedule
from litmus_dagster.metrics import metrics_assets, metrics_resources
from litmus_dagster.releases import (
    release_assets,
    release_checks,
    release_resources,
    release_schedules,
    release_sensors,
)
from litmus_dagster.resources import RefusalJudgeResource, warehouse_from_environment
from litmus_dagster.trust import trust_assets

defs = dg.Definitions(
    assets=[
        *ingestion_assets,
        *labeling_assets,
        *audit_assets,
        *gate_assets,
        *metrics_assets,
        *release_assets,
        *trust_assets,
    ],
    asset_checks=[*gate_checks, *release_checks],
    jobs=[*ALL_JOBS, maintain_lake_job],
    # A run is one configuration's chain of steps (or one publication), each step after the
    # last: they run in the run's own process. Parallelism is between runs (one per
    # configuration, in parallel under a team instance: deploy/team/dagster.yaml); a process
    # per step would only load the code location again for every step.
    executor=dg.in_process_executor,
    sensors=release_sensors,
    schedules=[*release_schedules, maintain_lake_schedule],
    resources={
        "warehouse": warehouse_from_environment(),
        "refusal_judge": RefusalJudgeResource(),
        **metrics_resources,
        **release_resources,
    },
)
