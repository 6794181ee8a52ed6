"""dbt-duckdb plugin of the ``lake`` target (dbt_project/profiles.yml): attaches the lake that
``LITMUS_WAREHOUSE`` names, its extensions loaded from the installed wheels (dbt-duckdb's own
``extensions`` setting would download them), before dbt-duckdb runs the profile's
``ATTACH IF NOT EXISTS`` of the same alias."""

from __future__ import annotations

from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin

from litmus.warehouse_lake import LakeSettingError, attach_lake, lake_from_environment


class Plugin(BasePlugin):
    def configure_connection(self, conn: Any) -> None:
        lake = lake_from_environment()
        if lake is None:
            raise LakeSettingError(
                "dbt's `lake` target needs LITMUS_WAREHOUSE to name a lake "
                "(ducklake:postgres:…) and LITMUS_LAKE_DATA_PATH"
            )
        attach_lake(conn, lake)
