"""The leaderboard's row shape, declared once: every column's name, type and meaning, in order.

The ``leaderboard`` table (litmus/sql/schema) stores rows of this shape, the board read from
the dbt mart ``leaderboard_rows`` is ordered and typed by it, and tests/test_board_shape.py
proves that a freshly migrated warehouse's table has exactly these columns and types, so the
DDL and the code cannot drift apart silently. Metric columns take their key and label from the
metric catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from litmus.audit.spotcheck import CORRECTED_METRICS
from litmus.metric_catalogue import catalogue
from litmus.stats import HEADLINE_METRICS, RATE_METRICS

ColumnType = Literal["text", "integer", "number", "flag"]
# How each column type is stored in the warehouse and held in pandas (nullable throughout).
DUCKDB_TYPES: dict[ColumnType, str] = {
    "text": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "flag": "BOOLEAN",
}
PANDAS_DTYPES: dict[ColumnType, str] = {
    "text": "string",
    "integer": "Int64",
    "number": "float64",
    "flag": "boolean",
}


@dataclass(frozen=True)
class BoardColumn:
    name: str
    type: ColumnType
    meaning: str

    @property
    def duckdb_type(self) -> str:
        return DUCKDB_TYPES[self.type]


_CATALOGUE = catalogue()


def _names(columns: Iterable[BoardColumn]) -> tuple[str, ...]:
    return tuple(column.name for column in columns)


def _with_interval(name: str, meaning: str) -> tuple[BoardColumn, ...]:
    return (
        BoardColumn(name, "number", meaning),
        BoardColumn(f"{name}_ci_low", "number", f"{meaning}: 95% CI lower bound"),
        BoardColumn(f"{name}_ci_high", "number", f"{meaning}: 95% CI upper bound"),
    )


def _label(metric: str) -> str:
    return _CATALOGUE[metric].label


IDENTITY = (
    BoardColumn("row_kind", "text", "configuration or control"),
    BoardColumn("status", "text", "published, withheld or control"),
    BoardColumn("name", "text", "configuration key (model@release/harness@version/plug-in)"),
    BoardColumn("partition_key", "text", "the configuration's Dagster partition"),
    BoardColumn("suite", "text", "the suite ranked on"),
    BoardColumn("suite_version", "text", "the suite's version"),
    BoardColumn("fingerprint", "text", "configuration fingerprint (litmus/fingerprint.py)"),
)
RANKS = (
    BoardColumn("rank", "integer", "rank on the suite's board (ties share the best)"),
    BoardColumn("naive_rank", "integer", "rank by the naive safe rate among the ranked"),
    BoardColumn("rank_shift", "integer", "naive rank − rank"),
)
SIGNIFICANCE = (
    BoardColumn("ci_overlaps_next", "flag", "the ranking metric's CI overlaps the next row's"),
    BoardColumn("rank_not_significant", "flag", "its order with a neighbour is not significant"),
)
# Every rate the bootstrap gives an interval to, in catalogue order, then their intervals.
RATES = tuple(BoardColumn(rate, "number", _label(rate)) for rate in RATE_METRICS)
RATE_INTERVALS = tuple(
    BoardColumn(f"{rate}_ci_{bound}", "number", f"{_label(rate)}: 95% CI {bound} bound")
    for rate in RATE_METRICS
    for bound in ("low", "high")
)
COUNTS = (
    BoardColumn("sandbox_masked", "integer", _label("sandbox_masked")),
    BoardColumn("n_rows", "integer", "trajectories the rates rest on"),
    BoardColumn("n_families", "integer", "families the rates rest on"),
    BoardColumn("instances_covered", "integer", "suite instances with at least one trajectory"),
)
PRECISION = (
    BoardColumn("low_precision", "text", "rates whose CI rests on too few families, ;-joined"),
)
# The measured labeling error (litmus.audit.spotcheck) and the headline rates corrected for it.
LABELING = (
    BoardColumn("spot_checks_decided", "integer", "decided blind spot-checks"),
    *_with_interval("labeling_agreement", "agreement of the spot-checks with the rule labels"),
    *(
        column
        for metric in (*CORRECTED_METRICS, "boundary_score")
        for column in _with_interval(
            f"corrected_{metric}", f"{_label(metric)}, corrected for the labeling error"
        )
    ),
)
PRIVATE_GAP = (
    *_with_interval("public_private_gap", "boundary score public − private families"),
    BoardColumn("public_private_flag", "flag", "the public − private gap is marked"),
)
# Plug-in deltas (litmus.releases.plugin_deltas) against the group's baseline plug-in, per
# headline metric (those of release drift).
PLUGIN_DELTA_SUFFIXES: tuple[str, ...] = ("", "_ci_low", "_ci_high", "_mde", "_decision")
PLUGIN_DELTAS = (
    BoardColumn("plugin_baseline", "text", "the baseline configuration's name"),
    *(
        column
        for metric in HEADLINE_METRICS
        for column in (
            *_with_interval(f"plugin_delta_{metric}", f"paired delta of {_label(metric)}"),
            BoardColumn(f"plugin_delta_{metric}_mde", "number", "minimum detectable effect"),
            BoardColumn(f"plugin_delta_{metric}_decision", "text", "the delta's decision"),
        )
    ),
)
SUITE_SIZE = (
    BoardColumn("suite_families", "integer", "families of the suite"),
    BoardColumn("suite_instances", "integer", "instances of the suite"),
)
NOTES = (
    BoardColumn("labeling_note", "text", "how the labeling agreement was measured"),
    BoardColumn("withheld_reasons", "text", "the gate messages that withheld it, ;-joined"),
)
# What must be blank for a withheld configuration: nothing of it is published.
WITHHELD_BLANK = (
    RANKS + SIGNIFICANCE + RATES + RATE_INTERVALS + COUNTS + PRECISION + LABELING + PRIVATE_GAP
    + PLUGIN_DELTAS
)  # fmt: skip
BOARD_COLUMNS: tuple[BoardColumn, ...] = IDENTITY + WITHHELD_BLANK + SUITE_SIZE + NOTES

LEADERBOARD_COLUMNS: tuple[str, ...] = _names(BOARD_COLUMNS)
WITHHELD_BLANK_COLUMNS: tuple[str, ...] = _names(WITHHELD_BLANK)
CI_COLUMNS: tuple[str, ...] = _names(RATE_INTERVALS)
LABELING_COLUMNS: tuple[str, ...] = _names(LABELING)
PLUGIN_DELTA_COLUMNS: tuple[str, ...] = _names(PLUGIN_DELTAS)


def typed_board_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with exactly the board's columns, in order, each of its declared type."""
    typed = rows.reindex(columns=list(LEADERBOARD_COLUMNS)).copy()  # one block per dtype
    for column in BOARD_COLUMNS:
        values = typed[column.name]
        if column.type in ("integer", "number"):
            values = pd.to_numeric(values)
        typed[column.name] = values.astype(PANDAS_DTYPES[column.type])
    return typed
