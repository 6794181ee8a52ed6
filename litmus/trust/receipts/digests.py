"""Canonical digests: warehouse values as canonical JSON sees them, and the digests of
leaderboard rows and of the whole board."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from litmus.canonical import canonical_json, sha256_text
from litmus.metrics.leaderboard import Leaderboard
from litmus.warehouse import arrow_rows


def _plain(value: Any) -> Any:
    """A warehouse value as canonical JSON sees it: NaN is a missing value, numpy is Python."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        return _plain(value.item())
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def plain_rows(table: pa.Table) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in table.to_pylist()]


def leaderboard_table_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]] | None:
    """The ``leaderboard`` table as published, in its stored order (None before the first
    publication: the table is empty)."""
    rows = plain_rows(con.sql("SELECT * FROM leaderboard").to_arrow_table())
    return rows or None


def board_rows(board: Leaderboard) -> list[dict[str, Any]]:
    """Leaderboard rows exactly as they are stored (the asset's Arrow conversion)."""
    return plain_rows(arrow_rows(board.rows))


def row_digest(values: Mapping[str, Any]) -> str:
    return sha256_text(canonical_json(dict(values)))


def rows_digest(row_digests: Iterable[tuple[str, str]]) -> str:
    """Digest of the whole leaderboard: its (row name, row digest) pairs in published order."""
    return sha256_text(canonical_json([[name, digest] for name, digest in row_digests]))


def short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "none"
