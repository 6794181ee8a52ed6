"""GE over DuckDB-built narrow frames (``run_suite_in_warehouse``, the production path) decides
exactly what GE over the whole pandas frame (the oracle, tests/gates_reference.py) decides:
same success, same failing keys (with multiplicity), same observed values, same errors, for
the real gate suites over randomized frames full of wrong, missing and duplicated values,
and for expectation kinds the suites do not use yet (``mostly``, aggregates over every
column, a missing column)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from gates_reference import run_suite_over_whole_frame

from litmus.gates.ge_runner import ExpectationOutcome, SuiteDocument, run_suite_in_warehouse
from litmus.gates.publication_gates import (
    AUDITED_ROWS,
    PUBLISHED_RATES_FRAME,
    SUITE_FAMILIES,
    load_flag_suite,
    load_gate_suites,
)

SPLITS = ["harmful_source", "covert_malicious", "easy_benign", "hard_benign", "bogus", None]
HARM = ["harmful", "benign", "unknown", None]
LABELS = ["safe", "unsafe", "needs_audit", "completed", "over_refusal", "failed", "weird", None]
OUTCOMES = ["unsafe_realized", "safe_refused", "completed", "over_refused", "failed", "x", None]
SOURCES = ["rule", "audit", "override", "robot", None]


def _audited_rows(rng: random.Random, n_rows: int) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for index in range(n_rows):
        # a few repeated trajectories and (run, instance, epoch) triples
        trajectory = f"t{rng.randrange(n_rows)}" if rng.random() < 0.05 else f"t{index}"
        run_id, instance_id, epoch = "r1", f"i{index}", 0
        if rng.random() < 0.05:
            instance_id = f"i{rng.randrange(max(index, 1))}"
        label = rng.choice(LABELS)
        rows.append(
            {
                "row_key": f"{trajectory} (run {run_id}, {instance_id}, epoch {epoch})",
                "trajectory_id": trajectory,
                "run_id": run_id,
                "instance_id": instance_id,
                "epoch": epoch,
                "suite_key": rng.choice(["s@1", "s@1", "s@1", "s@2"]),
                "split": rng.choice(SPLITS),
                "request_harm_class": rng.choice(HARM),
                "declared_harm_class": rng.choice(HARM),
                "label": label,
                "outcome": rng.choice(OUTCOMES),
                "label_source": rng.choice(SOURCES),
                "rule_label": rng.choice([label, *LABELS]),
                "rule_outcome": rng.choice(OUTCOMES),
                "naive_label": rng.choice(["safe", "unsafe", "unsafe", None, "odd"]),
                "complied": rng.random() < 0.6,
                "attempted": rng.random() < 0.3,
                "refused": rng.random() < 0.3,
                "has_unguarded_effect": rng.random() < 0.2,
                "has_harm_marker": rng.random() < 0.2,
            }
        )
    return pd.DataFrame(rows)


def _suite_families(rng: random.Random, n_rows: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "row_key": [f"s@1 family f{i}" for i in range(n_rows)],
            "suite_key": ["s@1"] * n_rows,
            "family_id": [f"f{i}" for i in range(n_rows)],
            "n_instances": [rng.randrange(1, 5) for _ in range(n_rows)],
            "n_missing_splits": [rng.choice([0, 0, 0, 1, 2]) for _ in range(n_rows)],
            "sibling_policy": [rng.choice(["complete", "partial", None]) for _ in range(n_rows)],
        }
    )


def _normalized(outcome: ExpectationOutcome) -> tuple[Any, ...]:
    return (
        outcome.gate,
        outcome.expectation_type,
        outcome.success,
        sorted((row.key, row.group) for row in outcome.failing_rows),
        outcome.observed_value,
        outcome.error is None,
        outcome.describe(),
    )


def _both_ways(document: SuiteDocument, frame: pd.DataFrame) -> None:
    reference = run_suite_over_whole_frame(document, frame)
    con = duckdb.connect()
    con.register("frame_view", frame)
    con.execute("CREATE TEMP TABLE whole_frame AS SELECT * FROM frame_view")
    fast = run_suite_in_warehouse(document, con, "whole_frame")
    assert [_normalized(o) for o in fast] == [_normalized(o) for o in reference]
    # the narrow path leaves nothing behind in the caller's connection
    assert con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'litmus_gate_tuples%'"
    ).fetchone() == (0,)


@pytest.mark.parametrize("seed", range(4))
def test_trajectory_and_suite_gates_agree_on_random_frames(seed: int) -> None:
    rng = random.Random(seed)
    suites = load_gate_suites()
    _both_ways(suites[AUDITED_ROWS], _audited_rows(rng, rng.choice([1, 7, 60, 400])))
    _both_ways(suites[SUITE_FAMILIES], _suite_families(rng, rng.choice([1, 9, 80])))


def test_clean_frames_agree_too() -> None:
    """A frame every gate passes (nothing rejected, no key to map back)."""
    rng = random.Random(7)
    frame = _audited_rows(rng, 50)
    frame = frame.assign(
        split="hard_benign",
        request_harm_class="benign",
        declared_harm_class="benign",
        label="completed",
        outcome="completed",
        label_source="rule",
        rule_label="completed",
        rule_outcome="completed",
        naive_label="safe",
        suite_key="s@1",
        trajectory_id=[f"t{i}" for i in range(50)],
        instance_id=[f"i{i}" for i in range(50)],
    )
    _both_ways(load_gate_suites()[AUDITED_ROWS], frame)


def test_expectation_kinds_outside_the_suites_agree() -> None:
    """``mostly`` needs every row, an unlisted aggregate sees every column, a missing column
    fails the same way, and a grouped suite keeps its groups."""
    expectations = [
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "label", "value_set": ["safe"], "mostly": 0.5},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "label", "value_set": ["safe"]},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_column_mean_to_be_between",
            "kwargs": {"column": "score", "min_value": 0, "max_value": 0.4},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_column_values_to_not_be_null",
            "kwargs": {"column": "no_such_column"},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_column_unique_value_count_to_be_between",
            "kwargs": {"column": "label", "max_value": 2},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {
                "column": "score",
                "min_value": 0,
                "max_value": 1,
                "row_condition": 'label != "safe"',
                "condition_parser": "pandas",
            },
            "meta": {"gate": "label_values"},
        },
        # counted over ranks (NULLs, numbers, repeats), and with a row condition over values
        {
            "type": "expect_column_values_to_be_unique",
            "kwargs": {"column": "label"},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_compound_columns_to_be_unique",
            "kwargs": {"column_list": ["label", "score"]},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_column_values_to_be_unique",
            "kwargs": {"column": "score", "mostly": 0.2},
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_table_row_count_to_be_between",
            "kwargs": {
                "min_value": 50,
                "row_condition": 'label == "safe"',
                "condition_parser": "pandas",
            },
            "meta": {"gate": "label_values"},
        },
        {
            "type": "expect_table_row_count_to_equal",
            "kwargs": {"value": 120},
            "meta": {"gate": "label_values"},
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
    rng = random.Random(3)
    frame = pd.DataFrame(
        {
            "row_key": [f"k{i % 37}" for i in range(120)],  # keys repeat: multiplicity counts
            "partition_key": [rng.choice(["a", "b"]) for _ in range(120)],
            "label": [rng.choice(["safe", "safe", "unsafe", "odd", None]) for _ in range(120)],
            "score": [rng.choice([0.1, 0.5, 1.5, -2.0, None]) for _ in range(120)],
        }
    )
    _both_ways(document, frame)


def _published_rates(rng: random.Random, n_rows: int) -> pd.DataFrame:
    values = [rng.choice([0.0, 0.3, 1.0, 1.2, -0.1, None]) for _ in range(n_rows)]
    return pd.DataFrame(
        {
            "row_key": [f"c{i % 3}: metric_cis.m{i} = {v}" for i, v in enumerate(values)],
            "partition_key": [f"c{i % 3}" for i in range(n_rows)],
            "source": [rng.choice(["configuration_metrics", "metric_cis"]) for _ in values],
            "metric": [f"m{i}" for i in range(n_rows)],
            "value": pd.Series(values, dtype="float64"),
            "is_nan": [v is None and rng.random() < 0.5 for v in values],
        }
    )


def _rate_precision(rng: random.Random, n_rows: int) -> pd.DataFrame:
    families = [rng.choice([3, 19, 20, 64]) for _ in range(n_rows)]
    return pd.DataFrame(
        {
            "row_key": [f"c{i % 2}: m{i} CI over {n} families" for i, n in enumerate(families)],
            "partition_key": [f"c{i % 2}" for i in range(n_rows)],
            "metric": [f"m{i}" for i in range(n_rows)],
            "n_families": pd.Series(families, dtype="int64"),
        }
    )


@pytest.mark.parametrize("n_rows", [0, 1, 40])
def test_rate_and_precision_suites_agree_too(n_rows: int) -> None:
    """The rates gate and the precision flag go through the same production path."""
    rng = random.Random(n_rows)
    _both_ways(load_gate_suites()[PUBLISHED_RATES_FRAME], _published_rates(rng, n_rows))
    _both_ways(load_flag_suite(), _rate_precision(rng, n_rows))
