"""Run the LITMUS assets in-process against a persistent local Dagster instance.

This is what ``litmus run`` and ``litmus demo`` call: the same asset definitions the Dagster
UI shows, materialized without a server, with the run history kept in ``<home>/dagster`` so
``dagster dev`` (with ``DAGSTER_HOME`` pointing there) shows every run afterwards.

Each configuration is scored in its own run (raw → labeled → audited → publication gates).
A failing gate check withholds that configuration (its verdicts are in the
``publication_gates`` table every publisher reads); the pipeline records it and goes on,
so the others still publish. A configuration whose audit verdicts changed since its audited
rows were built (``litmus audit load``), or whose gates were never recorded, is re-audited and
re-gated before publishing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from litmus import publication
from litmus.errors import LitmusError
from litmus.faults import crash_point
from litmus.neutralize import for_terminal
from litmus.runs import not_ingested
from litmus.sample import SampleManifest
from litmus.settings import LitmusPaths
from litmus.warehouse import connect
from litmus_dagster import stop
from litmus_dagster.partitions import configurations
from litmus_dagster.resources import LitmusWarehouse

Progress = Callable[[str], None]

INSTANCE_YAML = """\
# LITMUS local instance: SQLite run/event storage under this folder. Writers to the DuckDB
# warehouse are serialized by its file lock (litmus/warehouse.py), so no concurrency pool
# limit is set here: with SQLite storage a pool limit makes every step poll for a slot.
# A team on Postgres storage can add `concurrency: pools: default_limit: 1` (docs/operations.md).
telemetry:
  enabled: false
"""

# Labels unchanged, verdicts (or the gates) changed: rebuild the audited rows and re-gate.
AUDIT_REFRESH = dg.AssetSelection.assets("audited_trajectories", "publication_gates")

# Dagster's own step log stays in the run history; the CLI prints its own progress. Gate
# failures are expected outcomes, reported below, not tracebacks on the console.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
SILENT = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
CHECK_FAILED_ERROR = "DagsterAssetCheckFailedError"


@dataclass
class PipelineResult:
    ingested_partitions: list[str] = field(default_factory=list)
    scored_partitions: list[str] = field(default_factory=list)
    # re-audited and re-gated without re-labeling (verdicts loaded, gates missing)
    refreshed_partitions: list[str] = field(default_factory=list)
    # partition → the gate checks that failed in its run (withheld)
    withheld: dict[str, list[str]] = field(default_factory=dict)
    # partition → the error of an asset step that failed (not scored this time)
    failed: dict[str, str] = field(default_factory=dict)
    # partition → its gate check evaluations in this run, by check name
    gate_checks: dict[str, dict[str, dg.AssetCheckEvaluation]] = field(default_factory=dict)
    published: bool = False


def local_instance(paths: LitmusPaths) -> dg.DagsterInstance:
    home = paths.home / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    return dg.DagsterInstance.from_config(str(home))


def _definitions() -> dg.Definitions:
    # Imported on use: loading the code location parses the dbt project, which commands that
    # only need the instance (``litmus audit load``) should not pay for.
    from litmus_dagster.definitions import defs

    return defs


def assets_and_checks() -> list[Any]:
    """Every asset and asset check: a check left out of this list never runs, blocking or not."""
    definitions = _definitions()
    return [*(definitions.assets or []), *(definitions.asset_checks or [])]


def run_resources(paths: LitmusPaths) -> dict[str, Any]:
    resources = dict(_definitions().resources or {})
    resources["warehouse"] = LitmusWarehouse(home=str(paths.home))
    return resources


# Dagster turns SIGINT/SIGTERM during a step into one of these and fails only that run; the
# pipeline must stop as a whole instead of going on to the next configuration.
INTERRUPT_ERRORS = frozenset({"DagsterExecutionInterruptedError", "KeyboardInterrupt"})


# Run names shown in the Dagster UI, one per kind of run (never __ephemeral_asset_job__).
INGEST_JOB = "ingest_landed_files"
SCORE_JOB = "score_configuration"
REFRESH_AUDIT_JOB = "refresh_audit"
PUBLISH_JOB = "publish_leaderboard"


def materialize_named(
    selection: dg.AssetSelection,
    paths: LitmusPaths,
    instance: dg.DagsterInstance,
    job_name: str,
    partition_key: str | None = None,
    *,
    raise_on_error: bool = True,
    tags: dict[str, str] | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize ``selection`` in-process as a run of the job ``job_name`` (what the UI
    lists), with the asset checks of the selected assets."""
    definitions = _definitions()
    job_definitions = dg.Definitions(
        assets=definitions.assets,
        asset_checks=definitions.asset_checks,
        jobs=[dg.define_asset_job(job_name, selection=selection)],
        resources=run_resources(paths),
    )
    return job_definitions.resolve_job_def(job_name).execute_in_process(
        instance=instance,
        partition_key=partition_key,
        run_config=QUIET if raise_on_error else SILENT,
        raise_on_error=raise_on_error,
        tags=tags,
    )


def _materialize(
    selection: dg.AssetSelection,
    paths: LitmusPaths,
    instance: dg.DagsterInstance,
    partition_key: str | None = None,
    *,
    raise_on_error: bool = True,
    job_name: str,
) -> dg.ExecuteInProcessResult:
    stop.check()
    try:
        run = materialize_named(
            selection,
            paths,
            instance,
            job_name,
            partition_key,
            raise_on_error=raise_on_error,
        )
    except BaseException as error:
        if type(error).__name__ in INTERRUPT_ERRORS or _interrupt_in_chain(error):
            raise KeyboardInterrupt from None
        raise
    if not run.success and was_interrupted(run):
        raise KeyboardInterrupt
    stop.check()  # a signal swallowed during the run still stops the pipeline here
    return run


def _interrupt_in_chain(error: BaseException) -> bool:
    visited: set[int] = set()  # a chain can loop back on itself
    seen = error.__cause__ or error.__context__
    while seen is not None and id(seen) not in visited:
        if type(seen).__name__ in INTERRUPT_ERRORS:
            return True
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return False


def was_interrupted(run: dg.ExecuteInProcessResult) -> bool:
    """Whether a step of ``run`` failed because the process was told to stop."""
    for event in run.all_events:
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            if error.cls_name in INTERRUPT_ERRORS:
                return True
            error = error.cause or error.context
    return False


def _score_partition(
    selection: dg.AssetSelection,
    paths: LitmusPaths,
    instance: dg.DagsterInstance,
    partition_key: str,
    result: PipelineResult,
    progress: Progress,
    job_name: str,
) -> None:
    """One configuration's run; a failed gate or step is recorded, never raised."""
    run = _materialize(
        selection, paths, instance, partition_key, raise_on_error=False, job_name=job_name
    )
    result.gate_checks[partition_key] = {
        evaluation.check_name: evaluation for evaluation in run.get_asset_check_evaluations()
    }
    failed_checks = sorted(
        name
        for name, evaluation in result.gate_checks[partition_key].items()
        if not evaluation.passed
    )
    if failed_checks:  # an expected outcome: the configuration is withheld, the run succeeds
        result.withheld[partition_key] = failed_checks
        progress(f"      withheld by gate(s): {', '.join(failed_checks)}")
    if run.success:
        return
    error = first_step_error(run) or "run failed"
    result.failed[partition_key] = error
    progress(f"      failed: {error}")


def first_step_error(run: dg.ExecuteInProcessResult) -> str | None:
    """The first line of the run's first step error, leaving out the errors of blocking gate
    checks that failed (an expected outcome: the configuration is withheld)."""
    for event in run.get_step_failure_events():
        data = event.event_specific_data
        if (
            data is not None
            and data.error is not None
            and data.error.cls_name != CHECK_FAILED_ERROR
        ):
            return data.error.message.strip().splitlines()[0]
    return None


def run_pipeline(
    paths: LitmusPaths,
    *,
    rescore_all: bool = False,
    progress: Progress = print,
    instance: dg.DagsterInstance | None = None,
) -> PipelineResult:
    """Ingest landed files, label every new or stale configuration, re-audit the ones whose
    verdicts changed, then publish. Raises (after publishing the others) when a configuration
    could not be scored; a gate failure only withholds its configuration."""
    from litmus.audited import partitions_needing_refresh
    from litmus.gates import partitions_without_gates
    from litmus.run_state import forget_run_state, observe_inputs, record_run_state
    from litmus.status import partition_statuses
    from litmus.suite import stored_oracle_less_warnings
    from litmus_dagster.releases.jobs import INGESTION, PER_CONFIGURATION, PUBLISH

    instance = instance or local_instance(paths)
    result = PipelineResult()
    publication.recover(paths.exports)  # finish (or discard) a publication a crash cut short
    # what this run starts from; recorded at its end only if it finishes without failures
    observation = observe_inputs(paths)
    forget_run_state(paths)
    progress("[1/3] ingesting landed run files")
    _materialize(INGESTION, paths, instance, job_name=INGEST_JOB)
    for name, reason in not_ingested(paths):
        progress(f"      not ingested: {for_terminal(name)}: {reason}")
    crash_point("pipeline.ingested")
    partitions = instance.get_dynamic_partitions(configurations.name)
    with connect(paths.duckdb_path) as con:
        statuses = {s.partition_key: s for s in partition_statuses(con)}
        oracle_less = stored_oracle_less_warnings(con)
    for warning in oracle_less:  # accepted, never silently (SPEC §5)
        progress(f"      warning: {warning}")
    to_score = [
        key for key in partitions if rescore_all or key not in statuses or statuses[key].stale
    ]
    result.ingested_partitions = list(partitions)
    for index, key in enumerate(to_score, start=1):
        progress(f"[2/3] labeling configuration {index}/{len(to_score)}: {key}")
        _score_partition(PER_CONFIGURATION, paths, instance, key, result, progress, SCORE_JOB)
        crash_point("pipeline.configuration_scored")
        if key not in result.failed:
            result.scored_partitions.append(key)
    with connect(paths.duckdb_path) as con:
        stale_audit = set(partitions_needing_refresh(con)) | set(
            partitions_without_gates(con, statuses)
        )
    to_refresh = [
        key for key in partitions if key in stale_audit and key not in to_score and key in statuses
    ]
    for index, key in enumerate(to_refresh, start=1):
        progress(
            f"[2/3] re-auditing configuration {index}/{len(to_refresh)} (verdicts or gates "
            f"changed): {key}"
        )
        _score_partition(AUDIT_REFRESH, paths, instance, key, result, progress, REFRESH_AUDIT_JOB)
        if key not in result.failed:
            result.refreshed_partitions.append(key)
    if not to_score and not to_refresh:
        progress("[2/3] every configuration is already labeled with the current labeler")
    crash_point("pipeline.scored")
    if PUBLISH.resolve(_definitions().resolve_asset_graph()):
        progress("[3/3] computing metrics and publishing the leaderboard")
        _materialize(PUBLISH, paths, instance, job_name=PUBLISH_JOB)
        result.published = True
        crash_point("pipeline.published")
    if not result.failed:
        with connect(paths.duckdb_path) as con:
            record_run_state(paths, observation, con)
    if result.failed:
        raise LitmusError(
            f"{len(result.failed)} configuration(s) could not be scored (the others were "
            "published): "
            + "; ".join(f"{key}: {message}" for key, message in sorted(result.failed.items()))
        )
    return result


def exports_dir(paths: LitmusPaths) -> Path:
    return paths.exports


def stage_sample(paths: LitmusPaths, manifest: SampleManifest) -> None:
    """Put a generated sample where ingestion looks: the suite and every run file."""
    import shutil

    shutil.copyfile(manifest.suite_path, paths.suites / manifest.suite_path.name)
    for run_path in manifest.run_paths.values():
        shutil.copyfile(run_path, paths.landing / run_path.name)
