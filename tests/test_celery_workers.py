"""Landed configurations scored by dagster-celery workers, the across-machines deployment.

The shipped deploy/team-celery instance (its run limit set to the workers' two pool
processes) on a real PostgreSQL server (tests/postgres_server.py) and a real Redis broker
(tests/redis_server.py), with a code server, ``dagster-daemon run`` and two Celery workers
(``celery -A dagster_celery.app worker``, one pool process each, reading
deploy/team-celery/dagster_celery_config.py) as OS processes, each stopped by its PID. The
crash-loop sample's four run files land at once: the landing sensor requests one run per
configuration, the daemon's CeleryRunLauncher puts each on Redis, and the workers run them.
One run's process is killed (SIGKILL, by its PID) in its labeling step (held there by
``litmus.faults.rendezvous``): Celery records its task failed, the daemon's run monitoring
reads that from Redis and fails the run, and ``run_retries`` queues it again, on a worker too.

What proves that the workers ran them: Celery's own record of each run's task (the worker
that ran it) and the process ids of the run's Dagster events, each a pool process of that
worker (read from /proc while the workers run). The board published at the end is the one
``litmus run`` publishes in-process on the same files (tests/crash_loop_world.py).

The warehouse is the embedded file: everything here is on one machine, in separate
processes, whose writes take turns on its lock; across machines the warehouse must be the
lake (docs/operations.md, "Several machines").
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from crash_loop_world import clean_publication, published, sample_inputs
from postgres_server import PostgresServer
from redis_server import RedisServer, redis_broker  # noqa: F401 (a fixture)
from team_deployment import (
    BIN,
    REPO,
    TEAM_INSTANCE,
    label_counts,
    psycopg2_url,
    team_deployment,
    wait_for,
)

from litmus.faults import RENDEZVOUS_ENV
from litmus.settings import LitmusPaths, litmus_paths
from litmus_dagster.jobs import land_and_score_job, publish_job

CELERY_DEPLOYMENT = REPO / "deploy" / "team-celery"
CELERY_INSTANCE = CELERY_DEPLOYMENT / "dagster.yaml"
BROKER_ENV = "LITMUS_CELERY_BROKER"
WORKERS = ("litmus1", "litmus2")
TASK_ID_TAG = "dagster-celery/task_id"  # dagster_celery.tags.DAGSTER_CELERY_TASK_ID_TAG
PARTITION_TAG = "dagster/partition"
PARENT_RUN_TAG = "dagster/parent_run_id"  # the run a retry re-executes
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE}
# the landing sensor needs two evaluations 30 s apart; two runs at a time after that
SETTLE_TIMEOUT_S = 900


@dataclass
class CeleryWorld:
    paths: LitmusPaths
    landed: list[str]  # the landed configurations' partition keys
    runs: list[dg.RunRecord]
    killed: str  # the run whose process was killed while it labeled
    run_pids: dict[str, set[int]]  # run id → the pids of its run and step events
    task_workers: dict[str, str | None]  # run id → the Celery worker that ran its task
    pool_pids: dict[str, set[int]]  # worker node name → its pool processes, as seen
    other_pids: set[int]  # the test, the code server, the daemon, the workers' main processes
    published: dict[str, Any]


def celery_instance_yaml(max_concurrent_runs: int) -> str:
    config = yaml.safe_load(CELERY_INSTANCE.read_text())
    config["concurrency"]["runs"]["max_concurrent_runs"] = max_concurrent_runs
    return yaml.safe_dump(config, sort_keys=False)


def children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid`` (from /proc: field 4 of ``stat``)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            stat = (entry / "stat").read_text()
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def processes_of(home: Path) -> set[int]:
    """The live processes (not zombies) whose environment names ``home`` as ``LITMUS_HOME``."""
    marker = f"LITMUS_HOME={home}".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with suppress(OSError):
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
                environment = (entry / "environ").read_bytes().split(b"\0")
                if state != "Z" and marker in environment:
                    found.add(int(entry.name))
    return found


def event_pids(instance: dg.DagsterInstance, run_id: str) -> set[int]:
    """The processes that wrote the run's start and its steps' events (the run's process;
    the daemon writes the queue's and the launcher's events)."""
    return {
        entry.dagster_event.pid
        for entry in instance.all_logs(run_id)
        if entry.dagster_event is not None
        and entry.dagster_event.pid is not None
        and (
            entry.dagster_event.is_step_event
            or entry.dagster_event.event_type == dg.DagsterEventType.RUN_START
        )
    }


@pytest.fixture(scope="module")
def celery_world(
    postgres: PostgresServer,
    redis_broker: RedisServer,  # noqa: F811 (the fixture imported above)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[CeleryWorld]:
    root = tmp_path_factory.mktemp("celery")
    paths = litmus_paths(root / "home").ensure()
    suite, run_files = sample_inputs(root)
    postgres.create_database("dagster_celery")
    meeting = root / "labeling_rendezvous"
    meeting.mkdir()
    started = dg.RunsFilter(
        job_name=land_and_score_job.name, statuses=[dg.DagsterRunStatus.STARTED]
    )
    env = {
        BROKER_ENV: redis_broker.url(0),
        # the workers import the Celery settings from here
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(CELERY_DEPLOYMENT), os.environ.get("PYTHONPATH")])
        ),
        # the in-process board it is compared with is published under this name
        "LITMUS_PUBLISHER": "crash-loop",
        # the first labeling step waits there (for a second one, at most two minutes): it is
        # killed while it waits, in its step
        RENDEZVOUS_ENV: f"labeling.started:2:{meeting}",
    }
    url = psycopg2_url(postgres.dsn("dagster_celery"))
    seen_pool: dict[str, set[int]] = {name: set() for name in WORKERS}
    instance_yaml = celery_instance_yaml(max_concurrent_runs=len(WORKERS))
    with (
        pytest.MonkeyPatch.context() as patch,
        team_deployment(paths, url, root / "logs", instance_yaml=instance_yaml, env=env) as (
            deployment
        ),
    ):
        patch.setenv(BROKER_ENV, redis_broker.url(0))  # this process's instance reads it too
        instance = deployment.instance
        worker = [str(BIN / "celery"), "-A", "dagster_celery.app", "worker", "-Q", "dagster"]
        workers = {
            name: deployment.start(name, *worker, "-c", "1", "-n", f"{name}@%h", "-l", "INFO")
            for name in WORKERS
        }
        processes = list(deployment.processes)
        wait_for(
            lambda: all(b" ready." in (root / "logs" / f"{n}.log").read_bytes() for n in WORKERS),
            300, "the Celery workers", processes, poll_s=0.5,
        )  # fmt: skip
        shutil.copyfile(suite, paths.suites / suite.name)
        for run_file in run_files:  # landed at once
            shutil.copyfile(run_file, paths.landing / run_file.name)

        def observe_pools() -> None:  # every run process is seen while it runs
            for name, worker in workers.items():
                seen_pool[name] |= children(worker.pid)

        def labeling() -> tuple[str, int] | None:
            """A run waiting at the start of its labeling step, and its process."""
            observe_pools()
            for entry in meeting.iterdir():
                pid = int(entry.name)
                if any(pid in pool for pool in seen_pool.values()):
                    for run in instance.get_runs(filters=started):
                        if pid in event_pids(instance, run.run_id):
                            return run.run_id, pid
            return None

        killed, killed_pid = wait_for(
            labeling, SETTLE_TIMEOUT_S, "a labeling step", processes, poll_s=0.5
        )
        os.kill(killed_pid, signal.SIGKILL)

        def batch_done() -> list[dg.RunRecord] | None:
            observe_pools()
            records = instance.get_run_records()
            retried = any(r.dagster_run.tags.get(PARENT_RUN_TAG) == killed for r in records)
            scoring_ends = [
                r.end_time for r in records if r.dagster_run.job_name != publish_job.name
            ]
            published_after = [
                r
                for r in records
                if r.dagster_run.job_name == publish_job.name
                and (r.start_time or 0) >= max(filter(None, scoring_ends), default=0)
            ]
            settled = all(r.dagster_run.status in FINISHED for r in records)
            return records if retried and published_after and settled else None

        runs = wait_for(batch_done, SETTLE_TIMEOUT_S, "every run", processes, poll_s=0.5)
        launcher = instance.run_launcher
        task_workers = {}
        for record in runs:
            task = launcher.celery.AsyncResult(record.dagster_run.tags[TASK_ID_TAG])
            task_workers[record.dagster_run.run_id] = task.worker
        node = {name: f"{name}@{os.uname().nodename}" for name in WORKERS}
        world = CeleryWorld(
            paths=paths,
            landed=sorted(
                r.dagster_run.tags[PARTITION_TAG]
                for r in runs
                if r.dagster_run.job_name == land_and_score_job.name
                and PARENT_RUN_TAG not in r.dagster_run.tags
            ),
            runs=runs,
            killed=killed,
            run_pids={
                r.dagster_run.run_id: event_pids(instance, r.dagster_run.run_id) for r in runs
            },
            task_workers=task_workers,
            pool_pids={node[name]: pids for name, pids in seen_pool.items()},
            other_pids={os.getpid(), *(process.pid for process in processes)},
            published=published(paths),
        )
        yield world
    # The deployment's processes were stopped by their PIDs; what they started (pool processes,
    # runs, dbt) ends with them, a moment later under load. Whatever still runs with this home
    # in its environment after that is killed by its PID, and must then be gone.
    left = processes_of(paths.home)
    deadline = time.monotonic() + 30
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = processes_of(paths.home)
    for pid in left:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = processes_of(paths.home)
    assert not left, f"processes left running after the deployment stopped: {left}"


def test_the_celery_instance_is_the_team_instance_with_another_launcher() -> None:
    """One deployment's settings, two launchers: only how a run is started (and how long a
    launched run may wait for a worker) differs from deploy/team/dagster.yaml."""
    team = yaml.safe_load(TEAM_INSTANCE.read_text())
    celery = yaml.safe_load(CELERY_INSTANCE.read_text())
    assert celery["run_launcher"]["class"] == "CeleryRunLauncher"
    assert celery["run_launcher"]["config"]["broker"] == {"env": BROKER_ENV}
    monitoring = {**celery.pop("run_monitoring")}
    assert monitoring.pop("start_timeout_seconds") >= 300
    assert monitoring == team.pop("run_monitoring")
    del celery["run_launcher"], team["run_launcher"]
    assert celery == team


def test_every_run_ran_in_a_pool_process_of_a_celery_worker(celery_world: CeleryWorld) -> None:
    world = celery_world
    assert len(world.landed) == 4
    ran_on: set[str] = set()
    for record in world.runs:
        run_id = record.dagster_run.run_id
        worker = world.task_workers[run_id]
        assert worker in world.pool_pids, f"run {run_id} ran on {worker!r}"
        pids = world.run_pids[run_id]
        assert len(pids) == 1, f"run {run_id}: events from {pids}"  # one process per run
        assert pids <= world.pool_pids[worker], f"run {run_id}: {pids} is not {worker}'s"
        assert not pids & world.other_pids
        ran_on.add(worker)
    assert len(ran_on) == len(WORKERS), f"only {ran_on} ran runs"
    # the pool process is replaced after each run: one process per run, as by default
    all_pids = [pid for pids in world.run_pids.values() for pid in pids]
    assert len(set(all_pids)) == len(all_pids)


def test_a_run_whose_process_was_killed_failed_and_its_retry_scored_it_once(
    celery_world: CeleryWorld,
) -> None:
    """Celery recorded the killed run's task failed, run monitoring failed the run, and
    run_retries re-executed it; its configuration's trajectories are each labeled once."""
    world = celery_world
    by_id = {r.dagster_run.run_id: r.dagster_run for r in world.runs}
    assert by_id[world.killed].status == dg.DagsterRunStatus.FAILURE
    retries = [run for run in by_id.values() if run.tags.get(PARENT_RUN_TAG) == world.killed]
    assert [run.status for run in retries] == [dg.DagsterRunStatus.SUCCESS]
    partition = by_id[world.killed].tags[PARTITION_TAG]
    assert retries[0].tags[PARTITION_TAG] == partition
    raw, labeled, distinct = label_counts(world.paths, partition)
    assert raw > 0
    assert labeled == distinct == raw


def test_each_landed_configuration_was_scored_then_published(celery_world: CeleryWorld) -> None:
    world = celery_world
    scoring = [r for r in world.runs if r.dagster_run.job_name != publish_job.name]
    assert len(scoring) == len(world.landed) + 1  # the killed run's retry
    publications = [r for r in world.runs if r.dagster_run.job_name == publish_job.name]
    last = max(publications, key=lambda r: r.start_time or 0)
    assert last.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    assert last.start_time >= max(r.end_time for r in scoring)


def test_the_board_is_the_one_litmus_run_publishes_in_process(
    celery_world: CeleryWorld, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Same files, same board: the leaderboard CSV, Markdown, HTML and plot bytes, the
    receipt (rows, fingerprints, gates, the published files' digests) and the alerts."""
    assert celery_world.published == clean_publication(tmp_path_factory)
