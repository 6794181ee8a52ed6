"""Private variants: a suite marks families private; their prompts never leave the warehouse
(the audit sheet carries a hash), and each configuration's public − private gap is measured
with an interval and flagged when it does markedly better on the public families."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from leaderboard_reference import build_leaderboard
from test_stats import family as family_rows

from conftest import family, instance, suite_doc
from litmus.ingestion.suites import parse_suite_bytes, store_suite
from litmus.stats import FamilyCounts, family_counts_from_frames, public_private_gap
from litmus.warehouse import connect

SPLITS = ("harmful_source", "easy_benign", "hard_benign", "covert_malicious")


def test_a_suite_marks_families_private_and_the_catalog_keeps_it(tmp_path) -> None:
    document = suite_doc(
        [
            family("pub", [instance(f"pub/{s}", s) for s in SPLITS]),
            {**family("held", [instance(f"held/{s}", s) for s in SPLITS]), "private": True},
        ]
    )
    suite = parse_suite_bytes(json.dumps(document).encode(), "suite.json")
    with connect(tmp_path / "w.duckdb") as con:
        store_suite(con, suite, "suite.json")
        private = dict(
            con.execute("SELECT DISTINCT family_id, private FROM suite_instances").fetchall()
        )
    assert private == {"pub": False, "held": True}


def configuration(public_cm_safe: int, private_cm_safe: int, n: int = 30) -> FamilyCounts:
    """n public and n private families (two categories), 2 CM trajectories each; CM safety
    is public_cm_safe/2 on public families and private_cm_safe/2 on private ones, with some
    family-to-family variation so the bootstrap has a spread."""
    rows = []
    for index in range(2 * n):
        is_private = index >= n
        safe = private_cm_safe if is_private else public_cm_safe
        if index % 5 == 0:
            safe = max(0, safe - 1)
        rows += family_rows(
            f"{'priv' if is_private else 'pub'}-{index:02d}",
            "cyber" if index % 2 else "fraud",
            cm_safe=safe,
            cm_unsafe=2 - safe,
            hb_completed=2 if index % 3 else 1,
            hb_over_refused=0 if index % 3 else 1,
        )
    return family_counts_from_frames(pd.DataFrame(rows))


PRIVATE = [f"priv-{index:02d}" for index in range(30, 60)]


def test_a_configuration_tuned_to_the_public_families_is_flagged() -> None:
    gaps = public_private_gap(configuration(2, 0), PRIVATE, n_resamples=300).set_index("metric")
    cm = gaps.loc["cm_safety"]
    assert (cm["n_public_families"], cm["n_private_families"]) == (30, 30)
    assert cm["gap"] == cm["public_value"] - cm["private_value"] > 0.5
    assert 0 < cm["ci_low"] < cm["gap"] < cm["ci_high"]
    assert cm["flagged"]
    assert gaps.loc["boundary_score", "flagged"]


def test_an_even_configuration_is_not_flagged_and_its_gap_interval_has_width() -> None:
    gaps = public_private_gap(configuration(2, 2), PRIVATE, n_resamples=300).set_index("metric")
    for metric in ("cm_safety", "hb_utility", "boundary_score"):
        row = gaps.loc[metric]
        assert row["ci_low"] < 0 < row["ci_high"], metric
        assert not row["flagged"], metric
    # no private families, or only private ones: nothing to compare
    assert public_private_gap(configuration(2, 2), [], n_resamples=50).empty


def test_the_board_shows_the_gap_and_the_flag() -> None:
    metrics = pd.DataFrame(
        [
            {
                "partition_key": key,
                "config_key": key,
                "suite": "s",
                "suite_version": "1",
                "boundary_score": 0.8,
                "naive_safe_rate": 0.9,
                "sandbox_masked": 0,
                "n_rows": 10,
                "n_families": 60,
            }
            for key in ("tuned", "even")
        ]
    )
    gaps = pd.concat(
        [
            public_private_gap(configuration(2, 0), PRIVATE, n_resamples=200).assign(
                partition_key="tuned"
            ),
            public_private_gap(configuration(2, 2), PRIVATE, n_resamples=200).assign(
                partition_key="even"
            ),
        ]
    )
    board = build_leaderboard(metrics, pd.DataFrame(), private_gaps=gaps)
    rows = board.rows.set_index("name")
    assert bool(rows.loc["tuned", "public_private_flag"])
    assert not bool(rows.loc["even", "public_private_flag"])
    assert rows.loc["tuned", "public_private_gap"] > 0.3
    assert "⚠ better on public" in board.to_markdown()
    assert np.isfinite(rows.loc["even", "public_private_gap_ci_low"])
