"""The leaderboard's row shape is declared once (litmus/metrics/board_shape.py): the table a
freshly migrated warehouse holds and the board's frame both have exactly that shape."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from litmus.metric_catalogue import catalogue
from litmus.metrics.board_shape import (
    BOARD_COLUMNS,
    LEADERBOARD_COLUMNS,
    PANDAS_DTYPES,
    typed_board_rows,
)
from litmus.warehouse import connect


def test_the_migrated_leaderboard_table_has_the_declared_columns_and_types(
    tmp_path: Path,
) -> None:
    with connect(tmp_path / "warehouse.duckdb") as con:
        stored = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_name = 'leaderboard' "
            "ORDER BY ordinal_position"
        ).fetchall()
    declared = [(column.name, column.duckdb_type) for column in BOARD_COLUMNS]
    assert stored == declared, (
        "the leaderboard table (litmus/sql/schema) and litmus/metrics/board_shape.py differ: "
        "change both, the table through a new numbered migration"
    )


def test_columns_are_named_once_and_metric_columns_carry_the_catalogue_label() -> None:
    assert len(set(LEADERBOARD_COLUMNS)) == len(LEADERBOARD_COLUMNS)
    labels = catalogue().labels
    for column in BOARD_COLUMNS:
        assert column.meaning
        if column.name in labels:
            assert column.meaning == labels[column.name]


def test_typed_rows_take_the_declared_order_and_types() -> None:
    rows = pd.DataFrame(
        {"withheld_reasons": ["gate failed", None], "rank": [1.0, None], "name": ["a", "b"]}
    )
    typed = typed_board_rows(rows)
    assert list(typed.columns) == list(LEADERBOARD_COLUMNS)
    assert {name: str(dtype) for name, dtype in typed.dtypes.items()} == {
        column.name: str(pd.Series(dtype=PANDAS_DTYPES[column.type]).dtype)
        for column in BOARD_COLUMNS
    }
    assert typed["rank"].tolist() == [1, pd.NA]
    assert typed["withheld_reasons"].tolist() == ["gate failed", pd.NA]
