"""``litmus rescore``: re-label exactly the stale configurations in-process, then publish.

Labeling reads ``raw_trajectories`` in the warehouse, so re-scoring never touches the landed
files or the raw store (a test checks their hashes and modification times). A configuration
whose blocking publication gate fails is withheld, as in ``litmus run``; any other failure is
reported after the others were re-scored and published.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from litmus.errors import LitmusError
from litmus.settings import LitmusPaths
from litmus.status import PartitionStatus, partition_statuses
from litmus.warehouse import connect
from litmus_dagster.partitions import configurations
from litmus_dagster.pipeline import (
    first_step_error,
    local_instance,
    materialize_named,
)
from litmus_dagster.releases.jobs import (
    PER_CONFIGURATION,
    PUBLISH,
    TRIGGER_TAG,
    publish_job,
    rescore_job,
)

PUBLICATION_GATES = dg.AssetKey("publication_gates")

Progress = Callable[[str], None]


@dataclass
class RescoreResult:
    stale: list[PartitionStatus] = field(default_factory=list)
    rescored: list[str] = field(default_factory=list)
    withheld: dict[str, list[str]] = field(default_factory=dict)  # partition → failed gates
    failed: dict[str, str] = field(default_factory=dict)  # partition → error
    published: bool = False


def rescore(
    paths: LitmusPaths,
    *,
    everything: bool = False,
    dry_run: bool = False,
    instance: dg.DagsterInstance | None = None,
    progress: Progress = print,
) -> RescoreResult:
    """Re-score the stale configurations (every one with ``everything``), then publish."""
    with connect(paths.duckdb_path) as con:
        statuses = partition_statuses(con)
    result = RescoreResult(stale=[s for s in statuses if everything or s.stale])
    for status in result.stale:
        why = "; ".join(status.stale_reasons) or "re-scoring everything on request"
        progress(f"{status.config_key}: {why}")
    if not result.stale:
        progress("every configuration is labeled with the current labeler, classifier and suite")
    if dry_run or not result.stale:
        return result

    instance = instance or local_instance(paths)
    known = set(instance.get_dynamic_partitions(configurations.name))
    missing = sorted({s.partition_key for s in result.stale} - known)
    if missing:  # the warehouse outlived the Dagster instance
        instance.add_dynamic_partitions(configurations.name, missing)
    tags = {TRIGGER_TAG: "litmus rescore"}
    for index, status in enumerate(result.stale, start=1):
        progress(f"re-scoring {index}/{len(result.stale)}: {status.config_key}")
        run = materialize_named(
            PER_CONFIGURATION,
            paths,
            instance,
            rescore_job.name,
            status.partition_key,
            raise_on_error=False,
            tags=tags,
        )
        _record(run, status.partition_key, result, progress)
    progress("publishing metrics, leaderboard and release drift")
    materialize_named(PUBLISH, paths, instance, publish_job.name, tags=tags)
    result.published = True
    if result.failed:
        raise LitmusError(
            f"{len(result.failed)} configuration(s) could not be re-scored (the others were "
            "published): "
            + "; ".join(f"{key}: {message}" for key, message in sorted(result.failed.items()))
        )
    return result


def _record(
    run: dg.ExecuteInProcessResult, partition_key: str, result: RescoreResult, progress: Progress
) -> None:
    failed_checks = sorted(
        {
            e.check_name
            for e in run.get_asset_check_evaluations()
            if not e.passed and e.asset_key == PUBLICATION_GATES
        }
    )
    error = first_step_error(run)
    if error or not (run.success or failed_checks):
        message = error or "run failed"
        result.failed[partition_key] = message
        progress(f"      failed: {message}")
        return
    result.rescored.append(partition_key)
    if failed_checks:
        result.withheld[partition_key] = failed_checks
        progress(f"      withheld by gate(s): {', '.join(failed_checks)}")
