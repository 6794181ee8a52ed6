"""Dagster resources: the one warehouse setting shared with dbt."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
import duckdb

from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect


class LitmusWarehouse(dg.ConfigurableResource):
    """The LITMUS state directory and its DuckDB warehouse.

    ``home`` defaults to ``LITMUS_HOME``; the DuckDB file is ``LITMUS_DUCKDB_PATH`` when set,
    else ``<home>/warehouse.duckdb`` — the same variable the dbt profile reads.
    """

    home: str = ""

    @property
    def paths(self) -> LitmusPaths:
        return litmus_paths(self.home or None).ensure()

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with connect(self.paths.duckdb_path) as con:
            yield con

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the writer lock without opening DuckDB, for a subprocess (dbt) that opens it."""
        from litmus.warehouse import writer_lock

        with writer_lock(self.paths.duckdb_path, timeout_s=900.0):
            yield
