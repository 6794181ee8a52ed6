"""Releases over time (SPEC §9): sensors, schedules, drift, regression alerts.

The definitions are resolved on first use (PEP 562): ``litmus_dagster.releases.cli`` is
imported to build the ``litmus`` parser, which must not load Dagster and dbt.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    from litmus_dagster.releases.assets import (
        no_significant_regression,
        plugin_deltas,
        release_drift,
    )
    from litmus_dagster.releases.resources import AlertSinks, RegressionPolicy
    from litmus_dagster.releases.sensors import (
        landing_sensor,
        publish_automation,
        rescore_schedule,
    )

    definitions: dict[str, Any] = {
        "release_assets": [release_drift, plugin_deltas],
        "release_checks": [no_significant_regression],
        "release_sensors": [landing_sensor, publish_automation],
        "release_schedules": [rescore_schedule],
        "release_resources": {
            "regression_policy": RegressionPolicy(),
            "alert_sinks": AlertSinks(),
        },
    }
    if name not in definitions:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals().update(definitions)  # built once: every later access is a plain attribute
    return definitions[name]


__all__ = [
    "release_assets",
    "release_checks",
    "release_resources",
    "release_schedules",
    "release_sensors",
]
