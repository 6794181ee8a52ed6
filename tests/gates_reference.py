"""The gates oracle: GE over the whole pandas frame, every row and every column.

``litmus.gates.ge_runner.run_suite_in_warehouse``, the one production path, hands GE narrow
frames DuckDB built instead; tests/test_gates_warehouse_equivalence.py proves both give the
same outcomes. No product code imports this module.
"""

from __future__ import annotations

import pandas as pd

from litmus.gates.ge_runner import (
    ExpectationOutcome,
    SuiteDocument,
    check_frame_columns,
    failing_rows_of,
    index_columns,
    outcome_of,
    validate_frame,
)


def run_suite_over_whole_frame(
    document: SuiteDocument, frame: pd.DataFrame
) -> list[ExpectationOutcome]:
    """Validate ``frame`` against the suite; one outcome per expectation, in file order."""
    check_frame_columns(document, list(frame.columns))
    positions = list(range(len(document.body["expectations"])))
    verdicts = validate_frame(document, positions, frame, index_columns(document))
    return [
        outcome_of(
            document,
            position,
            verdicts.get(position),
            failing_rows_of(document, verdicts, position),
        )
        for position in positions
    ]
