"""Configurations scored in parallel through a real Dagster daemon on the team instance.

The shipped team instance (deploy/team/dagster.yaml, unchanged) on a real PostgreSQL server
(tests/postgres_server.py), a code server and ``dagster-daemon run`` as OS processes
(tests/team_deployment.py): the sample's nine configurations land at once, the landing sensor
requests one run per configuration, the queue starts them in parallel run processes, and the
publish automation publishes once after the batch. While they are queued, one partition is
launched twice more (``dagster job launch``, the public CLI). Everything asserted is read back
from Dagster's run records and step events (their process ids and times) and from the
warehouse.

On the embedded warehouse the labeling steps of parallel runs overlap in Dagster (they run in
distinct processes) while their writes take turns on the DuckDB file's lock; on the lake
backend the same instance writes them truly in parallel.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

import dagster as dg
import pytest
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

from litmus.faults import RENDEZVOUS_ENV
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect_read_only
from litmus_dagster.jobs import land_and_score_job, publish_job, score_configuration_job
from litmus_dagster.partitions import WAREHOUSE_POOL
from litmus_dagster.pipeline import stage_sample

# the deployment waits for the landing sensor (two evaluations 30 s apart) and eleven runs;
# on a loaded machine that is more than the default timeout of one test's setup
pytestmark = pytest.mark.timeout(3600)

N_FAMILIES = 4  # the cost is the runs' processes, not the rows
PARTITION_TAG = "dagster/partition"
# the landing sensor needs two evaluations 30 s apart; runs wait their turn in the queue
SETTLE_TIMEOUT_S = 900
LABELING_STEP = "labeled_trajectories"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE}


@dataclass
class TeamWorld:
    paths: LitmusPaths
    instance: dg.DagsterInstance
    landed: list[str]  # the landed configurations' partition keys
    twice: str  # the partition launched twice more
    started_pids: set[int]  # the code server, the daemon
    runs: list[dg.RunRecord]
    steps: list[StepWindow]


@pytest.fixture(scope="module")
def team_world(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TeamWorld]:
    root = tmp_path_factory.mktemp("team")
    paths = litmus_paths(root / "home").ensure()
    manifest = generate_sample(root / "generated", n_families=N_FAMILIES)
    stage_sample(paths, manifest)
    postgres.create_database("dagster_team")
    # two labeling steps wait for each other (litmus.faults.rendezvous): they meet only if
    # two runs are labeling at the same moment
    meeting = root / "labeling_rendezvous"
    meeting.mkdir()
    env = {RENDEZVOUS_ENV: f"labeling.started:2:{meeting}"}
    url = psycopg2_url(postgres.dsn("dagster_team"))
    with team_deployment(paths, url, root / "logs", env=env) as deployment:
        instance = deployment.instance
        servers = list(deployment.processes)

        def landing_runs() -> list[str] | None:
            runs = instance.get_runs(filters=dg.RunsFilter(job_name=land_and_score_job.name))
            keys = sorted(run.tags[PARTITION_TAG] for run in runs)
            return keys if len(keys) == len(manifest.run_paths) else None

        landed = wait_for(landing_runs, SETTLE_TIMEOUT_S, "the landing sensor's runs", servers)
        # the same partition launched twice more at once, while the batch is in the queue
        twice = landed[0]
        launch = [str(BIN / "dagster"), "job", "launch", "-w", str(deployment.workspace)]
        launch += ["-j", score_configuration_job.name, "--tags", json.dumps({PARTITION_TAG: twice})]
        launches = [deployment.start(f"launch{n}", *launch) for n in (1, 2)]
        for n, process in enumerate(launches, start=1):
            deployment.finish(process, f"launch{n}")

        def batch_done() -> list[dg.RunRecord] | None:
            records = instance.get_run_records()
            publications = [r for r in records if r.dagster_run.job_name == publish_job.name]
            settled = all(r.dagster_run.status in FINISHED for r in records)
            return records if publications and settled else None

        runs = wait_for(batch_done, SETTLE_TIMEOUT_S, "every run", servers)
        yield TeamWorld(
            paths=paths,
            instance=instance,
            landed=landed,
            twice=twice,
            started_pids={process.pid for process in servers},
            runs=runs,
            steps=step_windows(instance, [r.dagster_run.run_id for r in runs]),
        )


def test_each_landed_configuration_is_one_run_of_its_own_process(team_world: TeamWorld) -> None:
    world = team_world
    assert len(world.landed) >= 8
    landing_runs = [r for r in world.runs if r.dagster_run.job_name == land_and_score_job.name]
    assert sorted(r.dagster_run.tags[PARTITION_TAG] for r in landing_runs) == world.landed
    # a run that fails is one whose blocking gate withheld its configuration, nothing else
    for record in landing_runs:
        run_id = record.dagster_run.run_id
        failed = {w.step_key for w in world.steps if w.run_id == run_id and w.failed}
        assert failed == (
            {"publication_gates"}
            if record.dagster_run.status == dg.DagsterRunStatus.FAILURE
            else set()
        )
    run_pids = {w.run_id: w.pid for w in world.steps}
    assert len(set(run_pids.values())) == len(run_pids)  # one process per run
    assert not set(run_pids.values()) & {os.getpid(), *world.started_pids}


def test_labeling_steps_of_distinct_processes_overlap(team_world: TeamWorld) -> None:
    labeling = [w for w in team_world.steps if w.step_key == LABELING_STEP]
    overlapping = [(a, b) for a in labeling for b in labeling if a.pid < b.pid and a.overlaps(b)]
    assert overlapping, f"no two labeling steps ran at the same time: {labeling}"
    assert all(a.run_id != b.run_id for a, b in overlapping)


def test_shared_table_writers_take_turns_across_runs(team_world: TeamWorld) -> None:
    """The pool of 1: ingestion (every landing run has its steps) never overlaps itself."""
    pooled_keys = {"suite_catalog", "raw_run_files"}
    pooled = sorted(
        (w for w in team_world.steps if w.step_key in pooled_keys), key=lambda w: w.start
    )
    assert len({w.run_id for w in pooled}) >= 8
    for before, after in itertools.pairwise(pooled):
        assert before.end <= after.start, f"{before} and {after} ran at once"
    assert WAREHOUSE_POOL in team_world.instance.event_log_storage.get_concurrency_keys()


def test_runs_of_one_partition_never_run_at_once(team_world: TeamWorld) -> None:
    world = team_world
    same = sorted(
        (r for r in world.runs if r.dagster_run.tags.get(PARTITION_TAG) == world.twice),
        key=lambda r: r.start_time or 0,
    )
    assert len(same) == 3  # its landing run and the two launched at once
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in same)
    for before, after in itertools.pairwise(same):
        assert before.end_time <= after.start_time
    raw, labeled, distinct = label_counts(world.paths, world.twice)
    assert raw > 0
    assert labeled == distinct == raw  # written by one run at a time: each row once


def test_one_publication_follows_the_batch(team_world: TeamWorld) -> None:
    world = team_world
    publications = [r for r in world.runs if r.dagster_run.job_name == publish_job.name]
    assert len(publications) == 1
    publication = publications[0]
    assert publication.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    scoring_ends = [r.end_time for r in world.runs if r is not publication]
    assert publication.start_time >= max(scoring_ends)
    with connect_read_only(world.paths.duckdb_path) as con:
        boarded = {
            key
            for (key,) in con.execute(
                "SELECT DISTINCT partition_key FROM leaderboard WHERE partition_key IS NOT NULL"
            ).fetchall()
        }
    assert boarded <= set(world.landed)
    assert boarded
