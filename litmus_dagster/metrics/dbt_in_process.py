"""``dbt build`` inside this process, yielding the Dagster events dagster-dbt's CLI invocation
yields (an ``Output`` per built model, an ``AssetCheckResult`` per dbt test).

dagster-dbt only knows a ``dbt`` subprocess, which pays for a second interpreter importing
dbt-core and the DuckDB adapter (about 3 s CPU of every build, docs/performance.md) although
this process has imported most of dbt-core already through dagster-dbt. Here dbt's own
programmatic entry point (``dbtRunner``) runs the build and hands each structured log event
to a callback; each result event becomes the same dict the subprocess prints as a JSON line,
and dagster-dbt's ``DbtCoreCliEventMessage`` turns it into Dagster events, so keys, checks,
metadata and failure (a failing test fails the step) stay dagster-dbt's.

The build gets its project already parsed (:func:`parsed_project`): dbt keys its partial-parse
state on the whole profile, the DuckDB path included, so a build against a new home's file
parsed the whole project again. The parsed project depends on that path only through the
database name (the file's stem), so it is parsed against one fixed path per name, whose
state the code location's ``dbt parse`` already left, and kept for the process's next builds.

A build writes one JSON artifact, its ``run_results.json``: dbt's others (``manifest.json``,
the semantic manifest, ``graph.gpickle``) repeat the parsed project, whose manifest the code
location already has, and writing them was about a third of a warm build's CPU.

What an in-process dbt leaves behind is released after every invocation: dbt-duckdb keeps
its DuckDB database open in class state (closed here, so the warehouse file is free for the
next writer), dbt changes the working directory during a task (restored here).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtCliRuntimeError, DagsterDbtTranslator, DbtCliResource

from litmus.settings import litmus_paths
from litmus.warehouse_lake import lake_from_environment
from litmus_dagster.adapters.dbt import (
    DbtCoreCliEventMessage,
    get_updated_cli_invocation_params_for_context,
    release_dbt_connections,
)
from litmus_dagster.resources import DUCKDB_PATH_ENV

# The structured log events dagster-dbt turns into Dagster events (the others are progress).
RESULT_EVENT_NAMES = frozenset(
    {"LogModelResult", "LogTestResult", "LogSeedResult", "LogSnapshotResult"}
)
PARTIAL_PARSE_FILE = "partial_parse.msgpack"
RUN_RESULTS_FILE = "run_results.json"
# Files whose change changes the parsed project (and makes a parsed manifest stale).
DBT_SOURCE_GLOBS = (
    "dbt_project.yml",
    "profiles.yml",
    "models/**/*",
    "macros/**/*",
    "tests/**/*",
)
# dbt's progress lines go to this process's stdout (the step log), without colours; no usage
# statistics are sent (what dagster-dbt sets for its subprocess).
TEXT_LOG_ARGS = (
    "--log-format",
    "default",
    "--no-use-colors",
    "--no-send-anonymous-usage-stats",
)


@contextmanager
def dbt_profile_environment(duckdb_path: Path | str | None = None) -> Iterator[None]:
    """Set LITMUS_DUCKDB_PATH (what ``profiles.yml`` reads) for dbt.

    With ``duckdb_path`` the variable is set to it; without, an existing value is kept and a
    missing one is filled from the LITMUS settings. The previous value is restored afterwards,
    so the setting never leaks into ``LitmusPaths.duckdb_path`` of the calling process.
    """
    previous = os.environ.get(DUCKDB_PATH_ENV)
    chosen = duckdb_path or previous or litmus_paths().duckdb_path
    os.environ[DUCKDB_PATH_ENV] = os.fspath(chosen)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DUCKDB_PATH_ENV, None)
        else:
            os.environ[DUCKDB_PATH_ENV] = previous


def newest_source_change(project_dir: Path) -> int:
    """The latest modification time (ns) of a dbt project file whose change changes the
    parsed project."""
    return max(
        (
            path.stat().st_mtime_ns
            for pattern in DBT_SOURCE_GLOBS
            for path in project_dir.glob(pattern)
            if path.is_file()
        ),
        default=0,
    )


def parse_profile_path(project_dir: Path, duckdb_path: Path | str | None = None) -> Path:
    """The DuckDB path the profile names while dbt only parses (nothing opens it): one fixed
    path per database name, so that one partial-parse state serves every home. Without
    ``duckdb_path``, the name is the one LITMUS_DUCKDB_PATH or the LITMUS settings give."""
    name = Path(duckdb_path or os.environ.get(DUCKDB_PATH_ENV) or litmus_paths().duckdb_path)
    return project_dir / "target" / "parse-only" / f"{name.stem}.duckdb"


@dataclass
class _DbtLog:
    """What an invocation's callback keeps of dbt's event stream: the result events (as the
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
    duckdb_path: Path,
    target_path: Path,
) -> Iterator[Any]:
    """Run ``dbt build`` over the assets ``context`` selected against the DuckDB file
    ``duckdb_path``, in this process, with its artifacts and ``dbt.log`` under
    ``target_path``; yield dagster-dbt's events of its results, then raise dagster-dbt's
    ``DagsterDbtCliRuntimeError`` if the build failed."""
    params = get_updated_cli_invocation_params_for_context(
        context=context, manifest={}, dagster_dbt_translator=DagsterDbtTranslator()
    )
    project_dir = Path(params.dbt_project.project_dir if params.dbt_project else dbt.project_dir)
    profile = [
        *(["--profile", dbt.profile] if dbt.profile else []),
        *(["--target", dbt.target] if dbt.target else []),
    ]
    common = [
        *profile,
        "--project-dir",
        os.fspath(project_dir),
        "--profiles-dir",
        os.fspath(dbt.profiles_dir or project_dir),
        "--target-path",
        os.fspath(target_path),
        "--log-path",
        os.fspath(target_path),
        *TEXT_LOG_ARGS,
    ]
    project = parsed_project(dbt, project_dir, profile, common, duckdb_path, target_path)
    args = [
        *dbt.global_config_flags,
        "build",
        *params.selection_args,
        *(["--indirect-selection", params.indirect_selection] if params.indirect_selection else []),
        *common,
        "--no-write-json",
    ]
    log = _DbtLog()
    with dbt_profile_environment(duckdb_path):
        result = run_dbt(args, log, project)
    write_run_results(result, target_path)
    for raw_event in log.results:
        event = DbtCoreCliEventMessage(raw_event=raw_event, event_history_metadata={})
        yield from event.to_default_asset_events(
            manifest=params.manifest,
            dagster_dbt_translator=params.dagster_dbt_translator,
            context=context,
            target_path=target_path,
            project=params.dbt_project,
        )
    if not result.success or log.errors:
        raise dbt_error(args, target_path, log, result)


# The parsed project of the process's last builds, by what it was parsed from.
_parsed_projects: dict[tuple[Any, ...], Any] = {}


def parsed_project(
    dbt: DbtCliResource,
    project_dir: Path,
    profile_args: Sequence[str],
    common_args: Sequence[str],
    duckdb_path: Path,
    target_path: Path,
) -> Any:
    """dbt's parsed project (its ``Manifest``) for a build against ``duckdb_path``: parsed in
    this process against :func:`parse_profile_path`, starting from the code location's
    partial-parse state, and kept while no project file changed."""
    parse_path = parse_profile_path(project_dir, duckdb_path)
    key = (
        os.fspath(project_dir),
        os.fspath(parse_path),
        tuple(dbt.global_config_flags),
        tuple(profile_args),
        lake_from_environment(),  # the profile's target follows it
        newest_source_change(project_dir),
    )
    if key in _parsed_projects:
        return _parsed_projects[key]
    seed = project_dir / "target" / PARTIAL_PARSE_FILE
    state = target_path / PARTIAL_PARSE_FILE
    if seed.exists() and (not state.exists() or state.stat().st_mtime < seed.stat().st_mtime):
        target_path.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed, state)
    args = [
        *dbt.global_config_flags,
        "parse",
        "--no-write-json",
        "--quiet",
        *common_args,
    ]
    log = _DbtLog()
    with dbt_profile_environment(parse_path):
        result = run_dbt(args, log)
    if not result.success:
        raise dbt_error(args, target_path, log, result)
    _parsed_projects.clear()  # one project per process at a time; never a stale one
    _parsed_projects[key] = result.result
    return result.result


def run_dbt(args: Sequence[str], callback: _DbtLog, manifest: Any = None) -> Any:
    """One ``dbtRunner`` invocation, leaving no DuckDB database open and the working directory
    as it was. An interrupt (Dagster's, or Ctrl-C) that dbt caught is raised again here."""
    from dbt.cli.main import dbtRunner

    cwd = os.getcwd()
    try:
        result = dbtRunner(manifest=manifest, callbacks=[callback]).invoke(list(args))
    finally:
        os.chdir(cwd)
        release_dbt_connections()
        sys.stdout.flush()
    if result.exception is not None and not isinstance(result.exception, Exception):
        raise result.exception  # KeyboardInterrupt, DagsterExecutionInterruptedError
    return result


def write_run_results(result: Any, target_path: Path) -> None:
    """The build's ``run_results.json`` in ``target_path``, as dbt writes it (the one artifact a
    build keeps; an invocation that raised before it had results writes none)."""
    if hasattr(result.result, "write"):
        target_path.mkdir(parents=True, exist_ok=True)
        result.result.write(os.fspath(target_path / RUN_RESULTS_FILE))


def dbt_error(
    args: Sequence[str], target_path: Path, log: _DbtLog, result: Any
) -> DagsterDbtCliRuntimeError:
    details = "".join(f"\n\n{message}" for message in log.errors)
    if result.exception is not None:
        details += f"\n\n{type(result.exception).__name__}: {result.exception}"
    return DagsterDbtCliRuntimeError(
        description=(
            f"dbt `{' '.join(args)}` failed (in process); the dbt debug log is "
            f"{target_path / 'dbt.log'}.\n\nErrors parsed from dbt logs:{details}"
        )
    )
