"""Jobs: ingest landed files, score one configuration partition, publish the leaderboard."""

import dagster as dg

from litmus_dagster.partitions import configurations

ingest_job = dg.define_asset_job(
    "ingest_landed_files",
    selection=dg.AssetSelection.assets("suite_catalog", "raw_run_files"),
    description="Store landed run files and suites; add configuration partitions.",
)

score_configuration_job = dg.define_asset_job(
    "score_configuration",
    selection=dg.AssetSelection.assets(
        "raw_trajectories", "labeled_trajectories", "audited_trajectories", "publication_gates"
    ),
    partitions_def=configurations,
    description="Label one configuration partition (raw → labeled → audited → gated).",
)
