"""The LITMUS code location: each domain module exposes its definitions; this merges them."""

import dagster as dg

from litmus_dagster.ingestion import ingestion_assets
from litmus_dagster.jobs import ingest_job, score_configuration_job
from litmus_dagster.labeling import labeling_assets
from litmus_dagster.metrics import metrics_assets, metrics_resources
from litmus_dagster.resources import LitmusWarehouse

defs = dg.Definitions(
    assets=[*ingestion_assets, *labeling_assets, *metrics_assets],
    jobs=[ingest_job, score_configuration_job],
    resources={"warehouse": LitmusWarehouse(), **metrics_resources},
)
