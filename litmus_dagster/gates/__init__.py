"""Fail-closed publication gates (SPEC §7): GE suites as per-configuration asset checks whose
verdicts every publisher reads before publishing."""

from litmus_dagster.gates.assets import (
    metric_rate_gates,
    publication_gates,
    rates_in_unit_interval,
    trajectory_gate_checks,
)

gate_assets: list = [publication_gates, metric_rate_gates]
gate_checks: list = [*trajectory_gate_checks, rates_in_unit_interval]
