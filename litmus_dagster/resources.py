"""Dagster resources: the one warehouse setting shared with dbt."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import duckdb

from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect

if TYPE_CHECKING:
    from litmus.refusal_judge import RefusalJudge


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


class RefusalJudgeResource(dg.ConfigurableResource):
    """The LLM refusal judge (litmus/refusal_judge.py); off unless a model is named.

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
        from litmus.refusal_judge import judge_from_environment

        return judge_from_environment(
            home,
            self.model or None,
            progress,
            max_connections=self.max_connections,
            max_retries=self.max_retries,
            timeout_s=self.timeout_s,
        )
