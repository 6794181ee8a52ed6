"""The team deployment on one machine, for tests and benchmarks: the team instance
(deploy/team/dagster.yaml) on a PostgreSQL database, a code server and ``dagster-daemon run``
as OS processes, each stopped by its PID; and what a run did, read from Dagster's events.

    with team_deployment(paths, postgres_url, logs) as deployment:
        deployment.start("launch", "dagster", "job", "launch", ...)   # more processes
        deployment.instance                                            # the same instance

At exit every run left unfinished has its process (named by its events) killed by PID, then
the processes started here get SIGTERM by PID (SIGKILL after 30 s).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import dagster as dg
import yaml
from local_processes import free_port, stop_process

from litmus.settings import LitmusPaths
from litmus.warehouse import connect_read_only

REPO = Path(__file__).resolve().parents[1]
TEAM_INSTANCE = REPO / "deploy" / "team" / "dagster.yaml"
BIN = Path(sys.executable).parent
URL_ENV = "LITMUS_DAGSTER_POSTGRES_URL"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
# Dagster's servers turn SIGTERM into SIGINT's handling; a process started in the background
# (CI) has SIGINT ignored, which its children inherit and which would make them ignore SIGTERM
# too. So each is started with SIGINT at its default (exec keeps the PID), as dev.sh does.
DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
T = TypeVar("T")


def psycopg2_url(dsn: str) -> str:
    """The instance's URL names its driver (deploy/team/dagster.yaml says why)."""
    return dsn.replace("postgresql://", "postgresql+psycopg2://", 1)


def team_instance_yaml(max_concurrent_runs: int | None = None) -> str:
    """The shipped team instance, as it is or with another run limit (benchmarks)."""
    text = TEAM_INSTANCE.read_text()
    if max_concurrent_runs is None:
        return text
    config = yaml.safe_load(text)
    config["concurrency"]["runs"]["max_concurrent_runs"] = max_concurrent_runs
    return yaml.safe_dump(config, sort_keys=False)


@dataclass(frozen=True)
class StepWindow:
    """One step of one run: its process and when it started and ended (event times)."""

    run_id: str
    step_key: str
    pid: int
    start: float
    end: float
    failed: bool

    def overlaps(self, other: StepWindow) -> bool:
        return self.start < other.end and other.start < self.end


def step_windows(instance: dg.DagsterInstance, run_ids: list[str]) -> list[StepWindow]:
    windows = []
    for run_id in run_ids:
        started: dict[str, tuple[float, int]] = {}
        for entry in instance.all_logs(run_id):
            event = entry.dagster_event
            if event is None or event.step_key is None:
                continue
            if event.event_type == dg.DagsterEventType.STEP_START:
                started[event.step_key] = (entry.timestamp, event.pid)
            elif event.event_type in (
                dg.DagsterEventType.STEP_SUCCESS,
                dg.DagsterEventType.STEP_FAILURE,
            ):
                start, pid = started[event.step_key]
                failed = event.event_type == dg.DagsterEventType.STEP_FAILURE
                windows.append(
                    StepWindow(run_id, event.step_key, pid, start, entry.timestamp, failed)
                )
    return windows


def run_event_times(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """When the run was enqueued, dequeued (launched), started (its process running the
    code) and ended, by Dagster's run events."""
    times = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is not None and event.is_job_event:
            times.setdefault(event.event_type_value, entry.timestamp)
    return times


def label_counts(paths: LitmusPaths, partition_key: str) -> tuple[int, int, int]:
    """(raw trajectories, labeled rows, distinct labeled trajectories) of one configuration:
    all three equal when every trajectory was labeled exactly once."""
    with connect_read_only(paths.duckdb_path) as con:
        counts = con.execute(
            """
            SELECT (SELECT count(*) FROM raw_trajectories WHERE partition_key = $key),
                   count(*), count(DISTINCT (run_id, instance_id, epoch))
            FROM labeled_trajectories WHERE partition_key = $key
            """,
            {"key": partition_key},
        ).fetchone()
    assert counts is not None
    return counts


def wait_for(
    condition: Callable[[], T | None],
    timeout_s: float,
    what: str,
    processes: list[subprocess.Popen],
    poll_s: float = 2.0,
) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                raise AssertionError(f"{process.args[3]} exited {process.returncode}")
        found = condition()
        if found:
            return found
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@dataclass
class Deployment:
    instance: dg.DagsterInstance
    workspace: Path
    env: dict[str, str]
    logs: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    def start(self, name: str, *command: str) -> subprocess.Popen:
        """Start ``command`` (its output in ``logs/<name>.log``); stopped by PID at exit."""
        with (self.logs / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-c", DEFAULT_SIGINT, *command], cwd=REPO, env=self.env,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        self.processes.append(process)
        return process

    def finish(self, process: subprocess.Popen, name: str, timeout_s: float = 300) -> None:
        """Wait for a started command to exit 0."""
        code = process.wait(timeout=timeout_s)
        self.processes.remove(process)
        assert code == 0, (self.logs / f"{name}.log").read_text()[-3000:]


@contextmanager
def team_deployment(
    paths: LitmusPaths,
    postgres_url: str,
    logs: Path,
    *,
    instance_yaml: str | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Deployment]:
    """The code server and the daemon over ``paths`` with the team instance (see module doc)."""
    dagster_home = paths.home / "dagster"
    dagster_home.mkdir(parents=True, exist_ok=True)
    if instance_yaml is None:
        shutil.copyfile(TEAM_INSTANCE, dagster_home / "dagster.yaml")
    else:
        (dagster_home / "dagster.yaml").write_text(instance_yaml)
    port = free_port()
    logs.mkdir(parents=True, exist_ok=True)
    workspace = logs / "workspace.yaml"
    workspace.write_text(
        "load_from:\n  - grpc_server:\n"
        f"      host: 127.0.0.1\n      port: {port}\n      location_name: litmus\n"
    )
    process_env = {
        **os.environ,
        **(env or {}),
        "DAGSTER_HOME": str(dagster_home),
        "LITMUS_HOME": str(paths.home),
        URL_ENV: postgres_url,
    }
    process_env.pop("LITMUS_DUCKDB_PATH", None)
    previous_url = os.environ.get(URL_ENV)
    os.environ[URL_ENV] = postgres_url  # for this process's own instance
    instance = dg.DagsterInstance.from_config(str(dagster_home))
    deployment = Deployment(instance, workspace, process_env, logs)
    try:
        code_server = deployment.start(
            "code_server", str(BIN / "dagster"), "api", "grpc",
            "-m", "litmus_dagster.definitions", "-h", "127.0.0.1", "-p", str(port),
            "--location-name", "litmus", "-d", str(REPO),
        )  # fmt: skip
        wait_for(
            lambda: b"Started Dagster code server" in (logs / "code_server.log").read_bytes(),
            300, "the code server", [code_server], poll_s=0.5,
        )  # fmt: skip
        deployment.start("daemon", str(BIN / "dagster-daemon"), "run", "-w", str(workspace))
        yield deployment
    finally:
        _kill_unfinished_runs(instance)
        for process in reversed(deployment.processes):
            stop_process(process, timeout=30)
        instance.dispose()
        if previous_url is None:
            os.environ.pop(URL_ENV, None)
        else:
            os.environ[URL_ENV] = previous_url


def _kill_unfinished_runs(instance: dg.DagsterInstance) -> None:
    """SIGKILL, by PID, the process of every run not finished: the one that wrote its start
    and step events (the daemon writes the queue's events under its own PID)."""
    for run in instance.get_runs():
        if run.status in FINISHED:
            continue
        pids = {
            entry.dagster_event.pid
            for entry in instance.all_logs(run.run_id)
            if entry.dagster_event is not None
            and (
                entry.dagster_event.is_step_event
                or entry.dagster_event.event_type == dg.DagsterEventType.RUN_START
            )
        }
        for pid in pids - {None, os.getpid()}:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
