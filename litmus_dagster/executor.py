"""The one executor of a plan (``litmus.planning.plan``): each plan item becomes a run of one job.

Two ways to carry a plan out, with the same item → job mapping
(:func:`litmus_dagster.jobs.job_for`):

- :func:`execute` materializes it in-process against a persistent local Dagster instance
  (``litmus run``, ``litmus rescore``, ``litmus demo``): the same asset definitions the
  Dagster UI shows, with the run history kept in ``<home>/dagster``;
- :func:`litmus_dagster.jobs.run_requests` turns it into run requests for the daemon (the
  landing sensor and the re-score schedule); publishing there is the publish job's automation
  condition's, once no scoring run is left (``litmus_dagster.jobs.PUBLISH_WHEN_SCORED``).

Each configuration is scored in its own run. A failing gate check is blocking: it fails that
run's gate step (``DagsterAssetCheckFailedError``) and skips the configuration's
``publishable_configuration``. That is the expected "withheld" (its verdicts are in the
``publication_gates`` table every publisher reads): the executor records it with its reasons
and goes on, so the others still publish. Any other failed step is recorded too, and
reported by the caller once the others were published.
"""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from litmus.faults import crash_point
from litmus.neutralize import for_terminal
from litmus.planning.plan import Action, Plan, PlanItem
from litmus.settings import LitmusPaths
from litmus.warehouse import connect, out_of_memory_hint, warehouse_exists
from litmus_dagster import stop
from litmus_dagster.adapters.dagster_storage import instance_ref
from litmus_dagster.audit.assets import verdict_load_events
from litmus_dagster.jobs import (
    ingest_job,
    job_for,
    publish_job,
)
from litmus_dagster.partitions import configurations, register
from litmus_dagster.resources import LitmusWarehouse

Progress = Callable[[str], None]

INSTANCE_YAML = """\
# LITMUS local instance: SQLite run/event storage under this folder. Writers to the DuckDB
# warehouse are serialized by its file lock (litmus/warehouse.py), so no concurrency pool
# limit is set here: with SQLite storage a pool limit makes every step poll for a slot.
# A team's instance (PostgreSQL, parallel runs, the pool limited to one step) is
# deploy/team/dagster.yaml, copied over this file (docs/operations.md).
telemetry:
  enabled: false
"""

# Dagster's own step log stays in the run history; the CLI prints its own progress. Gate
# failures are expected outcomes, reported by the executor, not tracebacks on the console;
# a failed or interrupted step reaches the person as the CLI's one line (the traceback with
# --debug), never as Dagster's error log with its stack trace.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
SILENT = QUIET
CHECK_FAILED_ERROR = "DagsterAssetCheckFailedError"
PUBLICATION_GATES = dg.AssetKey("publication_gates")
# Dagster turns SIGINT/SIGTERM during a step into one of these and fails only that run; the
# executor must stop as a whole instead of going on to the next configuration.
INTERRUPT_ERRORS = frozenset({"DagsterExecutionInterruptedError", "KeyboardInterrupt"})
# A signal that arrives while DuckDB runs a query: DuckDB runs the Python handler, drops the
# exception it raised and raises this instead (DuckDB 2.0; tests/test_first_contact.py fails
# if it changes), so a Ctrl-C during a labeling query reaches Dagster as a plain step error.
DUCKDB_INTERRUPTED = ("RuntimeError", "Query interrupted")


def _is_interrupt(cls_name: str, message: str) -> bool:
    return cls_name in INTERRUPT_ERRORS or (
        cls_name == DUCKDB_INTERRUPTED[0] and DUCKDB_INTERRUPTED[1] in message
    )


@dataclass
class ExecutionResult:
    plan: Plan = field(default_factory=Plan)
    ingested_partitions: list[str] = field(default_factory=list)
    scored_partitions: list[str] = field(default_factory=list)  # re-labeled (and re-gated)
    refreshed_partitions: list[str] = field(default_factory=list)  # re-audited and re-gated
    # partition → the publication gate checks that failed in its run (withheld)
    withheld: dict[str, list[str]] = field(default_factory=dict)
    # partition → the error of an asset step that failed (not scored this time)
    failed: dict[str, str] = field(default_factory=dict)
    # partition → its gate check evaluations in this run, by check name
    gate_checks: dict[str, dict[str, dg.AssetCheckEvaluation]] = field(default_factory=dict)
    published: bool = False
    # why nothing could be scored (no configuration stored: nothing published), or None
    nothing_scored: str | None = None

    @property
    def rescored(self) -> list[str]:
        return self.scored_partitions


@dataclass(frozen=True)
class Narration:
    """What the executor says as it goes (the CLI commands word their progress differently)."""

    label: str = "[2/3] labeling configuration {index}/{total}: {key}"
    reaudit: str = (
        "[2/3] re-auditing configuration {index}/{total} (verdicts or gates changed): {key}"
    )
    nothing: str | None = "[2/3] every configuration is already labeled with the current labeler"
    publish: str = "[3/3] computing metrics and publishing the leaderboard"


# ----------------------------------------------------------------------------- in-process


def local_instance(paths: LitmusPaths) -> dg.DagsterInstance:
    """The persistent instance under ``<home>/dagster``. Its storage is Dagster's SQLite one
    with the run and event databases kept open (``litmus_dagster.adapters.dagster_storage``), unless
    ``dagster.yaml`` names another storage (Postgres, say), which is then used as it is."""
    home = paths.home / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    instance = dg.DagsterInstance.from_ref(instance_ref(str(home)))
    _open_instances.add(instance)
    return instance


# Instances still open when the process exits are closed by an exit handler, not left to the
# interpreter's teardown (which ``litmus`` skips, see ``cli.console_main``): closing the run
# history's connections folds its SQLite logs back into the databases.
_open_instances: weakref.WeakSet[dg.DagsterInstance] = weakref.WeakSet()


@atexit.register
def _close_open_instances() -> None:
    for instance in list(_open_instances):
        instance.dispose()
    _open_instances.clear()


def _definitions() -> dg.Definitions:
    # Imported on use: loading the code location parses the dbt project, which commands that
    # only need the instance (``litmus audit load``) should not pay for.
    from litmus_dagster.definitions import defs

    return defs


def run_resources(paths: LitmusPaths) -> dict[str, Any]:
    resources = dict(_definitions().resources or {})
    resources["warehouse"] = LitmusWarehouse(
        home=str(paths.home), database=str(paths.duckdb_file) if paths.duckdb_file else ""
    )
    return resources


def materialize_job(
    job: dg.UnresolvedAssetJobDefinition,
    paths: LitmusPaths,
    instance: dg.DagsterInstance,
    partition_key: str | None = None,
    *,
    raise_on_error: bool = True,
    tags: dict[str, str] | None = None,
) -> dg.ExecuteInProcessResult:
    """Run ``job`` in-process (the UI lists it under its name) against ``paths``, with the
    asset checks of the selected assets. Stops the whole executor on an interrupt."""
    stop.check()
    definitions = _definitions()
    job_definitions = dg.Definitions(
        assets=definitions.assets,
        asset_checks=definitions.asset_checks,
        jobs=[job],
        resources=run_resources(paths),
    )
    try:
        run = job_definitions.resolve_job_def(job.name).execute_in_process(
            instance=instance,
            partition_key=partition_key,
            run_config=QUIET if raise_on_error else SILENT,
            raise_on_error=raise_on_error,
            tags=tags,
        )
    except BaseException as error:
        if _is_interrupt(type(error).__name__, str(error)) or _interrupt_in_chain(error):
            raise KeyboardInterrupt from None
        raise
    if not run.success and was_interrupted(run):
        raise KeyboardInterrupt
    stop.check()  # a signal swallowed during the run still stops the executor here
    return run


def _interrupt_in_chain(error: BaseException) -> bool:
    visited: set[int] = set()  # a chain can loop back on itself
    seen = error.__cause__ or error.__context__
    while seen is not None and id(seen) not in visited:
        if _is_interrupt(type(seen).__name__, str(seen)):
            return True
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return False


def was_interrupted(run: dg.ExecuteInProcessResult) -> bool:
    """Whether a step of ``run`` failed because the process was told to stop."""
    for event in run.all_events:
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            if _is_interrupt(error.cls_name, error.message):
                return True
            error = error.cause or error.context
    return False


def first_step_error(run: dg.ExecuteInProcessResult) -> str | None:
    """The run's first step error in one line: the step and its cause (the innermost
    exception, whose first line says what went wrong; Dagster's wrapper only names the op),
    leaving out the errors of blocking gate checks that failed (an expected outcome: the
    configuration is withheld)."""
    for event in run.get_step_failure_events():
        data = event.event_specific_data
        if data is None or data.error is None or data.error.cls_name == CHECK_FAILED_ERROR:
            continue
        cause = data.error
        while cause.cause is not None:
            cause = cause.cause
        lines = cause.message.strip().splitlines() or [cause.cls_name or "an error"]
        hint = out_of_memory_hint(cause.cls_name or "")
        return for_terminal(f"step {event.step_key}: {lines[0]}{hint}")
    return None


def withheld_by(run: dg.ExecuteInProcessResult) -> list[str]:
    """The publication gate checks that failed in a configuration's run, sorted."""
    return sorted(
        {
            evaluation.check_name
            for evaluation in run.get_asset_check_evaluations()
            if not evaluation.passed and evaluation.asset_key == PUBLICATION_GATES
        }
    )


def withheld_line(evaluations: dict[str, dg.AssetCheckEvaluation], failed_checks: list[str]) -> str:
    """One line: each failed gate with its reason (the check's description), as the board
    words it (``gate: message``)."""
    return for_terminal(
        "; ".join(
            f"{name}: {evaluations[name].description or name + ' failed'}" for name in failed_checks
        )
    )


def ingest(paths: LitmusPaths, instance: dg.DagsterInstance, result: ExecutionResult) -> None:
    """Store every landed file and suite (idempotent); registers their partitions."""
    materialize_job(ingest_job, paths, instance)
    result.ingested_partitions = list(instance.get_dynamic_partitions(configurations.name))


def _run_configuration(
    item: PlanItem,
    paths: LitmusPaths,
    instance: dg.DagsterInstance,
    result: ExecutionResult,
    progress: Progress,
    tags: dict[str, str],
) -> str | None:
    """One configuration's run; a withheld or failed configuration is recorded, never raised.
    Returns the partition key when it was scored."""
    key = item.partition_key
    if key is None:
        raise ValueError(f"a {item.action} item names no configuration")
    run = materialize_job(job_for(item), paths, instance, key, raise_on_error=False, tags=tags)
    result.gate_checks[key] = {
        evaluation.check_name: evaluation for evaluation in run.get_asset_check_evaluations()
    }
    failed_checks = withheld_by(run)
    if failed_checks:  # an expected outcome (a blocked run): the configuration is withheld
        result.withheld[key] = failed_checks
        progress(f"      withheld: {withheld_line(result.gate_checks[key], failed_checks)}")
    error = first_step_error(run)
    if error or not (run.success or failed_checks):
        result.failed[key] = error or "run failed"
        progress(f"      failed: {result.failed[key]}")
        return None
    return key


def execute(
    plan: Plan,
    paths: LitmusPaths,
    instance: dg.DagsterInstance,
    *,
    result: ExecutionResult | None = None,
    publish: bool | None = None,
    progress: Progress = print,
    narration: Narration | None = None,
    tags: dict[str, str] | None = None,
) -> ExecutionResult:
    """Carry ``plan`` out in-process: label, re-audit, then publish (when the plan says so,
    or always with ``publish=True``). Failures are recorded in the result, never raised."""
    narration = narration or Narration()
    result = result or ExecutionResult()
    result.plan = plan
    tags = dict(tags or {})
    report_verdict_loads(paths, instance)
    register(instance, plan.partitions(Action.LABEL, Action.REAUDIT))
    if plan.of(Action.INGEST):
        materialize_job(ingest_job, paths, instance, tags=tags)
    labels = plan.of(Action.LABEL)
    for index, item in enumerate(labels, start=1):
        progress(narration.label.format(index=index, total=len(labels), **_names(item)))
        if scored := _run_configuration(item, paths, instance, result, progress, tags):
            result.scored_partitions.append(scored)
        crash_point("pipeline.configuration_scored")
    reaudits = plan.of(Action.REAUDIT)
    for index, item in enumerate(reaudits, start=1):
        progress(narration.reaudit.format(index=index, total=len(reaudits), **_names(item)))
        if refreshed := _run_configuration(item, paths, instance, result, progress, tags):
            result.refreshed_partitions.append(refreshed)
    if not labels and not reaudits and narration.nothing:
        progress(narration.nothing)
    crash_point("pipeline.scored")
    if publish is None:
        publish = bool(plan.of(Action.PUBLISH))
    if publish and publish_job.selection.resolve(_definitions().resolve_asset_graph()):
        progress(narration.publish)
        materialize_job(publish_job, paths, instance, tags=tags)
        result.published = True
        crash_point("pipeline.published")
    return result


def report_verdict_loads(paths: LitmusPaths, instance: dg.DagsterInstance) -> None:
    """Record on ``instance`` the verdict files ``litmus audit load`` stored since it last
    looked (that command writes only the warehouse, so it does not load Dagster)."""
    if not warehouse_exists(paths.duckdb_path):
        return
    with connect(paths.duckdb_path) as con:
        events = verdict_load_events(instance, con)
    for event in events:
        instance.report_runless_asset_event(event)


def _names(item: PlanItem) -> dict[str, str]:
    return {"key": item.partition_key or "", "config": item.config_key or item.partition_key or ""}
