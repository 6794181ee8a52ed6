"""The metric catalogue (dbt_project.yml vars.metric_catalogue): one entry per metric drives
dbt, the bootstrap, the board, drift and the docs. dbt's values against hand counts and
against the bootstrap's point estimates: tests/test_metrics_dbt.py."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from litmus import PROJECT_DIR
from litmus.metric_catalogue import (
    CATALOGUE_FILE,
    FORMULA_COUNTS,
    catalogue,
    markdown_table,
    parse_catalogue,
)
from litmus.metrics.leaderboard import COLUMN_LEGEND
from litmus.releases.alerts import DEFAULT_REGRESSION_METRICS, DEFAULT_REGRESSION_THRESHOLD
from litmus.releases.drift import DRIFT_METRICS, METRIC_LABELS
from litmus.stats import RATE_METRICS, metric_denominators, metric_values

CATALOGUE_TEXT = CATALOGUE_FILE.read_text(encoding="utf-8")


def with_metric(entry: str) -> str:
    """The catalogue file with ``entry`` (YAML, one metric) appended to its metrics."""
    indented = "\n".join("      " + line for line in entry.strip().splitlines())
    return CATALOGUE_TEXT.rstrip("\n") + "\n" + indented + "\n"


def test_every_metric_is_named_once_and_drives_every_consumer() -> None:
    entries = catalogue().metrics
    assert tuple(m.key for m in entries if m.ci != "none") == RATE_METRICS
    assert set(DRIFT_METRICS) <= set(RATE_METRICS)
    assert {m.key: m.label for m in entries} == METRIC_LABELS
    assert catalogue().regression_watched == DEFAULT_REGRESSION_METRICS
    assert catalogue().regression_threshold == DEFAULT_REGRESSION_THRESHOLD
    legend = dict(COLUMN_LEGEND)
    for metric in entries:
        if metric.board_header is not None:
            assert legend[metric.board_header] == metric.legend


def test_the_docs_table_is_the_catalogue() -> None:
    docs = (PROJECT_DIR / "docs" / "scoring.md").read_text(encoding="utf-8")
    found = re.search(
        r"<!-- metric catalogue:[^>]*-->\n(.*?)<!-- /metric catalogue -->", docs, re.S
    )
    assert found is not None
    assert found.group(1) == markdown_table(catalogue())


def test_the_bootstrap_evaluates_each_ratio_as_its_catalogue_sums() -> None:
    rng = np.random.default_rng(3)
    totals = rng.integers(0, 9, size=(5, len(FORMULA_COUNTS))).astype(np.float64)
    column = dict(zip(FORMULA_COUNTS, totals.T, strict=True))
    values, denominators = metric_values(totals), metric_denominators(totals)
    for metric in catalogue().metrics:
        if not metric.is_ratio:
            continue
        numerator = sum(column[name] for name in metric.numerator)
        denominator = sum(column[name] for name in metric.denominator)
        expected = np.where(
            denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan
        )
        np.testing.assert_array_equal(values[metric.key], expected, err_msg=metric.key)
        np.testing.assert_array_equal(denominators[metric.key], denominator, err_msg=metric.key)


def test_adding_a_metric_is_one_entry() -> None:
    grown = parse_catalogue(
        with_metric(
            """
- key: failure_rate_hb
  label: HB failure
  legend: "failed / scorable hard-benign requests"
  numerator: [hb_n_over_refused, hb_n_overreach]
  denominator: [hb_n_scorable]
  grain: [configuration, category, control]
  higher_is_better: false
  ci: wilson_effective_n
"""
        )
    )
    assert grown.rates[-1] == "failure_rate_hb"
    assert grown["failure_rate_hb"].label == "HB failure"


def test_a_drift_metric_must_read_a_drop_as_worse() -> None:
    text = CATALOGUE_TEXT.replace(
        "drift_metrics: [cm_safety, hb_utility, safety, utility, boundary_score]",
        "drift_metrics: [cm_safety, hb_utility, safety, utility, boundary_score, overreach_hb]",
    )
    with pytest.raises(ValueError, match=r"\['overreach_hb'\] are not higher-is-better"):
        parse_catalogue(text)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "- {key: x_rate, label: X, legend: x, numerator: [hb_n_bogus], denominator: [n_rows],"
            " grain: [configuration], higher_is_better: true, ci: wilson_effective_n}",
            r"metrics\.17 \(x_rate\): .*unknown count column\(s\) \['hb_n_bogus'\]",
        ),
        (
            "- {key: x_rate, label: X, legend: x, numerator: [n_rows], denominator: [n_rows],"
            " count: n_unsafe_blocked, grain: [configuration], higher_is_better: true,"
            " ci: none}",
            r"metrics\.17 \(x_rate\): .*exactly one formula",
        ),
        (
            "- {key: x_rate, label: X, legend: x, harmonic_mean_of: [hb_utility, sandbox_masked],"
            " grain: [configuration], higher_is_better: true, ci: wilson_effective_n}",
            r"harmonic_mean_of names 'sandbox_masked'",
        ),
        (
            "- {key: cm_safety, label: X, legend: x, numerator: [n_rows], denominator: [n_rows],"
            " grain: [configuration], higher_is_better: true, ci: wilson_effective_n}",
            r"named twice: \['cm_safety'\]",
        ),
        (
            "- {key: x_rate, label: X, legend: x, numerator: [n_rows], denominator: [n_rows],"
            " grain: [configuration], higher_is_better: true, ci: bootstrap_percentile}",
            r"metrics\.17 \(x_rate\)\.ci",
        ),
    ],
)
def test_a_bad_entry_is_refused_naming_the_file_entry_and_field(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as refused:
        parse_catalogue(with_metric(entry), CATALOGUE_FILE)
    assert str(CATALOGUE_FILE) in str(refused.value)


def test_the_catalogue_is_dbt_vars_and_nothing_else_names_a_formula() -> None:
    project = yaml.safe_load(CATALOGUE_TEXT)
    assert set(project["vars"]) == {"metric_catalogue"}
    macros = (PROJECT_DIR / "dbt_project" / "macros" / "metric_definitions.sql").read_text()
    for metric in catalogue().metrics:  # no metric is spelt out in SQL beside the catalogue
        assert f"as {metric.key}" not in macros
