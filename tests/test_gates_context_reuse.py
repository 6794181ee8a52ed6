"""GE's validations share one context per process (``ge_runner.validate_frame``), run GE's
validator without a stored validation definition, and ask for the complete result only of
the expectations a quick pass cannot settle; they decide exactly what a fresh context per
validation with ``ValidationDefinition.run`` and one complete pass decided (the code before):
same verdicts,
same failing rows, same observed values, same errors, frame after frame under the same frame
name (a shared data source would answer from the previous frame's metric cache), for the
real gate suites over randomized hostile frames and for expectation kinds they do not use.
Nothing is left registered in the shared context after a validation, a failing one included."""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from test_gates_warehouse_equivalence import _audited_rows, _suite_families

from litmus.gates import ge_runner
from litmus.gates.ge_runner import SuiteDocument, _Verdict
from litmus.gates.publication_gates import AUDITED_ROWS, SUITE_FAMILIES, load_gate_suites


def _validate_in_a_fresh_context(
    document: SuiteDocument,
    positions: Sequence[int],
    frame: pd.DataFrame,
    index_columns: Sequence[str],
) -> dict[int, _Verdict]:
    """The code before: one ephemeral context, data source, suite and validation definition
    per validation, run through ``ValidationDefinition.run``."""
    gx = ge_runner._great_expectations()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (
        context.data_sources.add_pandas("litmus_warehouse")
        .add_dataframe_asset(document.frame)
        .add_batch_definition_whole_dataframe("whole_frame")
    )
    body = copy.deepcopy(dict(document.body))
    body["expectations"] = [
        {
            **body["expectations"][p],
            "meta": {**body["expectations"][p]["meta"], ge_runner._POSITION: p},
        }
        for p in positions
    ]
    suite = context.suites.add(gx.ExpectationSuite(**body))
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(data=batch, suite=suite, name=document.name)
    )
    result = validation.run(
        batch_parameters={"dataframe": frame},
        result_format={
            "result_format": "COMPLETE",
            "unexpected_index_column_names": list(index_columns),
            "return_unexpected_index_query": False,
        },
    )
    return ge_runner.verdicts_of_result(result, positions)


def _comparable(verdicts: dict[int, _Verdict]) -> dict[int, tuple[Any, ...]]:
    return {
        position: (
            v.expectation_type,
            v.success,
            [repr(sorted(row.items())) for row in v.unexpected_index_rows],  # in order
            repr(v.observed_value),
            v.error,
        )
        for position, v in verdicts.items()
    }


def _agree(document: SuiteDocument, frame: pd.DataFrame, positions: Sequence[int]) -> None:
    index = ge_runner.index_columns(document)
    shared = ge_runner.validate_frame(document, positions, frame, index)
    fresh = _validate_in_a_fresh_context(document, positions, frame, index)
    assert _comparable(shared) == _comparable(fresh)
    context = ge_runner._context
    assert context is not None
    assert not list(context.data_sources.all())  # nothing stays registered
    assert not context.suites.all()


def _subsets(rng: random.Random, n: int) -> list[list[int]]:
    every = list(range(n))
    some = sorted(rng.sample(every, max(1, n // 2)))
    return [every, some]


@pytest.mark.parametrize("seed", range(2))
def test_shared_context_decides_what_a_fresh_one_did(seed: int) -> None:
    rng = random.Random(seed)
    suites = load_gate_suites()
    audited, families = suites[AUDITED_ROWS], suites[SUITE_FAMILIES]
    # frame after frame under the same frame names, different sizes and contents
    for _ in range(2):
        frame = _audited_rows(rng, rng.choice([1, 7, 60, 300]))
        for positions in _subsets(rng, len(audited.body["expectations"])):
            _agree(audited, frame, positions)
        frame = _suite_families(rng, rng.choice([1, 9, 80]))
        for positions in _subsets(rng, len(families.body["expectations"])):
            _agree(families, frame, positions)


def test_failing_expectations_and_a_missing_column_agree_and_leave_nothing() -> None:
    expectations = [
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "label", "value_set": ["safe"], "mostly": 0.5},
            "meta": {"gate": "g"},
        },
        {  # holds with unexpected rows (a quarter of the labels are null): they are listed
            "type": "expect_column_values_to_not_be_null",
            "kwargs": {"column": "label", "mostly": 0.5},
            "meta": {"gate": "g"},
        },
        {
            "type": "expect_column_values_to_not_be_null",
            "kwargs": {"column": "no_such_column"},
            "meta": {"gate": "g"},
        },
        {
            "type": "expect_column_mean_to_be_between",
            "kwargs": {"column": "score", "min_value": 0, "max_value": 0.4},
            "meta": {"gate": "g"},
        },
        {
            "type": "expect_table_row_count_to_be_between",
            "kwargs": {"min_value": 50},
            "meta": {"gate": "g"},
        },
        {
            "type": "expect_column_values_to_match_regex",
            "kwargs": {"column": "label", "regex": "^(safe|unsafe)$"},
            "meta": {"gate": "g"},
        },
    ]
    document = SuiteDocument(
        path=Path("inline.json"),
        name="inline",
        frame="rows",
        key_column="row_key",
        group_column="partition_key",
        body={
            "name": "inline",
            "meta": {"frame": "rows", "key_column": "row_key", "group_column": "partition_key"},
            "expectations": expectations,
        },
    )
    rng = random.Random(11)
    for n_rows in (120, 3, 120, 0):
        frame = pd.DataFrame(
            {
                "row_key": [f"k'\"{i % 37};--" for i in range(n_rows)],
                "partition_key": [rng.choice(["a", "b\n", "ü"]) for _ in range(n_rows)],
                "label": [rng.choice(["safe", "unsafe", "o\x00dd", None]) for _ in range(n_rows)],
                "score": [rng.choice([0.1, 0.5, 1.5, -2.0, None]) for _ in range(n_rows)],
            }
        )
        _agree(document, frame, list(range(len(expectations))))


def test_a_frame_reaches_ge_without_being_fingerprinted() -> None:
    """GE fingerprints an in-memory batch below a size threshold (pandas' hash of every
    cell) for a batch marker nothing reads, a quarter of a gating step's CPU; the runner
    puts every frame above the threshold. Should GE rename that knob, this fails."""
    ge_runner._great_expectations()
    from great_expectations.core.batch_spec import RuntimeDataBatchSpec
    from great_expectations.execution_engine import PandasExecutionEngine

    frame = pd.DataFrame({"row_key": ["a", "b"], "label": ["safe", None]})
    _, markers = PandasExecutionEngine().get_batch_data_and_markers(
        RuntimeDataBatchSpec(batch_data=frame)
    )
    assert "ge_load_time" in markers
    assert "pandas_data_fingerprint" not in markers


def test_a_validation_writes_no_project_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registering and deleting a frame's data source made the ephemeral context write its
    whole project config as YAML, four times per frame, into a store nothing reads; the
    shared context does not write it. Should GE route that write another way, this fails."""
    suites = load_gate_suites()
    document = suites[AUDITED_ROWS]
    frame = _audited_rows(random.Random(5), 40)
    positions = list(range(len(document.body["expectations"])))
    row_keys = ge_runner.index_columns(document)
    ge_runner.validate_frame(document, positions, frame, row_keys)  # context made
    variables = type(ge_runner._context.variables)
    writes: list[object] = []
    save = variables.save
    monkeypatch.setattr(variables, "save", lambda self: writes.append(self) or save(self))
    verdicts = ge_runner.validate_frame(document, positions, frame, row_keys)
    assert writes == []
    assert _comparable(verdicts) == _comparable(
        _validate_in_a_fresh_context(document, positions, frame, row_keys)
    )
    assert writes  # the instrument sees the writes a context that was not told makes
