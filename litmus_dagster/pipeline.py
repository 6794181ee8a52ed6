"""Run the LITMUS assets in-process against a persistent local Dagster instance.

This is what ``litmus run`` and ``litmus demo`` call: the same asset definitions the Dagster
UI shows, materialized without a server, with the run history kept in ``<home>/dagster`` so
``dagster dev`` (with ``DAGSTER_HOME`` pointing there) shows every run afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from litmus.sample import SampleManifest
from litmus.settings import LitmusPaths
from litmus.status import partition_statuses
from litmus.warehouse import connect
from litmus_dagster.definitions import defs
from litmus_dagster.metrics.assets import METRICS_GROUP
from litmus_dagster.partitions import configurations
from litmus_dagster.resources import LitmusWarehouse

Progress = Callable[[str], None]

INSTANCE_YAML = """\
# LITMUS local instance: SQLite run/event storage under this folder.
concurrency:
  pools:
    default_limit: 1   # one warehouse writer step at a time across runs
telemetry:
  enabled: false
"""

INGESTION = dg.AssetSelection.assets("suite_catalog", "raw_run_files")
PER_CONFIGURATION = dg.AssetSelection.assets(
    "raw_trajectories", "labeled_trajectories", "audited_trajectories"
)


@dataclass
class PipelineResult:
    ingested_partitions: list[str] = field(default_factory=list)
    scored_partitions: list[str] = field(default_factory=list)
    published: bool = False


def local_instance(paths: LitmusPaths) -> dg.DagsterInstance:
    home = paths.home / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    return dg.DagsterInstance.from_config(str(home))


def _all_assets() -> list:
    return list(defs.assets or [])


def _resources(paths: LitmusPaths) -> dict:
    resources = dict(defs.resources or {})
    resources["warehouse"] = LitmusWarehouse(home=str(paths.home))
    return resources


def _materialize(
    selection: dg.AssetSelection,
    paths: LitmusPaths,
    instance: dg.DagsterInstance,
    partition_key: str | None = None,
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        _all_assets(),
        selection=selection,
        instance=instance,
        resources=_resources(paths),
        partition_key=partition_key,
        # The CLI prints its own progress; Dagster's step log stays in the run history.
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )


def publish_selection() -> dg.AssetSelection:
    """Metrics and the leaderboard: the metrics group and everything after the labels.

    Some metric models (the reference controls) read only the suite, so "downstream of the
    labels" alone would miss them.
    """
    return dg.AssetSelection.groups(METRICS_GROUP) | PER_CONFIGURATION.downstream(
        include_self=False
    )


def run_pipeline(
    paths: LitmusPaths,
    *,
    rescore_all: bool = False,
    progress: Progress = print,
    instance: dg.DagsterInstance | None = None,
) -> PipelineResult:
    """Ingest landed files, label every new or stale configuration, then publish."""
    instance = instance or local_instance(paths)
    result = PipelineResult()
    progress("[1/3] ingesting landed run files")
    _materialize(INGESTION, paths, instance)
    partitions = instance.get_dynamic_partitions(configurations.name)
    with connect(paths.duckdb_path) as con:
        statuses = {s.partition_key: s for s in partition_statuses(con)}
    to_score = [
        key for key in partitions if rescore_all or key not in statuses or statuses[key].stale
    ]
    result.ingested_partitions = list(partitions)
    for index, key in enumerate(to_score, start=1):
        progress(f"[2/3] labeling configuration {index}/{len(to_score)}: {key}")
        _materialize(PER_CONFIGURATION, paths, instance, partition_key=key)
        result.scored_partitions.append(key)
    if not to_score:
        progress("[2/3] every configuration is already labeled with the current labeler")
    publish = publish_selection()
    if publish.resolve(defs.resolve_asset_graph()):
        progress("[3/3] computing metrics and publishing the leaderboard")
        _materialize(publish, paths, instance)
        result.published = True
    return result


def exports_dir(paths: LitmusPaths) -> Path:
    return paths.exports


def stage_sample(paths: LitmusPaths, manifest: SampleManifest) -> None:
    """Put a generated sample where ingestion looks: the suite and every run file."""
    import shutil

    shutil.copyfile(manifest.suite_path, paths.suites / manifest.suite_path.name)
    for run_path in manifest.run_paths.values():
        shutil.copyfile(run_path, paths.landing / run_path.name)
