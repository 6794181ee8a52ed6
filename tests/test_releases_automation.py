"""Publishing under the daemon is the publish job's declarative automation condition
(``litmus_dagster.jobs.PUBLISH_WHEN_SCORED``), evaluated here by Dagster's own evaluator over
the real code location and a real instance: one publication after a batch of scoring runs,
none while a configuration is still being scored, none when nothing changed, and one when
the metric definitions changed.
"""

from __future__ import annotations

import dagster as dg
import pytest

from litmus_dagster.definitions import defs
from litmus_dagster.jobs import PUBLISH, publish_job, score_configuration_job
from litmus_dagster.partitions import configurations
from litmus_dagster.releases.assets import RELEASE_DRIFT_CODE_VERSION

PUBLISH_JOB = dg.AssetJobKey(publish_job.name)
AUDITED = dg.AssetKey("audited_trajectories")
RELEASE_DRIFT = dg.AssetKey("release_drift")


class Daemon:
    """The automation sensor's evaluations, one after the other (the cursor carried on)."""

    def __init__(self, instance: dg.DagsterInstance, definitions: dg.Definitions = defs) -> None:
        self.instance = instance
        self.definitions = definitions
        self.cursor = None

    def publishes(self) -> bool:
        result = dg.evaluate_automation_conditions(
            defs=self.definitions, instance=self.instance, cursor=self.cursor
        )
        self.cursor = result.cursor
        requested = {r.key: r.true_subset.size for r in result.results if r.true_subset.size}
        assert set(requested) <= {PUBLISH_JOB}, requested  # nothing else is automated
        return bool(requested)


def scored(instance: dg.DagsterInstance, partition_key: str) -> None:
    """What a finished scoring run leaves in the instance: its configuration's audited rows."""
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key=AUDITED, partition=partition_key)
    )


def published(instance: dg.DagsterInstance) -> None:
    """What a finished publication leaves: every publish asset materialized."""
    for key in PUBLISH.resolve(defs.resolve_asset_graph()):
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key))


@pytest.fixture
def instance() -> dg.DagsterInstance:
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(configurations.name, ["a", "b"])
        yield instance


def test_the_publish_automation_is_on_and_claims_the_publish_job() -> None:
    repository = defs.get_repository_def()
    [sensor] = [s for s in repository.sensor_defs if s.name == "publish_when_scored"]
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert sensor.asset_job_keys == {PUBLISH_JOB}
    # no stopped default automation sensor beside it
    assert {s.name for s in repository.sensor_defs} == {"landing_sensor", "publish_when_scored"}


def test_a_scoring_run_is_followed_by_one_publication(instance: dg.DagsterInstance) -> None:
    daemon = Daemon(instance)
    assert not daemon.publishes()  # nothing scored yet
    scored(instance, "a")
    scored(instance, "b")
    assert daemon.publishes()
    published(instance)
    assert not daemon.publishes()  # the published metrics are up to date
    assert not daemon.publishes()
    scored(instance, "b")  # re-scored (a re-audit, a new classifier version)
    assert daemon.publishes()


def test_nothing_is_published_while_a_configuration_is_still_being_scored(
    instance: dg.DagsterInstance,
) -> None:
    daemon = Daemon(instance)
    assert not daemon.publishes()
    scored(instance, "a")
    job = defs.resolve_job_def(score_configuration_job.name)
    queued = instance.create_run_for_job(
        job_def=job,
        tags={"dagster/partition": "b"},
        asset_selection=frozenset(job.asset_layer.selected_asset_keys),
    )
    assert not daemon.publishes()  # b is queued: wait for the whole batch
    instance.report_run_failed(queued)
    assert daemon.publishes()


def test_changed_metric_definitions_are_published_again(instance: dg.DagsterInstance) -> None:
    daemon = Daemon(instance)
    assert not daemon.publishes()
    scored(instance, "a")
    assert daemon.publishes()
    published(instance)
    assert not daemon.publishes()
    unchanged = defs.map_resolved_asset_specs(func=lambda spec: spec, selection=[RELEASE_DRIFT])
    daemon.definitions = unchanged
    assert not daemon.publishes()  # the same code location, loaded again
    changed = defs.map_resolved_asset_specs(
        func=lambda spec: spec.replace_attributes(code_version=f"{RELEASE_DRIFT_CODE_VERSION}+1"),
        selection=[RELEASE_DRIFT],
    )
    daemon.definitions = changed
    assert daemon.publishes()
    published(instance)
    assert not daemon.publishes()
