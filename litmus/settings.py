"""Where LITMUS keeps its state. One environment variable drives everything.

``LITMUS_HOME`` (default: ``.litmus`` in the current directory) holds the landing directory,
the content-addressed raw store, exports, and — unless ``LITMUS_DUCKDB_PATH`` overrides it —
the DuckDB warehouse. The same ``LITMUS_DUCKDB_PATH`` is what the dbt profile reads, so the
Dagster resource and dbt always open the same file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

# The run files LITMUS reads, and the names their copies keep in the raw store.
RUN_SUFFIXES = (".jsonl", ".eval", ".json")
_SHA256 = re.compile(r"[0-9a-f]{64}")


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

    def raw_file(self, sha256: str, suffix: str) -> Path:
        """Where the content-addressed raw store keeps a run file with this content; the name
        comes from the hash and the file's kind (``suffix``), never from the input's name."""
        if not _SHA256.fullmatch(sha256) or suffix not in RUN_SUFFIXES:
            raise ValueError(f"not a raw store name: {sha256!r}{suffix!r}")
        return self.raw_store / sha256[:2] / f"{sha256}{suffix}"

    def stored_raw_file(self, sha256: str) -> Path | None:
        """The raw store's file with this content, None when it keeps none (or ``sha256``,
        which may come from an untrusted receipt, is not 64 hex digits)."""
        if not _SHA256.fullmatch(sha256):
            return None
        candidates = (self.raw_file(sha256, suffix) for suffix in RUN_SUFFIXES)
        return next((path for path in candidates if path.is_file()), None)

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
