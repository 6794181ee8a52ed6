"""Releases over time (SPEC §9): sensors, schedules, drift, regression alerts."""

from typing import Any

from litmus_dagster.releases.assets import (
    no_significant_regression,
    plugin_deltas,
    release_drift,
)
from litmus_dagster.releases.jobs import land_and_score_job, publish_job, rescore_job
from litmus_dagster.releases.resources import AlertSinks, RegressionPolicy
from litmus_dagster.releases.sensors import landing_sensor, publish_sensor, rescore_schedule

release_assets: list[Any] = [release_drift, plugin_deltas]
release_checks: list[Any] = [no_significant_regression]
release_sensors: list[Any] = [landing_sensor, publish_sensor]
release_schedules: list[Any] = [rescore_schedule]
release_jobs: list[Any] = [land_and_score_job, rescore_job, publish_job]
release_resources: dict[str, Any] = {
    "regression_policy": RegressionPolicy(),
    "alert_sinks": AlertSinks(),
}

__all__ = [
    "release_assets",
    "release_checks",
    "release_jobs",
    "release_resources",
    "release_schedules",
    "release_sensors",
]
