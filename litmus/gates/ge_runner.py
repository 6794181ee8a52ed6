"""Great Expectations 1.x, wired by hand: declarative suite files validated over a DuckDB frame.

GE is a library here, not a service. One ephemeral context per process. The one production
path is :func:`run_suite_in_warehouse`: GE validates narrow pandas frames DuckDB built from the
suite's frame (tests/gates_reference.py, GE over the whole frame, is the oracle it is proven
against). Each narrow frame gets one pandas data source (never through SQLAlchemy: GE's SQL
path breaks on duckdb-engine), and each validation of it adds the suite exactly as its JSON
file states it; both are removed again afterwards. Every verdict is the one the ``COMPLETE`` result
format gives, so every failing row's key comes back, not a sample.

A suite file is GE's own serialized ``ExpectationSuite`` plus LITMUS metadata:

- ``meta.frame``: the named frame it validates (the SQL that builds it lives in
  ``litmus/gates/publication_gates.py``);
- ``meta.key_column``: the column that names a failing row in reports (``row_key``);
- ``meta.group_column`` (optional): the column that splits failures by configuration when
  one frame holds several (the published-rates frame);
- every expectation's ``meta.gate``: the publication gate the expectation belongs to.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litmus import PROJECT_DIR
from litmus.adapters import keep_project_config_unwritten, skip_batch_fingerprints
from litmus.errors import LitmusError
from litmus.warehouse import quoted_identifier

if TYPE_CHECKING:
    import pandas as pd

# The repository's top-level expectations/ folder (the SPEC's required layout), beside dbt_project/.
EXPECTATIONS_DIR = PROJECT_DIR / "expectations"
_POSITION = "litmus_position"


class ExpectationSuiteFileError(LitmusError):
    def __init__(self, source: Path, field: str, reason: str) -> None:
        self.source, self.field, self.reason = source, field, reason
        super().__init__(f"{source}: {field}: {reason}")


@dataclass(frozen=True)
class SuiteDocument:
    """One declarative suite file, validated for the metadata LITMUS relies on."""

    path: Path
    name: str
    frame: str
    key_column: str
    group_column: str | None
    body: Mapping[str, Any]  # the GE suite exactly as written

    @property
    def gates(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e["meta"]["gate"] for e in self.body["expectations"]))

    def expectations_for(self, gate: str) -> list[Mapping[str, Any]]:
        return [e for e in self.body["expectations"] if e["meta"]["gate"] == gate]


@dataclass(frozen=True)
class FailingRow:
    key: str
    group: str | None


@dataclass(frozen=True)
class ExpectationOutcome:
    """One expectation's verdict over the frame.

    ``failing_rows`` lists every row the expectation rejected (row-level expectations);
    table-level ones (row counts, distinct counts) report ``observed_value`` instead. An
    expectation that could not be evaluated (a missing column, a bad condition) fails, with
    ``error`` saying why: a gate that cannot run does not pass.
    """

    gate: str
    expectation_type: str
    success: bool
    failing_rows: tuple[FailingRow, ...]
    observed_value: Any
    error: str | None

    def describe(self) -> str:
        if self.error:
            return f"{self.expectation_type}: could not be evaluated: {self.error}"
        if self.failing_rows:
            return f"{self.expectation_type}: {len(self.failing_rows)} failing row(s)"
        return f"{self.expectation_type}: observed {self.observed_value!r}"


def load_suite_document(path: Path) -> SuiteDocument:
    """Read and check one suite file; errors name the file and the offending field."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExpectationSuiteFileError(path, "<file>", "no such expectation suite") from None
    except json.JSONDecodeError as exc:
        raise ExpectationSuiteFileError(
            path, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}"
        ) from None
    if not isinstance(body, dict):
        raise ExpectationSuiteFileError(path, "<root>", "must be a JSON object")
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise ExpectationSuiteFileError(path, "name", "must be a non-empty string")
    meta = body.get("meta")
    if not isinstance(meta, dict):
        raise ExpectationSuiteFileError(path, "meta", "must be an object naming frame and key")
    for field in ("frame", "key_column"):
        if not isinstance(meta.get(field), str) or not meta[field]:
            raise ExpectationSuiteFileError(path, f"meta.{field}", "must be a non-empty string")
    group_column = meta.get("group_column")
    if group_column is not None and not isinstance(group_column, str):
        raise ExpectationSuiteFileError(path, "meta.group_column", "must be a string")
    expectations = body.get("expectations")
    if not isinstance(expectations, list) or not expectations:
        raise ExpectationSuiteFileError(path, "expectations", "must be a non-empty list")
    for index, expectation in enumerate(expectations):
        where = f"expectations[{index}]"
        if not isinstance(expectation, dict):
            raise ExpectationSuiteFileError(path, where, "must be an object")
        if not isinstance(expectation.get("type"), str):
            raise ExpectationSuiteFileError(path, f"{where}.type", "must be a string")
        if not isinstance(expectation.get("kwargs"), dict):
            raise ExpectationSuiteFileError(path, f"{where}.kwargs", "must be an object")
        gate = (expectation.get("meta") or {}).get("gate")
        if not isinstance(gate, str) or not gate:
            raise ExpectationSuiteFileError(
                path, f"{where}.meta.gate", "every expectation must name its publication gate"
            )
    return SuiteDocument(
        path=path,
        name=name,
        frame=meta["frame"],
        key_column=meta["key_column"],
        group_column=group_column,
        body=body,
    )


def _great_expectations() -> Any:
    """Import GE quietly: no usage statistics, no progress bars, no INFO chatter."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    skip_batch_fingerprints()
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    return gx


def _error_message(exception_info: Mapping[str, Any] | None) -> str | None:
    """GE reports a raised metric either flat or keyed by metric id; return its message."""
    if not exception_info:
        return None
    if "raised_exception" in exception_info:
        if exception_info.get("raised_exception"):
            return str(exception_info.get("exception_message") or "raised an exception")
        return None
    for info in exception_info.values():
        if isinstance(info, Mapping) and info.get("raised_exception"):
            return str(info.get("exception_message") or "raised an exception")
    return None


def index_columns(document: SuiteDocument) -> list[str]:
    """The columns that name a failing row: the key, and the group column when there is one."""
    return [document.key_column, *([document.group_column] if document.group_column else [])]


def check_frame_columns(document: SuiteDocument, columns: Sequence[str]) -> None:
    """The frame has the suite's key and group columns, or the suite file is named."""
    for column in index_columns(document):
        if column not in columns:
            raise ExpectationSuiteFileError(
                document.path, "meta", f"frame {document.frame!r} has no column {column!r}"
            )


@dataclass(frozen=True)
class _Verdict:
    """What GE said about one expectation: the raw index rows of its unexpected rows."""

    expectation_type: str
    success: bool
    unexpected_index_rows: tuple[Mapping[str, Any], ...]
    observed_value: Any
    error: str | None


# One ephemeral GE context per process, made on first use: building one (its stores, its
# config, its data source registry) cost ~25 ms CPU per validation, and a gating step
# validates five frames per configuration. Each frame still gets its own pandas data source,
# made before its validations and deleted after them: a data source keeps its execution
# engine and that engine's metric cache, keyed by batch ids that are the same for every
# whole-frame batch of one asset, so a data source shared between two frames could answer
# from the first frame's metrics (within one frame, the second pass may reuse the first's).
# The lock keeps two threads from registering the data source name at once.
_context: Any = None
_context_lock = threading.Lock()
_DATA_SOURCE = "litmus_warehouse"


def _ge_context(gx: Any) -> Any:
    global _context
    if _context is None:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        keep_project_config_unwritten(context)
        _context = context
    return _context


def validate_frame(
    document: SuiteDocument,
    positions: Sequence[int],
    frame: pd.DataFrame,
    row_keys: Sequence[str],
) -> dict[int, _Verdict]:
    """GE validates the expectations at ``positions`` of the suite over ``frame``.

    Two passes, both GE's, over one data source: a quick one that only says which
    expectations hold (GE's ``BOOLEAN_ONLY`` result skips the metrics that list unexpected
    rows and values, about 40 % of a gating step's CPU on small frames), over the
    expectations such a verdict can settle (:func:`_quick_verdict_can_settle`); then the
    ``COMPLETE`` result for every other one and every one the quick pass did not settle.
    Each expectation's verdict is therefore the one a single ``COMPLETE`` pass gives."""
    gx = _great_expectations()
    quick_positions = [p for p in positions if _quick_verdict_can_settle(document, p)]
    complete = {
        "result_format": "COMPLETE",
        "unexpected_index_column_names": list(row_keys),
        "return_unexpected_index_query": False,
    }
    with _context_lock:
        context = _ge_context(gx)
        batch = (
            context.data_sources.add_pandas(_DATA_SOURCE)
            .add_dataframe_asset(document.frame)
            .add_batch_definition_whole_dataframe("whole_frame")
        )
        try:
            quick = (
                _run_validation(
                    gx,
                    context,
                    batch,
                    document,
                    quick_positions,
                    frame,
                    {"result_format": "BOOLEAN_ONLY"},
                )
                if quick_positions
                else {}
            )
            again = [p for p in positions if _needs_complete_result(document, p, quick.get(p))]
            if not again:
                return quick
            return {
                **quick,
                **_run_validation(gx, context, batch, document, again, frame, complete),
            }
        finally:
            context.data_sources.delete(_DATA_SOURCE)


def _quick_verdict_can_settle(document: SuiteDocument, position: int) -> bool:
    """Whether "it holds" is the whole verdict: for a row-map expectation (each row holds or
    not) without a ``mostly`` allowance, a pass has no unexpected row to list and reports no
    observed value. Anything else (a ``mostly`` pass lists its rows, a table- or
    aggregate-level expectation reports its observed value) needs the complete result."""
    expectation = document.body["expectations"][position]
    return "mostly" not in expectation.get("kwargs", {}) and _is_row_map_expectation(
        expectation["type"]
    )


def _needs_complete_result(
    document: SuiteDocument, position: int, verdict: _Verdict | None
) -> bool:
    """Whether the complete result is needed after the quick pass: for an expectation a quick
    verdict cannot settle, and for one it did not (a failure or error needs its failing rows
    and message; a missing result is asked again)."""
    if verdict is None or not verdict.success or verdict.error is not None:
        return True
    return not _quick_verdict_can_settle(document, position)


@functools.cache
def _is_row_map_expectation(expectation_type: str) -> bool:
    _great_expectations()
    from great_expectations.expectations.expectation import (
        ColumnMapExpectation,
        ColumnPairMapExpectation,
        MulticolumnMapExpectation,
    )
    from great_expectations.expectations.registry import get_expectation_impl

    return issubclass(
        get_expectation_impl(expectation_type),
        (ColumnMapExpectation, ColumnPairMapExpectation, MulticolumnMapExpectation),
    )


def _run_validation(
    gx: Any,
    context: Any,
    batch: Any,
    document: SuiteDocument,
    positions: Sequence[int],
    frame: pd.DataFrame,
    result_format: Mapping[str, Any],
) -> dict[int, _Verdict]:
    """One GE validation of the expectations at ``positions`` over ``frame``, through the
    batch definition of the data source :func:`validate_frame` registered for it."""
    from great_expectations.validator.v1_validator import Validator

    # GE returns results in its own order and normalizes kwargs, so each expectation carries
    # its position in the file through meta.
    body = copy.deepcopy(dict(document.body))
    body["expectations"] = [
        {
            **body["expectations"][position],
            "meta": {**body["expectations"][position]["meta"], _POSITION: position},
        }
        for position in positions
    ]
    # Added to the context as before: GE hands back the suite as its store serialized it
    # (normalized kwargs), and that is the suite validated.
    suite = context.suites.add(gx.ExpectationSuite(**body))
    try:
        # The validator ``ValidationDefinition.run`` builds and runs; that method then only
        # stores the result in the context's validation results store, which nothing here
        # reads (the result is the same object).
        result = Validator(
            batch_definition=batch,
            batch_parameters={"dataframe": frame},
            result_format=dict(result_format),
        ).validate_expectation_suite(suite)
    finally:
        context.suites.delete(suite.name)
    return verdicts_of_result(result, positions)


def verdicts_of_result(result: Any, positions: Sequence[int]) -> dict[int, _Verdict]:
    """Each validated expectation's verdict, by its position in the suite file (carried in
    its meta, since GE returns results in its own order)."""
    verdicts: dict[int, _Verdict] = {}
    for expectation_result in result.results:
        config = expectation_result.expectation_config
        position = int((config.meta or {}).get(_POSITION, -1))
        if position not in positions:
            continue
        details = expectation_result.result or {}
        verdicts[position] = _Verdict(
            expectation_type=config.type,
            success=bool(expectation_result.success),
            unexpected_index_rows=tuple(details.get("unexpected_index_list") or ()),
            observed_value=_plain(details.get("observed_value")),
            error=_error_message(expectation_result.exception_info),
        )
    return verdicts


def failing_rows_of(
    document: SuiteDocument, verdicts: Mapping[int, _Verdict], position: int
) -> tuple[FailingRow, ...]:
    verdict = verdicts.get(position)
    if verdict is None:
        return ()
    return tuple(
        FailingRow(
            key=str(row.get(document.key_column)),
            group=str(row.get(document.group_column)) if document.group_column else None,
        )
        for row in verdict.unexpected_index_rows
    )


def outcome_of(
    document: SuiteDocument,
    position: int,
    verdict: _Verdict | None,
    failing_rows: tuple[FailingRow, ...],
) -> ExpectationOutcome:
    expectation = document.body["expectations"][position]
    if verdict is None:  # GE dropped it: count it as failed, never as passed.
        return ExpectationOutcome(
            gate=expectation["meta"]["gate"],
            expectation_type=expectation["type"],
            success=False,
            failing_rows=(),
            observed_value=None,
            error="Great Expectations returned no result for this expectation",
        )
    return ExpectationOutcome(
        gate=expectation["meta"]["gate"],
        expectation_type=verdict.expectation_type,
        success=verdict.success,
        failing_rows=failing_rows,
        observed_value=verdict.observed_value,
        error=verdict.error,
    )


# --------------------------------------------------------------------------- warehouse speed
#
# GE's pandas engine evaluates some row expectations row by row in Python (column pairs go
# through ``iterrows``), which costs minutes per million rows. The verdict of a row-wise
# ("map") expectation depends only on the values of the columns it reads, so GE can judge
# each distinct combination of those values once: DuckDB collapses the frame to its distinct
# tuples over the referenced columns (row conditions included, which GE still evaluates), GE
# validates that small frame, and DuckDB maps every rejected tuple back to the rows that carry
# it. Expectations whose verdict depends on how many rows there are (row counts, uniqueness,
# ``mostly``) see every row, but only the columns they read. GE decides every verdict.

# Row-wise expectations: each row's verdict is a function of that row's values alone.
_ROW_WISE = frozenset(
    {
        "expect_column_values_to_be_in_set",
        "expect_column_values_to_not_be_in_set",
        "expect_column_values_to_be_null",
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_between",
        "expect_column_values_to_match_regex",
        "expect_column_values_to_not_match_regex",
        "expect_column_values_to_match_regex_list",
        "expect_column_values_to_not_match_regex_list",
        "expect_column_value_lengths_to_be_between",
        "expect_column_value_lengths_to_equal",
        "expect_column_pair_values_to_be_equal",
        "expect_column_pair_values_to_be_in_set",
        "expect_column_pair_values_a_to_be_greater_than_b",
    }
)
# Aggregates that depend only on the set of distinct values, not on how often each occurs.
_DISTINCT_INVARIANT = frozenset(
    {
        "expect_column_unique_value_count_to_be_between",
        "expect_column_distinct_values_to_be_in_set",
        "expect_column_distinct_values_to_contain_set",
        "expect_column_distinct_values_to_equal_set",
        "expect_column_min_to_be_between",
        "expect_column_max_to_be_between",
    }
)
# Expectations whose columns we can name (any other type sees every column of the frame).
_ROW_COUNTED = frozenset(
    {
        "expect_table_row_count_to_be_between",
        "expect_table_row_count_to_equal",
        "expect_column_values_to_be_unique",
        "expect_compound_columns_to_be_unique",
        "expect_select_column_values_to_be_unique_within_record",
        "expect_multicolumn_sum_to_equal",
    }
)
_COLUMN_KWARGS = ("column", "column_A", "column_B")
_COLUMN_LIST_KWARGS = ("column_list",)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TUPLE_ID = "litmus_tuple_id"
_TUPLES = "litmus_gate_tuples"  # a temp table: private to the connection


def _referenced_columns(expectation: Mapping[str, Any], available: Sequence[str]) -> list[str]:
    """The frame columns an expectation reads: its column arguments and every column name
    its row condition mentions (over-inclusion only costs compression, never correctness).
    A named column the frame lacks is passed on by name, so GE reports it missing."""
    kwargs = expectation["kwargs"]
    named: list[str] = []
    for name in _COLUMN_KWARGS:
        if isinstance(kwargs.get(name), str):
            named.append(kwargs[name])
    for name in _COLUMN_LIST_KWARGS:
        if isinstance(kwargs.get(name), list):
            named.extend(str(column) for column in kwargs[name])
    condition = kwargs.get("row_condition")
    if isinstance(condition, str):
        words = set(_WORD.findall(condition))
        named.extend(column for column in available if column in words)
    return list(dict.fromkeys(named))


def _compressible(expectation: Mapping[str, Any]) -> bool:
    kwargs = expectation["kwargs"]
    if "mostly" in kwargs and kwargs["mostly"] not in (None, 1, 1.0):
        return False  # a fraction of rows: needs every row
    return expectation["type"] in _ROW_WISE | _DISTINCT_INVARIANT


def run_suite_in_warehouse(
    document: SuiteDocument, con: Any, relation: str
) -> list[ExpectationOutcome]:
    """Validate the DuckDB table or view ``relation`` (the suite's whole frame) against the
    suite; one outcome per expectation, in file order. GE validates narrow frames DuckDB built
    from it, with the outcomes and failing keys GE gives over the whole frame.

    ``relation`` must be a trusted identifier (a temp table the caller created).
    """
    source = quoted_identifier(relation)
    available = [row[0] for row in con.execute(f"DESCRIBE {source}").fetchall()]
    check_frame_columns(document, available)
    for reserved in (_TUPLE_ID, _ROW_ID):
        if reserved in available:
            raise ExpectationSuiteFileError(
                document.path, "meta", f"frame {document.frame!r} uses reserved column {reserved!r}"
            )
    expectations = document.body["expectations"]
    compressed = [p for p, e in enumerate(expectations) if _compressible(e)]
    counted = [p for p in range(len(expectations)) if p not in compressed]
    verdicts: dict[int, _Verdict] = {}
    failing: dict[int, tuple[FailingRow, ...]] = {}

    if counted:
        _validate_counted(document, con, source, available, counted, verdicts, failing)
    if compressed:
        _validate_compressed(document, con, source, available, compressed, verdicts, failing)

    return [
        outcome_of(document, position, verdicts.get(position), failing.get(position, ()))
        for position in range(len(expectations))
    ]


def _validate_counted(
    document: SuiteDocument,
    con: Any,
    source: str,
    available: list[str],
    counted: list[int],
    verdicts: dict[int, _Verdict],
    failing: dict[int, tuple[FailingRow, ...]],
) -> None:
    """Expectations that need every row: GE over the columns they read (all when one needs
    the whole row), each row named by its id, which DuckDB maps back to the row's key. Where
    an expectation only counts rows or compares a column's values for equality, GE reads
    each value as its rank among the column's distinct values: a configuration of a million
    rows is then tens of megabytes of integers in pandas (outside DuckDB's memory limit)
    instead of its strings, for the same verdicts, counts and failing rows."""
    expectations = document.body["expectations"]
    encoded = [p for p in counted if _equality_counted(expectations[p])]
    plain = [p for p in counted if p not in encoded]
    for positions, encode in ((encoded, True), (plain, False)):
        if positions:
            _validate_by_row_id(document, con, source, available, positions, encode, verdicts)
    for position in counted:
        failing[position] = failing_rows_of(document, verdicts, position)


# Counted expectations whose verdict depends only on how many rows there are and on which
# values of one column equal each other: a value's dense rank among its column's distinct
# values (NULL kept NULL) gives GE the same verdict, counts and failing rows as the value.
_EQUALITY_COUNTED = frozenset(
    {
        "expect_table_row_count_to_be_between",
        "expect_table_row_count_to_equal",
        "expect_column_values_to_be_unique",
        "expect_compound_columns_to_be_unique",
    }
)
_ROW_ID = "litmus_row_id"


def _equality_counted(expectation: Mapping[str, Any]) -> bool:
    # a row condition compares values with literals: it needs the values themselves
    return expectation["type"] in _EQUALITY_COUNTED and not expectation["kwargs"].get(
        "row_condition"
    )


def _validate_by_row_id(
    document: SuiteDocument,
    con: Any,
    source: str,
    available: list[str],
    positions: list[int],
    encode: bool,
    verdicts: dict[int, _Verdict],
) -> None:
    expectations = document.body["expectations"]
    if encode or all(expectations[p]["type"] in _ROW_COUNTED for p in positions):
        columns: list[str] = []
        for position in positions:
            columns.extend(_referenced_columns(expectations[position], available))
        # a column the frame lacks is left out, so GE reports it missing as it would
        columns = [c for c in dict.fromkeys(columns) if c in available]
    else:
        columns = available
    values = "".join(
        f", CASE WHEN {name} IS NULL THEN NULL ELSE dense_rank() OVER "
        f"(PARTITION BY {name} IS NULL ORDER BY {name}) END AS {name}"
        if encode
        else f", {name}"
        for name in map(quoted_identifier, columns)
    )
    frame = _arrow_backed(
        con.sql(f"SELECT rowid AS {_ROW_ID}{values} FROM {source}").to_arrow_table()
    )
    by_row_id = validate_frame(document, positions, frame, [_ROW_ID])
    del frame
    ids = sorted({int(row[_ROW_ID]) for v in by_row_id.values() for row in v.unexpected_index_rows})
    key_columns = index_columns(document)
    names = ", ".join(quoted_identifier(c) for c in key_columns)
    keys = {
        int(row[0]): dict(zip(key_columns, row[1:], strict=True))
        for row in con.execute(
            f"SELECT rowid, {names} FROM {source} WHERE list_contains(?, rowid)", [ids]
        ).fetchall()
    }
    for position, verdict in by_row_id.items():
        verdicts[position] = dataclasses.replace(
            verdict,
            unexpected_index_rows=tuple(
                keys[int(row[_ROW_ID])] for row in verdict.unexpected_index_rows
            ),
        )


def _arrow_backed(table: Any) -> pd.DataFrame:
    """``table`` as a DataFrame whose text columns stay in Arrow buffers (pandas' pyarrow
    string dtype) instead of one Python ``str`` per value: a configuration's frame of a
    million rows then takes a fraction of the memory, outside DuckDB's limit."""
    import pandas as pd
    import pyarrow as pa

    strings = pd.StringDtype("pyarrow")
    return table.to_pandas(types_mapper={pa.string(): strings, pa.large_string(): strings}.get)


def _validate_compressed(
    document: SuiteDocument,
    con: Any,
    source: str,
    available: list[str],
    compressed: list[int],
    verdicts: dict[int, _Verdict],
    failing: dict[int, tuple[FailingRow, ...]],
) -> None:
    """Row-wise and distinct-invariant expectations: GE over the distinct tuples of the
    columns they read, with the failing tuples mapped back to the rows' keys."""
    expectations = document.body["expectations"]
    keys_of_rows = index_columns(document)
    columns = []
    for position in compressed:
        columns.extend(_referenced_columns(expectations[position], available))
    columns = [c for c in dict.fromkeys(columns) if c in available]
    selected = ", ".join(quoted_identifier(c) for c in columns)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {_TUPLES} AS SELECT *, "
        f"(row_number() OVER () - 1)::BIGINT AS {_TUPLE_ID} "
        f"FROM (SELECT DISTINCT {selected} FROM {source})"
        if columns
        else f"CREATE OR REPLACE TEMP TABLE {_TUPLES} AS SELECT 0::BIGINT AS {_TUPLE_ID} "
        f"FROM {source} LIMIT 1"
    )
    try:
        frame = con.execute(f"SELECT * FROM {_TUPLES}").df()
        tuple_verdicts = validate_frame(document, compressed, frame, [_TUPLE_ID])
        verdicts.update(tuple_verdicts)
        join = (
            " AND ".join(
                f"r.{quoted_identifier(c)} IS NOT DISTINCT FROM t.{quoted_identifier(c)}"
                for c in columns
            )
            or "true"
        )
        keys = ", ".join(f"r.{quoted_identifier(c)}" for c in keys_of_rows)
        for position in compressed:
            verdict = tuple_verdicts.get(position)
            ids = sorted(
                {int(row[_TUPLE_ID]) for row in (verdict.unexpected_index_rows if verdict else ())}
            )
            if not ids:
                failing[position] = ()
                continue
            rows = con.execute(
                f"SELECT {keys} FROM {source} r JOIN {_TUPLES} t ON {join} "
                f"WHERE list_contains(?, t.{_TUPLE_ID})",
                [ids],
            ).fetchall()
            failing[position] = tuple(
                FailingRow(
                    key=str(row[0]),
                    group=str(row[1]) if document.group_column else None,
                )
                for row in rows
            )
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_TUPLES}")


def _plain(value: Any) -> Any:
    """numpy scalars → Python values, so outcomes serialize as JSON metadata."""
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def failing_keys(outcomes: Sequence[ExpectationOutcome]) -> list[str]:
    """Distinct failing row keys across outcomes, in a stable order."""
    return sorted({row.key for outcome in outcomes for row in outcome.failing_rows})
