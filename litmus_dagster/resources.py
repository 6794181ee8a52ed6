"""Dagster resources: the warehouse (dagster-duckdb's resource, one setting shared with dbt)
and the refusal judge."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import Field, field_validator

from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import DEFAULT_LOCK_TIMEOUT_S, connect, connect_read_only, exclusive

if TYPE_CHECKING:
    from litmus.labeling.refusal_judge import RefusalJudge


HOME_ENV = "LITMUS_HOME"
DUCKDB_PATH_ENV = "LITMUS_DUCKDB_PATH"  # what dbt_project/profiles.yml reads too


class LitmusWarehouse(DuckDBResource):
    """The LITMUS state directory and its DuckDB warehouse (dagster-duckdb's resource).

    ``database`` is the DuckDB file, empty for ``LITMUS_DUCKDB_PATH`` when set, else
    ``<home>/warehouse.duckdb``; ``home`` is empty for ``LITMUS_HOME``, else ``./.litmus``.
    The code location configures both from the environment (:func:`warehouse_from_environment`),
    and dbt is pointed at the same file through ``LITMUS_DUCKDB_PATH``, so one variable drives
    the resource and the dbt profile.

    Connections are LITMUS's own (:func:`litmus.warehouse.connect`): the writer lock held for
    the connection's life, the schema ensured, LITMUS's DuckDB settings; a read-only one takes
    the shared lock and never creates anything. With ``LITMUS_WAREHOUSE`` naming a lake
    (litmus/warehouse_lake.py, docs/operations.md) the same connections open the lake instead,
    and dbt's profile follows the same variable.
    """

    database: str = Field(
        default="",
        description=(
            "Path to the DuckDB warehouse; empty: LITMUS_DUCKDB_PATH when set, else "
            "<home>/warehouse.duckdb"
        ),
    )
    home: str = Field(
        default="", description="The LITMUS state folder; empty: LITMUS_HOME, else ./.litmus"
    )

    @classmethod
    def _is_dagster_maintained(cls) -> bool:
        return False  # our subclass, not the dagster-duckdb maintainers' resource

    @field_validator("connection_config")
    @classmethod
    def _settings_are_litmus_own(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value:
            raise ValueError(
                "LitmusWarehouse opens DuckDB with LITMUS's own settings "
                "(litmus.warehouse.connect); connection_config is not used, leave it empty "
                f"(given: {sorted(value)})"
            )
        return value

    @property
    def paths(self) -> LitmusPaths:
        """The state folders, created when missing."""
        return self._located().ensure()

    def _located(self) -> LitmusPaths:
        return litmus_paths(self.home or None, self.database or None)

    @property
    def duckdb_path(self) -> Path:
        return self.paths.duckdb_path

    @contextmanager
    def get_connection(
        self, *, read_only: bool = False, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection holding the writer lock (``read_only``: the shared reader lock, on an
        existing warehouse only), waiting at most ``timeout_s`` for another process."""
        if read_only:
            # creates nothing: a read-only home is enough
            with connect_read_only(self._located().duckdb_path, timeout_s=timeout_s) as con:
                yield con
        else:
            with connect(self.duckdb_path, timeout_s=timeout_s) as con:
                yield con

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the warehouse without opening DuckDB, for dbt, which opens it itself (the lake:
        dbt runs alone, one build at a time across every machine)."""
        with exclusive(self.duckdb_path, timeout_s=DEFAULT_LOCK_TIMEOUT_S):
            yield


def warehouse_from_environment() -> LitmusWarehouse:
    """The code location's warehouse, configured with ``dg.EnvVar``: each of ``LITMUS_HOME``
    and ``LITMUS_DUCKDB_PATH`` that is set is read when a run starts (the UI shows where the
    value comes from); one that is not set keeps its LITMUS default."""
    return LitmusWarehouse(
        home=dg.EnvVar(HOME_ENV) if os.environ.get(HOME_ENV) else "",
        database=dg.EnvVar(DUCKDB_PATH_ENV) if os.environ.get(DUCKDB_PATH_ENV) else "",
    )


class RefusalJudgeResource(dg.ConfigurableResource):
    """The LLM refusal judge (litmus/labeling/refusal_judge.py); off unless a model is named.

    ``model`` is any Inspect AI model name (``openai/gpt-4o-mini``, ``ollama/llama3.1`` …);
    empty means ``LITMUS_REFUSAL_JUDGE``, and empty there too means no judge. Verdicts are
    cached under the LITMUS home, so a re-score never calls the judge twice for one text.
    """

    model: str = ""
    max_connections: int = 4
    max_retries: int = 2
    timeout_s: float = 120.0

    def build(
        self, home: Path, progress: Callable[[str], None] | None = None
    ) -> RefusalJudge | None:
        from litmus.labeling.refusal_judge import judge_from_environment

        return judge_from_environment(
            home,
            self.model or None,
            progress,
            max_connections=self.max_connections,
            max_retries=self.max_retries,
            timeout_s=self.timeout_s,
        )
