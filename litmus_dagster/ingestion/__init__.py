from litmus_dagster.ingestion.assets import raw_run_files, raw_trajectories, suite_catalog

ingestion_assets = [suite_catalog, raw_run_files, raw_trajectories]

__all__ = ["ingestion_assets"]
