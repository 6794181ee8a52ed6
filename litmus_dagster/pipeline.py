"""``litmus run`` and ``litmus demo``: ingest the landed files, then carry out the plan.

The plan (``litmus.planning.plan``: which configurations to label or re-audit, and why) is computed
from the warehouse once ingestion has stored the landed files; the executor
(``litmus_dagster.executor``) runs it in-process against a persistent local Dagster instance,
so ``dagster dev`` (with ``DAGSTER_HOME`` pointing at ``<home>/dagster``) shows every run
afterwards. ``litmus run`` publishes at the end even when nothing was re-labeled (the metric
code may have changed).
"""

from __future__ import annotations

import dagster as dg

from litmus.errors import LitmusError
from litmus.faults import crash_point
from litmus.neutralize import for_terminal
from litmus.planning.nothing_scored import nothing_scored
from litmus.planning.plan import plan_from_warehouse
from litmus.runs import not_ingested, stage_sample
from litmus.settings import LitmusPaths
from litmus.trust import publication
from litmus.warehouse import connect
from litmus_dagster.executor import (
    ExecutionResult,
    Progress,
    execute,
    first_step_error,
    ingest,
    local_instance,
    was_interrupted,
)
from litmus_dagster.jobs import AUDIT_REFRESH

# what earlier code imported from here
PipelineResult = ExecutionResult
__all__ = [
    "AUDIT_REFRESH",
    "PipelineResult",
    "first_step_error",
    "local_instance",
    "run_pipeline",
    "stage_sample",
    "was_interrupted",
]


def run_pipeline(
    paths: LitmusPaths,
    *,
    rescore_all: bool = False,
    progress: Progress = print,
    instance: dg.DagsterInstance | None = None,
) -> ExecutionResult:
    """Ingest landed files, then label every new or stale configuration, re-audit the ones
    whose verdicts changed, and publish. Raises (after publishing the others) when a
    configuration could not be scored; a gate failure only withholds its configuration."""
    from litmus.ingestion.suites import stored_oracle_less_warnings
    from litmus.planning.run_state import forget_run_state, observe_inputs, record_run_state

    instance = instance or local_instance(paths)
    result = ExecutionResult()
    # finish (or discard) a publication a crash cut short
    publication.recover(paths.exports, lambda: connect(paths.duckdb_path))
    # what this run starts from; recorded at its end only if it finishes without failures
    observation = observe_inputs(paths)
    forget_run_state(paths)
    progress("[1/3] ingesting landed run files")
    ingest(paths, instance, result)
    for name, reason in not_ingested(paths):
        progress(f"      not ingested: {for_terminal(name)}: {reason}")
    crash_point("pipeline.ingested")
    with connect(paths.duckdb_path) as con:
        oracle_less = stored_oracle_less_warnings(con)
        plan = plan_from_warehouse(con, everything=rescore_all)
        # no configuration stored (only suites, or every record quarantined): no board
        result.nothing_scored = nothing_scored(paths, con)
    for warning in oracle_less:  # accepted, never silently (SPEC §5)
        progress(f"      warning: {warning}")
    if result.nothing_scored is not None:
        return result
    execute(plan, paths, instance, result=result, publish=True, progress=progress)
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
