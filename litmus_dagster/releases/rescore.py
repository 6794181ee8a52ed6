"""``litmus rescore``: carry out the plan for exactly the stale configurations, then publish.

The plan (``litmus.planning.plan``) is the one ``litmus run`` and the re-score schedule compute;
here it is computed without ingesting first, so labeling reads ``raw_trajectories`` in the warehouse
and re-scoring never touches the landed files or the raw store (a test checks their hashes
and modification times). A configuration whose publication gate fails is withheld, as in
``litmus run``; any other failure is reported after the others were re-scored and published.
"""

from __future__ import annotations

import dagster as dg

from litmus.errors import LitmusError
from litmus.planning.plan import describe_rescore, plan_from_warehouse
from litmus.settings import LitmusPaths
from litmus.warehouse import connect
from litmus_dagster.executor import (
    ExecutionResult,
    Narration,
    Progress,
    execute,
    local_instance,
)
from litmus_dagster.jobs import TRIGGER_TAG

NARRATION = Narration(
    label="re-scoring {index}/{total}: {config}",
    reaudit="re-auditing {index}/{total}: {config}",
    nothing=None,
    publish="publishing metrics, leaderboard and release drift",
)

# what earlier code imported from here
RescoreResult = ExecutionResult


def rescore(
    paths: LitmusPaths,
    *,
    everything: bool = False,
    dry_run: bool = False,
    instance: dg.DagsterInstance | None = None,
    progress: Progress = print,
) -> ExecutionResult:
    """Carry out the plan (every configuration re-labeled with ``everything``), then publish;
    with ``dry_run`` only say what the plan is and why."""
    with connect(paths.duckdb_path) as con:
        plan = plan_from_warehouse(con, everything=everything)
    for line in describe_rescore(plan):
        progress(line)
    result = ExecutionResult(plan=plan)
    if dry_run or plan.empty:
        return result
    execute(
        plan,
        paths,
        instance or local_instance(paths),
        result=result,
        progress=progress,
        narration=NARRATION,
        tags={TRIGGER_TAG: "litmus rescore"},
    )
    if result.failed:
        raise LitmusError(
            f"{len(result.failed)} configuration(s) could not be re-scored (the others were "
            "published): "
            + "; ".join(f"{key}: {message}" for key, message in sorted(result.failed.items()))
        )
    return result
