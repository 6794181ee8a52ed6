"""Metrics: dbt models, bootstrap CIs, leaderboard (merged by ``litmus_dagster.definitions``).

The assets need two resources: ``dbt`` (provided here) and ``warehouse`` (the shared
``LitmusWarehouse``, provided by the definitions module).
"""

from __future__ import annotations

from typing import Any

from litmus_dagster.adapters.dbt import LitmusDbtCli
from litmus_dagster.metrics.assets import (
    DBT_PROJECT,
    dbt_executable,
    leaderboard,
    litmus_dbt_board,
    litmus_dbt_metrics,
    metric_cis,
    public_private_gap_table,
)

metrics_assets: list[Any] = [
    litmus_dbt_metrics,
    metric_cis,
    public_private_gap_table,
    litmus_dbt_board,
    leaderboard,
]
metrics_resources: dict[str, Any] = {
    "dbt": LitmusDbtCli(project_dir=DBT_PROJECT, dbt_executable=dbt_executable())
}

__all__ = [
    "DBT_PROJECT",
    "leaderboard",
    "litmus_dbt_board",
    "litmus_dbt_metrics",
    "metric_cis",
    "metrics_assets",
    "metrics_resources",
]
