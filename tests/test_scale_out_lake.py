"""The team deployment on the lake: configurations scored by parallel run processes writing
one DuckLake (catalog in PostgreSQL, data as Parquet) side by side.

One PostgreSQL server (the session's), one lake, one deployment of the shipped team instance
(deploy/team/dagster.yaml, unchanged: a code server and ``dagster-daemon run`` as OS processes,
tests/team_deployment.py) for the whole module. The sample's nine configurations land at once;
the landing sensor requests one run per configuration and the queue runs them in parallel
processes. While they are queued, one partition is launched twice more. The first labeling
step to have written its partition's labels is killed there (SIGKILL of its run process,
before the commit: ``litmus.faults.kill_once``); run monitoring marks the run failed and
``run_retries`` runs it again. The same files are scored by an embedded ``litmus run`` beside
it, and the two published boards are compared.

Everything asserted is read back from Dagster's run records and step events (process ids,
times) and from the lake itself.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from crash_loop_world import published
from lake_world import new_lake
from postgres_server import PostgresServer
from team_deployment import (
    BIN,
    StepWindow,
    label_counts,
    psycopg2_url,
    step_windows,
    team_deployment,
    wait_for,
)

from litmus.faults import KILL_ONCE_ENV, RENDEZVOUS_ENV
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect_read_only
from litmus.warehouse_lake import LAKE_DATA_PATH_ENV, WAREHOUSE_ENV
from litmus_dagster.jobs import land_and_score_job, publish_job, score_configuration_job
from litmus_dagster.pipeline import stage_sample

# the deployment waits for the landing sensor (two evaluations 30 s apart) and twelve runs
pytestmark = pytest.mark.timeout(3600)

N_FAMILIES = 4  # the cost is the runs' processes, not the rows
PARTITION_TAG = "dagster/partition"
PARENT_RUN_TAG = "dagster/parent_run_id"
PUBLISHER = "scale-out-test"
SETTLE_TIMEOUT_S = 1800  # twelve runs, ingestion one step at a time: a loaded machine is slow
LABELING_STEP = "labeled_trajectories"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE}
LITMUS = Path(sys.executable).with_name("litmus")


@dataclass
class Kill:
    """The run worker killed mid-write, and its partition's labels just after it died."""

    pid: int
    partition_key: str
    trajectories: int = 0
    labels: int = 0
    distinct_labels: int = 0


@dataclass
class LakeTeamWorld:
    paths: LitmusPaths
    embedded: LitmusPaths
    lake: dict[str, str]
    instance: dg.DagsterInstance
    landed: list[str]
    twice: str
    kill: Kill
    runs: list[dg.RunRecord] = field(default_factory=list)
    steps: list[StepWindow] = field(default_factory=list)


def _watch_for_the_kill(
    paths: LitmusPaths, marker: Path, found: list[Kill], stop: threading.Event
) -> None:
    """Once the marker names a killed process and it is gone, read its partition's labels."""
    while not stop.is_set() and not marker.exists():
        time.sleep(0.1)
    if stop.is_set():
        return
    time.sleep(0.2)  # the marker is written whole before the kill
    named = json.loads(marker.read_text())
    while Path(f"/proc/{named['pid']}").exists() and not stop.is_set():
        time.sleep(0.05)
    kill = Kill(pid=named["pid"], partition_key=named["subject"])
    with connect_read_only(paths.duckdb_path) as con:  # the lake (LITMUS_WAREHOUSE)
        kill.trajectories, kill.labels, kill.distinct_labels = con.execute(
            """
            SELECT (SELECT count(*) FROM raw_trajectories WHERE partition_key = $key),
                   count(*), count(DISTINCT trajectory_id)
            FROM trajectory_labels WHERE partition_key = $key
            """,
            {"key": kill.partition_key},
        ).fetchone()
    found.append(kill)


def _embedded_run(paths: LitmusPaths) -> subprocess.Popen:
    """`litmus run` on the embedded warehouse of ``paths`` (no lake in its environment)."""
    env = {**os.environ, "LITMUS_HOME": str(paths.home), "LITMUS_PUBLISHER": PUBLISHER}
    for name in (WAREHOUSE_ENV, LAKE_DATA_PATH_ENV, "LITMUS_DUCKDB_PATH", "DAGSTER_HOME"):
        env.pop(name, None)
    log = (paths.home / "run.log").open("wb")
    return subprocess.Popen(
        [str(LITMUS), "run"], env=env, stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture(scope="module")
def lake_team(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LakeTeamWorld]:
    root = tmp_path_factory.mktemp("lake-team")
    manifest = generate_sample(root / "generated", n_families=N_FAMILIES)
    paths = litmus_paths(root / "home").ensure()
    embedded = litmus_paths(root / "embedded").ensure()
    stage_sample(paths, manifest)
    stage_sample(embedded, manifest)
    reference = _embedded_run(embedded)  # while the deployment waits for its sensor
    lake = new_lake(postgres, root)
    postgres.create_database("dagster_lake_team")
    meeting = root / "labeling_rendezvous"
    meeting.mkdir()
    marker = root / "killed.json"
    env = {
        # three labeling steps meet: the one killed may be among them, two survivors overlap
        RENDEZVOUS_ENV: f"labeling.started:3:{meeting}",
        KILL_ONCE_ENV: f"labeling.written:{marker}",
        "LITMUS_PUBLISHER": PUBLISHER,
    }
    url = psycopg2_url(postgres.dsn("dagster_lake_team"))
    kills: list[Kill] = []
    stop = threading.Event()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in lake.items():
            patch.setenv(name, value)
        watcher = threading.Thread(target=_watch_for_the_kill, args=(paths, marker, kills, stop))
        watcher.start()
        try:
            with team_deployment(paths, url, root / "logs", env=env) as deployment:
                instance = deployment.instance
                servers = list(deployment.processes)

                def landing_runs() -> list[str] | None:
                    runs = instance.get_runs(
                        filters=dg.RunsFilter(job_name=land_and_score_job.name)
                    )
                    keys = sorted({run.tags[PARTITION_TAG] for run in runs})
                    return keys if len(keys) == len(manifest.run_paths) else None

                landed = wait_for(landing_runs, SETTLE_TIMEOUT_S, "the landing runs", servers)
                twice = landed[-1]
                launch = [str(BIN / "dagster"), "job", "launch", "-w", str(deployment.workspace)]
                launch += ["-j", score_configuration_job.name]
                launch += ["--tags", json.dumps({PARTITION_TAG: twice})]
                launches = [deployment.start(f"launch{n}", *launch) for n in (1, 2)]
                for n, process in enumerate(launches, start=1):
                    deployment.finish(process, f"launch{n}")

                def batch_done() -> list[dg.RunRecord] | None:
                    records = instance.get_run_records()
                    if not kills or not all(r.dagster_run.status in FINISHED for r in records):
                        return None
                    if not any(r.dagster_run.tags.get(PARENT_RUN_TAG) for r in records):
                        return None  # the killed run is not retried yet
                    # the publication after the landed batch (retries included); the two
                    # extra runs of one partition re-score unchanged inputs
                    landing = [
                        r for r in records if r.dagster_run.job_name == land_and_score_job.name
                    ]
                    last_scored = max(r.end_time or 0 for r in landing)
                    published_after = any(
                        r.dagster_run.job_name == publish_job.name
                        and (r.start_time or 0) >= last_scored
                        for r in records
                    )
                    return records if published_after else None

                runs = wait_for(batch_done, SETTLE_TIMEOUT_S, "every run", servers)
                assert reference.wait(timeout=SETTLE_TIMEOUT_S) == 0, (
                    embedded.home / "run.log"
                ).read_text()[-3000:]
                yield LakeTeamWorld(
                    paths=paths,
                    embedded=embedded,
                    lake=lake,
                    instance=instance,
                    landed=landed,
                    twice=twice,
                    kill=kills[0],
                    runs=runs,
                    steps=step_windows(instance, [r.dagster_run.run_id for r in runs]),
                )
        finally:
            stop.set()
            watcher.join(timeout=60)
            if reference.poll() is None:
                reference.kill()
                reference.wait(timeout=60)


def _runs_of(world: LakeTeamWorld, key: str) -> list[dg.RunRecord]:
    return sorted(
        (r for r in world.runs if r.dagster_run.tags.get(PARTITION_TAG) == key),
        key=lambda r: r.start_time or 0,
    )


def test_landed_configurations_labeled_on_the_lake_in_parallel_processes(
    lake_team: LakeTeamWorld,
) -> None:
    """Nine configurations landed at once, one run process each, and labeling steps of
    distinct processes writing the lake at the same time (they met at the rendezvous)."""
    world = lake_team
    assert len(world.landed) >= 8
    run_pids = {w.run_id: w.pid for w in world.steps}
    assert len(set(run_pids.values())) == len(run_pids)  # one process per run
    labeling = [w for w in world.steps if w.step_key == LABELING_STEP and not w.failed]
    overlapping = [(a, b) for a in labeling for b in labeling if a.pid < b.pid and a.overlaps(b)]
    assert overlapping, f"no two labeling steps ran at the same time: {labeling}"
    assert all(a.run_id != b.run_id for a, b in overlapping)
    # every landed configuration's last run ended as scored, or withheld by a blocking gate
    for key in world.landed:
        last = _runs_of(world, key)[-1]
        failed = {
            w.step_key for w in world.steps if w.run_id == last.dagster_run.run_id and w.failed
        }
        if last.dagster_run.status == dg.DagsterRunStatus.FAILURE:
            assert failed == {"publication_gates"}, key
        else:
            assert last.dagster_run.status == dg.DagsterRunStatus.SUCCESS and not failed


def test_a_run_killed_mid_labeling_left_no_rows_and_its_retry_succeeded(
    lake_team: LakeTeamWorld,
) -> None:
    world = lake_team
    kill = world.kill
    # just after the kill: the partition's labels as they were before its transaction
    # (none, or one per trajectory from an earlier run), never a part of the killed write
    assert kill.trajectories > 0
    assert kill.labels in (0, kill.trajectories) and kill.distinct_labels == kill.labels
    killed = [r for r in world.runs if _started_in(world.instance, r, kill.pid)]
    assert len(killed) == 1
    killed_run = killed[0].dagster_run
    assert killed_run.status == dg.DagsterRunStatus.FAILURE
    retries = [r for r in world.runs if r.dagster_run.tags.get(PARENT_RUN_TAG) == killed_run.run_id]
    assert len(retries) == 1
    assert retries[0].dagster_run.status == dg.DagsterRunStatus.SUCCESS
    with connect_read_only(world.paths.duckdb_path) as con:
        assert con.execute(
            "SELECT count(*), count(DISTINCT trajectory_id) FROM trajectory_labels "
            "WHERE partition_key = ?",
            [kill.partition_key],
        ).fetchone() == (kill.trajectories, kill.trajectories)


def _started_in(instance: dg.DagsterInstance, record: dg.RunRecord, pid: int) -> bool:
    """Whether ``pid`` wrote a step event of the run (a step started, never ended)."""
    return any(
        entry.dagster_event is not None
        and entry.dagster_event.is_step_event
        and entry.dagster_event.pid == pid
        for entry in instance.all_logs(record.dagster_run.run_id)
    )


def test_runs_of_one_partition_never_write_at_once(lake_team: LakeTeamWorld) -> None:
    """The partition launched twice more while queued: its runs one after another, each
    trajectory labeled once."""
    world = lake_team
    same = _runs_of(world, world.twice)
    assert len([r for r in same if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS]) >= 3
    for before, after in itertools.pairwise(same):
        assert before.end_time <= after.start_time
    raw, labeled, distinct = label_counts(world.paths, world.twice)
    assert raw > 0
    assert labeled == distinct == raw


def test_the_board_published_from_the_lake_is_the_embedded_one(
    lake_team: LakeTeamWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same files scored by parallel runs on the lake (one of them killed and retried)
    and by one embedded `litmus run`: the same board files, receipt and alerts."""
    world = lake_team
    for name, value in world.lake.items():
        monkeypatch.setenv(name, value)
    on_lake: dict[str, Any] = published(world.paths)
    assert not world.paths.duckdb_path.exists()  # everything went to the lake
    for name in world.lake:
        monkeypatch.delenv(name)
    assert on_lake == published(world.embedded)
