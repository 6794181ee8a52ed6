"""Where LITMUS keeps its state. One environment variable drives everything.

``LITMUS_HOME`` (default: ``.litmus`` in the current directory) holds the landing directory,
the content-addressed raw store, exports, and — unless ``LITMUS_DUCKDB_PATH`` overrides it —
the DuckDB warehouse. The same ``LITMUS_DUCKDB_PATH`` is what the dbt profile reads, so the
Dagster resource and dbt always open the same file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LitmusPaths:
    home: Path
    # The warehouse file when a caller names it (the Dagster resource's ``database``); None:
    # ``LITMUS_DUCKDB_PATH`` when set, else ``<home>/warehouse.duckdb``.
    duckdb_file: Path | None = None

    @property
    def landing(self) -> Path:
        return self.home / "landing"

    @property
    def raw_store(self) -> Path:
        return self.home / "raw"

    @property
    def suites(self) -> Path:
        return self.home / "suites"

    @property
    def exports(self) -> Path:
        return self.home / "exports"

    @property
    def audit(self) -> Path:
        return self.home / "audit"

    @property
    def duckdb_path(self) -> Path:
        if self.duckdb_file is not None:
            return self.duckdb_file
        override = os.environ.get("LITMUS_DUCKDB_PATH")
        return Path(override) if override else self.home / "warehouse.duckdb"

    def ensure(self) -> LitmusPaths:
        for folder in (self.landing, self.raw_store, self.suites, self.exports, self.audit):
            folder.mkdir(parents=True, exist_ok=True)
        self.duckdb_path.parent.mkdir(parents=True, exist_ok=True)
        return self


def litmus_paths(
    home: str | Path | None = None, duckdb_file: str | Path | None = None
) -> LitmusPaths:
    chosen = home or os.environ.get("LITMUS_HOME") or ".litmus"
    return LitmusPaths(Path(chosen).resolve(), Path(duckdb_file).resolve() if duckdb_file else None)
