"""Fail-closed publication gates (SPEC §7): GE suites as blocking per-configuration asset checks
whose verdicts every publisher reads before publishing."""

from litmus_dagster.gates.assets import (
    metric_rate_gates,
    publication_gates,
    publishable_configuration,
    rates_in_unit_interval,
)

gate_assets: list = [publication_gates, publishable_configuration, metric_rate_gates]
# (the per-configuration gate checks are publication_gates' own check specs)
gate_checks: list = [rates_in_unit_interval]
