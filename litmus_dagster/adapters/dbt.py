"""The adapter for the private parts of dagster-dbt, dbt-core and dbt-duckdb LITMUS uses.

- :class:`LitmusDbtCli` overrides two private methods of dagster-dbt's ``DbtCliResource``;
- :func:`release_dbt_connections` takes dbt-duckdb's class-level connection lock and
  environment;
- dagster-dbt's internal event message and invocation parameters (modules outside its
  documented API) are imported here for the in-process build
  (``litmus_dagster.metrics.dbt_in_process``).

tests/test_adapters.py fails when an upgrade moves any of them.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from dagster_dbt import DbtCliResource
from dagster_dbt.asset_utils import get_updated_cli_invocation_params_for_context
from dagster_dbt.core.dbt_cli_event import DbtCoreCliEventMessage
from packaging import version

__all__ = [
    "DbtCoreCliEventMessage",
    "LitmusDbtCli",
    "get_updated_cli_invocation_params_for_context",
    "release_dbt_connections",
]


class LitmusDbtCli(DbtCliResource):
    """The dbt CLI resource without two start-up costs of every ``dbt build`` that buy this
    project nothing (docs/performance.md, "A new release"):

    - the version probe, a whole ``dbt --version`` subprocess: the executable beside this
      interpreter is the installed dbt-core, whose version the package metadata gives;
    - a dbt adapter opened inside this process, which dagster-dbt only needs to fetch row
      counts or column metadata (never asked for here; without an adapter it skips both).
    """

    @cached_property
    def _cli_version(self) -> version.Version:
        if self.dbt_executable == os.fspath(Path(sys.executable).with_name("dbt")):
            return version.parse(importlib.metadata.version("dbt-core"))
        return super()._cli_version

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> Any:
        return None


def release_dbt_connections() -> None:
    """Close what dbt and dbt-duckdb keep open between invocations in one process: the
    adapters' connections, and the DuckDB database dbt-duckdb holds in class state."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.adapters.factory import reset_adapters

    reset_adapters()
    with DuckDBConnectionManager._LOCK:
        environment = DuckDBConnectionManager._ENV
        if environment is not None:
            environment.close()
        DuckDBConnectionManager.close_all_connections()
