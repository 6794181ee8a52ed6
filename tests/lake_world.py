"""A new, empty lake for a test: its own catalog database on the test PostgreSQL server and
its own Parquet folder, as the environment that names it (litmus/warehouse_lake.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

from postgres_server import PostgresServer

from litmus.warehouse_lake import LAKE_DATA_PATH_ENV, WAREHOUSE_ENV


def new_lake(postgres: PostgresServer, root: Path) -> dict[str, str]:
    """The environment naming a new, empty lake (its own catalog database and data folder)."""
    name = f"lake_{uuid.uuid4().hex[:10]}"
    postgres.create_database(name)
    return {
        WAREHOUSE_ENV: "ducklake:postgres:" + postgres.libpq(name),
        LAKE_DATA_PATH_ENV: str(root / f"{name}-data"),
    }
