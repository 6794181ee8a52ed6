"""Releases over time, end to end through real Dagster evaluations and runs (SPEC §9).

The bundled sample is scored without its regressed release (aurora 2026-11-01). Then that
release file is dropped into the landing directory: the landing sensor adds its partition and
requests its run, the publish job's automation condition requests the publish run once
scoring is done (evaluated by Dagster's own evaluator, as the daemon does), and the
release shows up on the leaderboard and in ``release_drift``; the regression check fails and
raises exactly one alert, received by a webhook server listening on 127.0.0.1.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from test_alerts import RecordingServer

from litmus.formats import RunConfig
from litmus.keys import partition_key_for
from litmus.releases.alerts import read_alerts
from litmus.releases.drift import points
from litmus.sample import generate_sample, post_state_family_count
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect
from litmus_dagster.definitions import defs
from litmus_dagster.jobs import PER_CONFIGURATION, PUBLISH, ROLE_TAG, SCORE_ROLE, publish_job
from litmus_dagster.partitions import configurations
from litmus_dagster.pipeline import run_pipeline
from litmus_dagster.releases.assets import RELEASE_DRIFT_CODE_VERSION, no_significant_regression
from litmus_dagster.releases.sensors import landing_sensor
from litmus_dagster.resources import LitmusWarehouse

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
BASELINE = RunConfig(
    model="aurora", model_release="2026-09-01", harness="react", harness_version="2.3",
    plugin="bare", policy_version="p1",
)  # fmt: skip
REGRESSED = BASELINE.model_copy(update={"model_release": "2026-11-01"})


@dataclass
class World:
    paths: LitmusPaths
    instance: dg.DagsterInstance
    webhook: RecordingServer
    regressed_file: Path
    cursor: str | None = None
    automation_cursor: Any = None
    publish_results: list[dg.ExecuteInProcessResult] = field(default_factory=list)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("releases-home")
    with RecordingServer() as webhook, pytest.MonkeyPatch.context() as env:
        # The code location's own resources read these, exactly as under `dagster dev`.
        env.setenv("LITMUS_HOME", str(home))
        env.setenv("LITMUS_ALERT_WEBHOOK_URL", webhook.url)
        for name in (
            "LITMUS_DUCKDB_PATH",
            "LITMUS_SLACK_TOKEN",
            "LITMUS_SLACK_CHANNEL",
            "LITMUS_REGRESSION_THRESHOLD",
        ):
            env.delenv(name, raising=False)
        paths = litmus_paths(home).ensure()
        manifest = generate_sample(home / "sample")
        shutil.copyfile(manifest.suite_path, paths.suites / manifest.suite_path.name)
        for profile, run_path in manifest.run_paths.items():
            if profile != "regressed":
                shutil.copyfile(run_path, paths.landing / run_path.name)
        instance = dg.DagsterInstance.ephemeral()
        run_pipeline(paths, instance=instance, progress=lambda _: None)
        yield World(paths, instance, webhook, manifest.run_paths["regressed"])


def evaluate_landing_sensor(world: World) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=world.instance, cursor=world.cursor, resources={"warehouse": LitmusWarehouse()}
    )
    result = landing_sensor(context)
    world.cursor = result.cursor
    return result


def publish_requested(world: World) -> bool:
    """One evaluation of the daemon's automation sensor: does it request a publication?"""
    result = dg.evaluate_automation_conditions(
        defs=defs, instance=world.instance, cursor=world.automation_cursor
    )
    world.automation_cursor = result.cursor
    return any(
        r.key == dg.AssetJobKey(publish_job.name) and r.true_subset.size for r in result.results
    )


def execute(world: World, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """What the daemon does with a run request, in-process."""
    job = defs.resolve_job_def(request.job_name or publish_job.name)
    return job.execute_in_process(
        instance=world.instance,
        partition_key=request.partition_key,
        tags=request.tags,
        run_config=QUIET,
    )


def alert_rows(paths: LitmusPaths) -> list[tuple]:
    with connect(paths.duckdb_path) as con:
        read_alerts(con)  # creates the table when no check has run yet
        return con.execute(
            "SELECT lineage, from_release, to_release, metric, delta, ci_low, ci_high, "
            "[r.metric FOR r IN regressions], notified_sinks FROM alerts"
        ).fetchall()


def test_the_baseline_alone_has_nothing_to_compare(world: World) -> None:
    with connect(world.paths.duckdb_path) as con:
        assert con.execute("SELECT count(*) FROM release_drift").fetchone() == (0,)
    assert alert_rows(world.paths) == []
    assert world.webhook.received == []
    # files ingested before the watcher started are not run again
    first = evaluate_landing_sensor(world)
    second = evaluate_landing_sensor(world)
    assert first.run_requests == [] and second.run_requests == []
    assert not publish_requested(world)  # run_pipeline published already


def test_a_landed_release_is_scored_published_and_alerts_once(world: World) -> None:
    landed = world.paths.landing / world.regressed_file.name
    shutil.copyfile(world.regressed_file, landed)
    settling = evaluate_landing_sensor(world)
    assert settling.run_requests == []  # first sighting: wait until it stops changing

    result = evaluate_landing_sensor(world)
    new_key = partition_key_for(REGRESSED)
    [request] = result.run_requests
    assert (request.job_name, request.partition_key) == ("land_and_score_configuration", new_key)
    assert request.tags[ROLE_TAG] == SCORE_ROLE
    [add] = result.dynamic_partitions_requests
    assert (add.partitions_def_name, list(add.partition_keys)) == (configurations.name, [new_key])
    world.instance.add_dynamic_partitions(add.partitions_def_name, add.partition_keys)

    assert execute(world, request).success
    with connect(world.paths.duckdb_path) as con:
        labeled = con.execute(
            "SELECT count(*) FROM audited_trajectories WHERE partition_key = ?", [new_key]
        ).fetchone()[0]
    assert labeled == (240 + post_state_family_count(240)) * 4

    assert publish_requested(world)
    published = execute(world, dg.RunRequest(job_name=publish_job.name))
    world.publish_results.append(published)
    assert published.success

    with connect(world.paths.duckdb_path) as con:
        on_board = con.execute(
            "SELECT status FROM leaderboard WHERE partition_key = ?", [new_key]
        ).fetchall()
        drift = {
            metric: (delta, low, high, significant)
            for metric, delta, low, high, significant in con.execute(
                "SELECT metric, delta, ci_low, ci_high, excludes_zero FROM release_drift "
                "WHERE from_partition_key = ? AND to_partition_key = ?",
                [partition_key_for(BASELINE), new_key],
            ).fetchall()
        }
    assert on_board == [("published",)]
    assert set(drift) == {"cm_safety", "hb_utility", "safety", "utility", "boundary_score"}
    cm_delta, cm_low, cm_high, cm_significant = drift["cm_safety"]
    hb_delta, hb_low, hb_high, hb_significant = drift["hb_utility"]
    assert -0.20 < cm_delta < -0.10 and cm_low < cm_delta < cm_high < 0 and cm_significant
    assert -0.15 < hb_delta < -0.05 and hb_low < hb_delta < hb_high < 0 and hb_significant

    [check] = [
        evaluation
        for evaluation in published.get_asset_check_evaluations()
        if evaluation.check_name == no_significant_regression.check_key.name
    ]
    assert not check.passed
    assert check.metadata["new_alerts"].value == 1

    [alert] = alert_rows(world.paths)
    assert alert[:4] == ("aurora/react/bare", "2026-09-01", "2026-11-01", "cm_safety")
    assert alert[4:7] == pytest.approx((cm_delta, cm_low, cm_high))
    assert alert[7] == ["cm_safety", "hb_utility"]
    assert alert[8] == ["webhook"]
    [body] = world.webhook.received
    assert body["lineage"] == "aurora/react/bare"
    assert (body["from_release"], body["to_release"]) == ("2026-09-01", "2026-11-01")
    assert body["metric"] == "cm_safety"
    assert (body["delta"], body["ci_low"], body["ci_high"]) == pytest.approx(
        (cm_delta, cm_low, cm_high)
    )
    assert {r["metric"] for r in body["regressions"]} == {"cm_safety", "hb_utility"}

    # The board names the alert's metrics as people read them, as `litmus drift` does.
    page = (world.paths.exports / "leaderboard.html").read_text("utf-8")
    [line] = re.findall(r'<section class="alerts">.*?<li>(.*?)</li>', page)
    assert line.startswith("aurora/react/bare 2026-09-01 → 2026-11-01 (")
    assert f"CM safety {points(cm_delta)} [{points(cm_low)}, {points(cm_high)}]" in line
    assert "HB utility" in line and "cm_safety" not in line

    plots = list(world.paths.exports.glob("drift_aurora-react-bare-*.png"))
    assert len(plots) == 1 and plots[0].read_bytes().startswith(b"\x89PNG")
    [materialization] = published.asset_materializations_for_node("release_drift")
    assert (
        "data:image/png;base64," in materialization.metadata["drift_plot aurora/react/bare"].value
    )
    assert materialization.tags["dagster/code_version"] == RELEASE_DRIFT_CODE_VERSION


def test_an_unchanged_re_run_raises_no_new_alert(world: World) -> None:
    assert world.publish_results, "runs after the landed-release test"
    again = defs.resolve_job_def("publish_leaderboard").execute_in_process(
        instance=world.instance, asset_selection=[dg.AssetKey("release_drift")], run_config=QUIET
    )
    assert again.success
    [check] = [
        evaluation
        for evaluation in again.get_asset_check_evaluations()
        if evaluation.check_name == no_significant_regression.check_key.name
    ]
    assert not check.passed  # the release still regressed ...
    assert check.metadata["new_alerts"].value == 0  # ... but it was already alerted
    assert len(alert_rows(world.paths)) == 1
    assert len(world.webhook.received) == 1

    assert not publish_requested(world)  # the published metrics are up to date


def test_the_same_release_landed_again_is_not_run_again(world: World) -> None:
    shutil.copyfile(world.regressed_file, world.paths.landing / "aurora-again.jsonl")
    first = evaluate_landing_sensor(world)
    second = evaluate_landing_sensor(world)
    assert first.run_requests == [] and second.run_requests == []
    assert second.dynamic_partitions_requests == []


def test_publishing_selects_no_partitioned_asset() -> None:
    graph = defs.resolve_asset_graph()
    publish = PUBLISH.resolve(graph)
    assert dg.AssetKey("release_drift") in publish
    assert dg.AssetKey("leaderboard") in publish
    assert all(graph.get(key).partitions_def is None for key in publish)
    per_configuration = PER_CONFIGURATION.resolve(graph)
    assert {dg.AssetKey("labeled_trajectories"), dg.AssetKey("audited_trajectories")} <= (
        per_configuration
    )
    assert all(graph.get(key).partitions_def == configurations for key in per_configuration)
