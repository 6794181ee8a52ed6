"""Releases over time (SPEC §9): sensors, schedules, drift, regression alerts.

The Dagster definitions load on first use, so that ``litmus`` commands which only register
their command-line options (``litmus_dagster.releases.cli``) do not import Dagster.
"""

from typing import Any

__all__ = [
    "release_assets",
    "release_checks",
    "release_jobs",
    "release_resources",
    "release_schedules",
    "release_sensors",
]


def _definitions() -> dict[str, Any]:
    from litmus_dagster.releases.assets import no_significant_regression, release_drift
    from litmus_dagster.releases.jobs import land_and_score_job, publish_job, rescore_job
    from litmus_dagster.releases.resources import AlertSinks, RegressionPolicy
    from litmus_dagster.releases.sensors import landing_sensor, publish_sensor, rescore_schedule

    return {
        "release_assets": [release_drift],
        "release_checks": [no_significant_regression],
        "release_sensors": [landing_sensor, publish_sensor],
        "release_schedules": [rescore_schedule],
        "release_jobs": [land_and_score_job, rescore_job, publish_job],
        "release_resources": {
            "regression_policy": RegressionPolicy(),
            "alert_sinks": AlertSinks(),
        },
    }


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = _definitions()[name]
        globals()[name] = value  # one object per name, like a module attribute
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
