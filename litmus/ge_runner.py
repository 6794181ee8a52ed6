"""Great Expectations 1.x, wired by hand: declarative suite files validated over a pandas frame.

GE is a library here, not a service. Each run builds an ephemeral context with one pandas
data source over a frame LITMUS read from DuckDB (never through SQLAlchemy: GE's SQL path
breaks on duckdb-engine), adds the suite exactly as its JSON file states it, and validates
with the ``COMPLETE`` result format so every failing row's key comes back, not a sample.

A suite file is GE's own serialized ``ExpectationSuite`` plus LITMUS metadata:

- ``meta.frame``: the named frame it validates (the SQL that builds it lives in
  ``litmus/gates.py``);
- ``meta.key_column``: the column that names a failing row in reports (``row_key``);
- ``meta.group_column`` (optional): the column that splits failures by configuration when
  one frame holds several (the published-rates frame);
- every expectation's ``meta.gate``: the publication gate the expectation belongs to.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from litmus.errors import LitmusError

# The repository's top-level expectations/ folder (the SPEC's required layout), beside dbt_project/.
EXPECTATIONS_DIR = Path(__file__).resolve().parents[1] / "expectations"
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


def run_suite(document: SuiteDocument, frame: pd.DataFrame) -> list[ExpectationOutcome]:
    """Validate ``frame`` against the suite; one outcome per expectation, in file order."""
    gx = _great_expectations()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    for column in (document.key_column, document.group_column):
        if column is not None and column not in frame.columns:
            raise ExpectationSuiteFileError(
                document.path, "meta", f"frame {document.frame!r} has no column {column!r}"
            )
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (
        context.data_sources.add_pandas("litmus_warehouse")
        .add_dataframe_asset(document.frame)
        .add_batch_definition_whole_dataframe("whole_frame")
    )
    # GE returns results in its own order and normalizes kwargs, so each expectation carries
    # its position in the file through meta.
    body = copy.deepcopy(dict(document.body))
    for position, expectation in enumerate(body["expectations"]):
        expectation["meta"] = {**expectation["meta"], _POSITION: position}
    suite = context.suites.add(gx.ExpectationSuite(**body))
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(data=batch, suite=suite, name=document.name)
    )
    index_columns = [document.key_column]
    if document.group_column:
        index_columns.append(document.group_column)
    result = validation.run(
        batch_parameters={"dataframe": frame},
        result_format={
            "result_format": "COMPLETE",
            "unexpected_index_column_names": index_columns,
            "return_unexpected_index_query": False,
        },
    )
    outcomes: dict[int, ExpectationOutcome] = {}
    for expectation_result in result.results:
        config = expectation_result.expectation_config
        position = int((config.meta or {}).get(_POSITION, -1))
        if position not in range(len(body["expectations"])):
            continue
        details = expectation_result.result or {}
        failing = tuple(
            FailingRow(
                key=str(row.get(document.key_column)),
                group=str(row.get(document.group_column)) if document.group_column else None,
            )
            for row in details.get("unexpected_index_list") or ()
        )
        outcomes[position] = ExpectationOutcome(
            gate=body["expectations"][position]["meta"]["gate"],
            expectation_type=config.type,
            success=bool(expectation_result.success),
            failing_rows=failing,
            observed_value=_plain(details.get("observed_value")),
            error=_error_message(expectation_result.exception_info),
        )
    return [
        outcomes.get(position)
        # GE dropped it: count it as failed, never as passed.
        or ExpectationOutcome(
            gate=expectation["meta"]["gate"],
            expectation_type=expectation["type"],
            success=False,
            failing_rows=(),
            observed_value=None,
            error="Great Expectations returned no result for this expectation",
        )
        for position, expectation in enumerate(body["expectations"])
    ]


def _plain(value: Any) -> Any:
    """numpy scalars → Python values, so outcomes serialize as JSON metadata."""
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def failing_keys(outcomes: Sequence[ExpectationOutcome]) -> list[str]:
    """Distinct failing row keys across outcomes, in a stable order."""
    return sorted({row.key for outcome in outcomes for row in outcome.failing_rows})
