"""``dbt build`` inside this process, yielding the Dagster events dagster-dbt's CLI invocation
yields (an ``Output`` per built model, an ``AssetCheckResult`` per dbt test).

dagster-dbt only knows a ``dbt`` subprocess, which pays for a second interpreter importing
dbt-core and the DuckDB adapter (about 3 s CPU of every build, docs/performance.md) although
this process has imported most of dbt-core already through dagster-dbt. Here dbt's own
programmatic entry point (``dbtRunner``) runs the build and hands each structured log event
to a callback; each result event becomes the same dict the subprocess prints as a JSON line,
and dagster-dbt's ``DbtCoreCliEventMessage`` turns it into Dagster events, so keys, checks,
metadata and failure (a failing test fails the step) stay dagster-dbt's.

What an in-process dbt leaves behind is released after every build: dbt-duckdb keeps its
DuckDB database open in class state (closed here, so the warehouse file is free for the next
writer), dbt changes the working directory during a task (restored here).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtCliRuntimeError, DagsterDbtTranslator, DbtCliResource
from dagster_dbt.asset_utils import get_updated_cli_invocation_params_for_context
from dagster_dbt.core.dbt_cli_event import DbtCoreCliEventMessage

# The structured log events dagster-dbt turns into Dagster events (the others are progress).
RESULT_EVENT_NAMES = frozenset(
    {"LogModelResult", "LogTestResult", "LogSeedResult", "LogSnapshotResult"}
)


@dataclass
class _BuildLog:
    """What the build's callback keeps of dbt's event stream: the result events (as the
    JSON-line dicts a dbt subprocess prints) and the text of every error."""

    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __call__(self, event: Any) -> None:
        from dbt_common.events.functions import msg_to_dict

        info = event.info
        if info.level == "error":
            self.errors.append(info.msg)
        if info.name in RESULT_EVENT_NAMES:
            self.results.append(msg_to_dict(event))


def dbt_build_events(
    dbt: DbtCliResource,
    context: dg.AssetExecutionContext,
    target_path: Path,
    extra_args: Sequence[str] = (),
) -> Iterator[Any]:
    """Run ``dbt build`` over the assets ``context`` selected, in this process, writing its
    artifacts and ``dbt.log`` under ``target_path``; yield dagster-dbt's events of its results,
    then raise dagster-dbt's ``DagsterDbtCliRuntimeError`` if the build failed."""
    params = get_updated_cli_invocation_params_for_context(
        context=context, manifest={}, dagster_dbt_translator=DagsterDbtTranslator()
    )
    project_dir = Path(params.dbt_project.project_dir if params.dbt_project else dbt.project_dir)
    args = [
        *dbt.global_config_flags,
        "build",
        *extra_args,
        *params.selection_args,
        *(["--indirect-selection", params.indirect_selection] if params.indirect_selection else []),
        *(["--profile", dbt.profile] if dbt.profile else []),
        *(["--target", dbt.target] if dbt.target else []),
        "--project-dir",
        os.fspath(project_dir),
        "--profiles-dir",
        os.fspath(dbt.profiles_dir or project_dir),
        "--target-path",
        os.fspath(target_path),
        "--log-path",
        os.fspath(target_path),
        # dbt's progress lines go to this process's stdout (the step log), without colours
        "--log-format",
        "default",
        "--no-use-colors",
    ]
    log = _BuildLog()
    result = run_dbt(args, log)
    for raw_event in log.results:
        event = DbtCoreCliEventMessage(raw_event=raw_event, event_history_metadata={})
        yield from event.to_default_asset_events(
            manifest=params.manifest,
            dagster_dbt_translator=params.dagster_dbt_translator,
            context=context,
            target_path=target_path,
            project=params.dbt_project,
        )
    if result.success and not log.errors:
        return
    details = "".join(f"\n\n{message}" for message in log.errors)
    if result.exception is not None:
        details += f"\n\n{type(result.exception).__name__}: {result.exception}"
    raise DagsterDbtCliRuntimeError(
        description=(
            f"dbt `{' '.join(args)}` failed (in process); the dbt debug log is "
            f"{target_path / 'dbt.log'}.\n\nErrors parsed from dbt logs:{details}"
        )
    )


def run_dbt(args: Sequence[str], callback: _BuildLog) -> Any:
    """One ``dbtRunner`` invocation, leaving no DuckDB database open and the working directory
    as it was. An interrupt (Dagster's, or Ctrl-C) that dbt caught is raised again here."""
    from dbt.cli.main import dbtRunner

    cwd = os.getcwd()
    try:
        result = dbtRunner(callbacks=[callback]).invoke(list(args))
    finally:
        os.chdir(cwd)
        release_dbt_connections()
        sys.stdout.flush()
    if result.exception is not None and not isinstance(result.exception, Exception):
        raise result.exception  # KeyboardInterrupt, DagsterExecutionInterruptedError
    return result


def release_dbt_connections() -> None:
    """Close what dbt and dbt-duckdb keep open between invocations in one process: the
    adapters' connections, and the DuckDB database dbt-duckdb holds in class state."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.adapters.factory import reset_adapters

    reset_adapters()
    with DuckDBConnectionManager._LOCK:
        environment = DuckDBConnectionManager._ENV
        if environment is not None:
            environment.close()
        DuckDBConnectionManager.close_all_connections()
