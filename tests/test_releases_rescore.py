"""Two processes writing the warehouse at once, then re-scoring stale configurations.

The home is scored by two OS processes started together, each materializing the land-and-
score job for half of the configurations and then publishing, against one DuckDB file: both
must succeed and leave a consistent warehouse. The same home
then serves the re-scoring tests: the schedule asks for exactly the stale partitions, and
``litmus rescore`` re-labels from the warehouse without touching the raw store.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pytest

from litmus.formats import RunConfig
from litmus.keys import partition_key_for
from litmus.labeling import LABELER_VERSION
from litmus.planning.status import partition_statuses
from litmus.sample import _PROFILE_LIST, generate_sample, post_state_family_count
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect
from litmus_dagster.cli import main
from litmus_dagster.pipeline import stage_sample
from litmus_dagster.releases.rescore import rescore
from litmus_dagster.releases.sensors import rescore_schedule
from litmus_dagster.resources import LitmusWarehouse

N_FAMILIES = 24
QUILL = RunConfig(
    model="quill", model_release="2026-10-20", harness="legacy", harness_version="0.9",
    plugin="bare",
)  # fmt: skip
WRITER = textwrap.dedent(
    """
    import sys
    import dagster as dg
    from litmus_dagster.definitions import defs

    # Each process has its own Dagster instance, so no Dagster pool is shared between them:
    # only the warehouse's file lock keeps their writes apart.
    instance = dg.DagsterInstance.ephemeral()
    publish, keys = sys.argv[1] == "publish", sys.argv[2:]
    instance.add_dynamic_partitions("configurations", keys)
    quiet = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    for key in keys:
        run = defs.resolve_job_def("land_and_score_configuration").execute_in_process(
            instance=instance, partition_key=key, run_config=quiet, raise_on_error=False
        )
        failed_steps = [
            event.step_key
            for event in run.get_step_failure_events()
            if event.event_specific_data.error.cls_name != "DagsterAssetCheckFailedError"
        ]
        assert not failed_steps, (key, failed_steps)
    if publish:  # dbt opens the file itself, under the same lock, while the other one labels
        run = defs.resolve_job_def("publish_leaderboard").execute_in_process(
            instance=instance, run_config=quiet
        )
        assert run.success
    print("ok", len(keys))
    """
)


def tree_state(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder`` with its SHA-256 and modification time."""
    return {
        path.relative_to(folder).as_posix(): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> LitmusPaths:
    paths = litmus_paths(tmp_path_factory.mktemp("rescore-home")).ensure()
    stage_sample(paths, generate_sample(paths.home / "sample", n_families=N_FAMILIES))
    keys = sorted(
        partition_key_for(RunConfig.model_validate(profile.config)) for profile in _PROFILE_LIST
    )
    environment = {
        **os.environ,
        "LITMUS_HOME": str(paths.home),
        "LITMUS_ALERT_WEBHOOK_URL": "",
        "LITMUS_SLACK_TOKEN": "",
    }
    environment.pop("LITMUS_DUCKDB_PATH", None)
    halves = {"publish": keys[0::2], "label": keys[1::2]}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, role, *half],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, half in halves.items()
    ]
    outcomes = [writer.communicate(timeout=600) for writer in writers]
    for writer, half, (stdout, stderr) in zip(writers, halves.values(), outcomes, strict=True):
        assert writer.returncode == 0, stderr[-3000:]
        assert stdout.strip().endswith(f"ok {len(half)}"), stdout[-2000:]
    return paths


def test_two_processes_writing_at_once_both_succeed_and_agree(home: LitmusPaths) -> None:
    with connect(home.duckdb_path) as con:
        files = con.execute("SELECT count(*), sum(records_accepted) FROM raw_files").fetchone()
        raw = con.execute(
            "SELECT count(*), count(DISTINCT trajectory_id) FROM raw_trajectories"
        ).fetchone()
        labels = con.execute(
            "SELECT count(*), count(DISTINCT trajectory_id) FROM trajectory_labels"
        ).fetchone()
        # published while the other process may still have been labeling: a subset
        on_board = {
            row[0]
            for row in con.execute(
                "SELECT partition_key FROM leaderboard WHERE row_kind <> 'control'"
            ).fetchall()
        }
        statuses = partition_statuses(con)
    stale = [s for s in statuses if s.stale]
    n_trajectories = len(_PROFILE_LIST) * (N_FAMILIES + post_state_family_count(N_FAMILIES)) * 4
    assert files == (len(_PROFILE_LIST), n_trajectories)  # each file ingested exactly once
    assert raw == (n_trajectories, n_trajectories)
    assert labels == (n_trajectories, n_trajectories)
    assert on_board and on_board <= {s.partition_key for s in statuses}
    assert stale == []


def test_the_schedule_requests_exactly_the_stale_partitions(home: LitmusPaths) -> None:
    with connect(home.duckdb_path) as con:
        keys = [s.partition_key for s in partition_statuses(con)]
        stale = keys[:2]
        con.execute(
            "UPDATE trajectory_labels SET labeler_version = '0.9.0' "
            "WHERE list_contains(?, partition_key)",
            [stale],
        )
    with (
        dg.instance_for_test() as instance,  # schedules need a persistent instance
        dg.build_schedule_context(
            instance=instance, resources={"warehouse": LitmusWarehouse(home=str(home.home))}
        ) as context,
    ):
        requests = rescore_schedule(context)
        registered = set(instance.get_dynamic_partitions("configurations"))
    assert sorted(r.partition_key for r in requests) == sorted(stale)
    assert all("labeler version 0.9.0 (current " in r.tags["litmus/stale_reason"] for r in requests)
    # a warehouse older than the Dagster instance gets its partitions registered
    assert set(stale) <= registered


def test_rescore_relabels_every_stale_partition_from_the_warehouse(
    home: LitmusPaths, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LITMUS_HOME", str(home.home))
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    with connect(home.duckdb_path) as con:  # labels from an older labeler
        con.execute("UPDATE trajectory_labels SET labeler_version = '0.9.0'")
        before = con.execute("SELECT max(labeled_at) FROM trajectory_labels").fetchone()[0]
        raw_before = con.execute("SELECT * FROM raw_files ORDER BY file_hash").fetchall()
        n_raw = con.execute("SELECT count(*) FROM raw_trajectories").fetchone()[0]
        n_partitions = len(partition_statuses(con))
    raw_store, landing = tree_state(home.raw_store), tree_state(home.landing)

    assert main(["--home", str(home.home), "rescore", "--dry-run"]) == 0
    assert capsys.readouterr().err.count("labeler version 0.9.0") == n_partitions

    result = rescore(home, instance=dg.DagsterInstance.ephemeral(), progress=lambda _: None)
    assert len(result.rescored) == n_partitions and result.published
    assert set(result.withheld) <= {partition_key_for(QUILL)}  # needs audit, as before
    with (
        dg.instance_for_test() as instance,
        dg.build_schedule_context(
            instance=instance, resources={"warehouse": LitmusWarehouse(home=str(home.home))}
        ) as context,
    ):
        assert isinstance(rescore_schedule(context), dg.SkipReason)

    with connect(home.duckdb_path) as con:
        versions = con.execute("SELECT DISTINCT labeler_version FROM trajectory_labels").fetchall()
        oldest = con.execute("SELECT min(labeled_at) FROM trajectory_labels").fetchone()[0]
        assert con.execute("SELECT * FROM raw_files ORDER BY file_hash").fetchall() == raw_before
        assert con.execute("SELECT count(*) FROM raw_trajectories").fetchone()[0] == n_raw
        assert not [s for s in partition_statuses(con) if s.stale]
        on_board = con.execute(
            "SELECT count(*) FROM leaderboard WHERE row_kind <> 'control'"
        ).fetchone()[0]
    assert versions == [(LABELER_VERSION,)]
    assert oldest > before  # every partition re-labeled
    assert on_board == n_partitions
    assert tree_state(home.raw_store) == raw_store  # raw store untouched (content and mtime)
    assert tree_state(home.landing) == landing

    assert main(["--home", str(home.home), "rescore"]) == 0  # nothing stale any more
    assert "every configuration is labeled with the current" in capsys.readouterr().err
