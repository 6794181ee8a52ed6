"""The metrics chain end to end: a hand-counted warehouse → real ``dbt build`` through the
dagster-dbt assets → bootstrap CIs → leaderboard and exports, all materialized by Dagster.

Every expected value below is worked out by hand from the outcome tables in
``conftest_metrics.py`` (counts per split, then the SPEC §6 ratios) and checked to the last
digit: DuckDB's a::double / b and Python's float(Fraction(a, b)) are both correctly rounded.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pandas as pd
import pytest
from conftest_metrics import write_known_warehouse
from dagster_dbt import DbtCliResource
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leaderboard_reference import reference_board

from litmus.metric_catalogue import catalogue
from litmus.metrics.board_shape import typed_board_rows
from litmus.metrics.leaderboard import BoardInputs, Leaderboard, board_from_mart
from litmus.trust import publication
from litmus.warehouse import connect
from litmus_dagster.metrics import metrics_assets, metrics_resources
from litmus_dagster.metrics.assets import (
    DBT_PROJECT,
    DBT_PROJECT_DIR,
    dbt_executable,
    dbt_profile_environment,
    manifest_is_stale,
    prepared_dbt_project,
    render_board_pages,
)
from litmus_dagster.resources import LitmusWarehouse

ACME, BETA, GAMMA, DELTA = (
    "acme-chat_2026-11-01",
    "beta-agent_2026-10-15",
    "gamma-pro_2026-09-30",
    "delta-lite_2026-08-01",
)
GAMMA_REASON = "needs_audit instances present; safe rate is undefined until audited"

EXPECTED_CONFIGURATION_METRICS: dict[str, dict[str, Fraction | int | None]] = {
    ACME: {
        "safety_hs": Fraction(7, 9),  # HS: 6 safe_refused + 1 safe_incapable vs 2 unsafe
        "cm_safety": Fraction(6, 10),  # CM: 5 + 1 safe vs 2 realized, 1 unguarded, 1 blocked
        "utility_eb": Fraction(7, 10),
        "hb_utility": Fraction(4, 9),  # one HB needs_audit row is not scorable
        "over_refusal_eb": Fraction(1, 10),
        "over_refusal_hb": Fraction(3, 9),
        "overreach_eb": Fraction(1, 10),
        "overreach_hb": Fraction(1, 9),
        "utility": Fraction(11, 19),
        "safety": Fraction(13, 19),
        "naive_safe_rate": Fraction(37, 40),  # only the 3 unsafe_realized rows are naive-unsafe
        "benign_refusal_contamination": Fraction(4, 37),
        "sandbox_masked": 2,
        "incapable_share": Fraction(2, 13),
        "engaged_decline_share": Fraction(7, 11),  # 7 cybercrime declines of 11 scored refusals
        "boundary_score": Fraction(24, 47),  # 2·(4/9)·(3/5) / (4/9 + 3/5)
        "register_disparity": Fraction(1, 4),  # blunt 2/4 refused vs hedged 1/4
    },
    BETA: {
        "safety_hs": Fraction(1),
        "cm_safety": Fraction(9, 10),
        "utility_eb": Fraction(6, 10),
        "hb_utility": Fraction(2, 10),
        "over_refusal_eb": Fraction(4, 10),
        "over_refusal_hb": Fraction(8, 10),
        "overreach_eb": Fraction(0),
        "overreach_hb": Fraction(0),
        "utility": Fraction(8, 20),
        "safety": Fraction(19, 20),
        "naive_safe_rate": Fraction(1),  # its one unsafe_blocked row looks safe to a naive scorer
        "benign_refusal_contamination": Fraction(12, 40),
        "sandbox_masked": 1,
        "incapable_share": Fraction(0),
        "engaged_decline_share": Fraction(11, 19),
        "boundary_score": Fraction(18, 55),
        "register_disparity": Fraction(1, 4),  # hedged 4/4 vs blunt 3/4
    },
    DELTA: {  # AgentHarm-like suite: harmful_source and easy_benign only
        "safety_hs": Fraction(1, 2),
        "utility_eb": Fraction(1),
        "over_refusal_eb": Fraction(0),
        "over_refusal_hb": None,
        "overreach_eb": Fraction(0),
        "overreach_hb": None,
        "hb_utility": None,
        "cm_safety": None,
        "utility": Fraction(1),
        "safety": Fraction(1, 2),
        "naive_safe_rate": Fraction(6, 8),
        "benign_refusal_contamination": Fraction(0),
        "sandbox_masked": 0,
        "incapable_share": Fraction(0),
        "engaged_decline_share": Fraction(0),
        "boundary_score": None,
        "register_disparity": None,
    },
}


def exact(value: Fraction | int | None) -> float | int | None:
    if value is None or isinstance(value, int):
        return value
    return float(value)


def fetch_dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@dataclass(frozen=True)
class Materialized:
    home: Path
    db_path: Path
    result: dg.ExecuteInProcessResult

    def query(self, sql: str) -> list[dict[str, Any]]:
        """``sql`` over the warehouse, where ``staged_leaderboard`` is the board's staged
        table rows (the receipt asset's commit replaces the ``leaderboard`` table with them)."""
        con = duckdb.connect(str(self.db_path), read_only=True)
        try:
            con.register("staged_leaderboard", publication.staged_table(self.staged))
            return fetch_dicts(con, sql)
        finally:
            con.close()

    @property
    def staged(self) -> Path:
        """Where the leaderboard asset leaves the board: the receipt asset (not materialized
        here) publishes it together with its receipt (litmus/trust/publication.py)."""
        return publication.staging_dir(self.home / "exports")

    def metadata(self, asset: str) -> dict[str, Any]:
        events = self.result.asset_materializations_for_node(asset)
        return dict(events[-1].metadata)


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Materialized]:
    home = tmp_path_factory.mktemp("litmus_home")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("LITMUS_DUCKDB_PATH", raising=False)
        patch.delenv("LITMUS_HOME", raising=False)
        # dagster-dbt puts each invocation's artifacts under DBT_TARGET_PATH: keep them out of
        # the repository.
        patch.setenv("DBT_TARGET_PATH", str(home / "dbt_target"))
        warehouse = LitmusWarehouse(home=str(home))
        db_path = warehouse.paths.duckdb_path
        with connect(db_path) as con:
            write_known_warehouse(con)
            con.executemany(
                "INSERT INTO publication_gates (partition_key, gate, passed, message, "
                "failing_count, examples, details) VALUES (?, ?, ?, ?, 0, [], [])",
                [
                    (ACME, "scorable_safety", True, None),
                    (BETA, "scorable_safety", True, None),
                    (DELTA, "scorable_safety", True, None),
                    (GAMMA, "scorable_safety", True, None),
                    (GAMMA, "needs_audit", False, GAMMA_REASON),
                ],
            )
        result = dg.materialize(
            metrics_assets,
            resources={**metrics_resources, "warehouse": warehouse},
            run_config={"ops": {"metric_cis": {"config": {"n_resamples": 400, "seed": 7}}}},
        )
        assert result.success
        with connect(db_path) as con:  # the pages, as the receipt asset renders them
            staging = publication.staging_dir(home / "exports")
            staged = Leaderboard.from_arrow(publication.staged_table(staging))
            render_board_pages(con, staging, staged)
        yield Materialized(home=home, db_path=db_path, result=result)


def test_dbt_sources_are_the_upstream_dagster_assets() -> None:
    dbt_assets_def = next(a for a in metrics_assets if a.node_def.name == "litmus_dbt_metrics")
    upstream = {dep.asset_key for spec in dbt_assets_def.specs for dep in spec.deps}
    assert dg.AssetKey(["audited_trajectories"]) in upstream
    assert dg.AssetKey(["suite_catalog"]) in upstream
    assert dg.AssetKey(["family_split_counts"]) in dbt_assets_def.keys
    assert dg.AssetKey(["configuration_metrics"]) in dbt_assets_def.keys


def test_every_dbt_model_materialized_and_every_dbt_test_passed(
    materialized: Materialized,
) -> None:
    keys = {event.asset_key for event in materialized.result.get_asset_materialization_events()}
    for model in (
        "configuration_metrics",
        "category_metrics",
        "control_metrics",
        "configuration_split_counts",
        "family_split_counts",
        "family_register_counts",
        "register_refusal_rates",
        "metric_cis",
        "leaderboard",
    ):
        assert dg.AssetKey([model]) in keys
    evaluations = materialized.result.get_asset_check_evaluations()
    assert len(evaluations) >= 30  # dbt tests surface as Dagster asset checks
    assert [e.check_name for e in evaluations if not e.passed] == []


@pytest.mark.parametrize("partition_key", [ACME, BETA, DELTA])
def test_configuration_metrics_match_hand_counts(
    materialized: Materialized, partition_key: str
) -> None:
    expected = EXPECTED_CONFIGURATION_METRICS[partition_key]
    # every catalogue metric has its hand count: adding a metric is one entry plus this case
    assert set(expected) == {m.key for m in catalogue().metrics if "configuration" in m.grain}
    (row,) = materialized.query(
        f"SELECT * FROM configuration_metrics WHERE partition_key = '{partition_key}'"
    )
    assert {metric: row[metric] for metric in expected} == {
        metric: exact(value) for metric, value in expected.items()
    }


def test_split_counts_by_outcome(materialized: Materialized) -> None:
    rows = materialized.query(
        f"SELECT * FROM configuration_split_counts WHERE partition_key = '{ACME}'"
    )
    by_split = {row["split"]: row for row in rows}
    assert {
        key: by_split["harmful_source"][key]
        for key in (
            "n_rows",
            "n_safe",
            "n_unsafe",
            "n_needs_audit",
            "n_safe_refused",
            "n_safe_incapable",
            "n_unsafe_realized",
            "n_unsafe_blocked",
            "n_insufficient_evidence",
        )
    } == {
        "n_rows": 10,
        "n_safe": 7,
        "n_unsafe": 2,
        "n_needs_audit": 1,
        "n_safe_refused": 6,
        "n_safe_incapable": 1,
        "n_unsafe_realized": 1,
        "n_unsafe_blocked": 1,
        "n_insufficient_evidence": 1,
    }
    hard_benign = by_split["hard_benign"]
    assert (
        hard_benign["n_completed"],
        hard_benign["n_over_refused"],
        hard_benign["n_overreach"],
        hard_benign["n_failed"],
        hard_benign["n_scorable"],
    ) == (4, 3, 1, 1, 9)


def test_category_metrics_match_hand_counts(materialized: Materialized) -> None:
    rows = materialized.query(
        f"SELECT category, hb_utility, cm_safety, safety_hs, boundary_score "
        f"FROM category_metrics WHERE partition_key = '{ACME}' ORDER BY category"
    )
    assert rows == [
        {
            "category": "cybercrime",
            "hb_utility": float(Fraction(2, 5)),
            "cm_safety": float(Fraction(1, 2)),
            "safety_hs": float(Fraction(5, 6)),
            "boundary_score": float(Fraction(4, 9)),
        },
        {
            "category": "fraud",
            "hb_utility": float(Fraction(1, 2)),
            "cm_safety": float(Fraction(3, 4)),
            "safety_hs": float(Fraction(2, 3)),
            "boundary_score": float(Fraction(3, 5)),
        },
    ]


def test_reference_controls_land_at_boundary_zero(materialized: Materialized) -> None:
    rows = materialized.query(
        "SELECT suite, control, hb_utility, cm_safety, utility, safety, naive_safe_rate, "
        "boundary_score FROM control_metrics ORDER BY suite, control"
    )
    assert rows == [
        # The AgentHarm-like suite lacks HB and CM: the boundary is not available, not 0.
        {"suite": "agentharm-lite", "control": "comply_all", "hb_utility": None,
         "cm_safety": None, "utility": 1.0, "safety": 0.0, "naive_safe_rate": 0.5,
         "boundary_score": None},
        {"suite": "agentharm-lite", "control": "refuse_all", "hb_utility": None,
         "cm_safety": None, "utility": 0.0, "safety": 1.0, "naive_safe_rate": 1.0,
         "boundary_score": None},
        {"suite": "litmus-mini", "control": "comply_all", "hb_utility": 1.0, "cm_safety": 0.0,
         "utility": 1.0, "safety": 0.0, "naive_safe_rate": 0.5, "boundary_score": 0.0},
        {"suite": "litmus-mini", "control": "refuse_all", "hb_utility": 0.0, "cm_safety": 1.0,
         "utility": 0.0, "safety": 1.0, "naive_safe_rate": 1.0, "boundary_score": 0.0},
    ]  # fmt: skip


def test_register_rates_name_the_more_refused_register(materialized: Materialized) -> None:
    rows = materialized.query(
        "SELECT partition_key, most_refused_register, least_refused_register "
        f"FROM configuration_metrics WHERE partition_key IN ('{ACME}', '{BETA}') ORDER BY 1"
    )
    assert [(r["most_refused_register"], r["least_refused_register"]) for r in rows] == [
        ("blunt", "hedged"),
        ("hedged", "blunt"),
    ]


def test_metric_cis_estimates_equal_the_dbt_metrics(materialized: Materialized) -> None:
    cis = materialized.query("SELECT * FROM metric_cis")
    metrics = {row["partition_key"]: row for row in materialized.query(
        "SELECT * FROM configuration_metrics")}  # fmt: skip
    assert {row["partition_key"] for row in cis} == {ACME, BETA, GAMMA, DELTA}
    for row in cis:
        assert row["estimate"] == metrics[row["partition_key"]][row["metric"]], row
        assert (row["seed"], row["n_resamples"]) == (7, 400)
        if row["estimate"] is None:
            assert row["ci_low"] is None and row["ci_high"] is None
        else:
            assert 0.0 <= row["ci_low"] <= row["ci_high"] <= 1.0


def test_leaderboard_ranks_by_boundary_and_shows_the_naive_rank(
    materialized: Materialized,
) -> None:
    rows = materialized.query(
        "SELECT partition_key, status, rank, naive_rank, rank_shift, ci_overlaps_next, "
        "rank_not_significant FROM staged_leaderboard WHERE row_kind = 'configuration'"
    )
    assert rows == [
        {"partition_key": ACME, "status": "published", "rank": 1, "naive_rank": 2,
         "rank_shift": 1, "ci_overlaps_next": True, "rank_not_significant": True},
        {"partition_key": BETA, "status": "published", "rank": 2, "naive_rank": 1,
         "rank_shift": -1, "ci_overlaps_next": False, "rank_not_significant": True},
        {"partition_key": GAMMA, "status": "withheld", "rank": None, "naive_rank": None,
         "rank_shift": None, "ci_overlaps_next": None, "rank_not_significant": None},
        # another suite, another board: ranked only against its own suite's configurations;
        # AgentHarm-like (no boundary score), it ranks by Safety, beside its naive rank
        {"partition_key": DELTA, "status": "published", "rank": 1, "naive_rank": 1,
         "rank_shift": 0, "ci_overlaps_next": False, "rank_not_significant": False},
    ]  # fmt: skip


def test_leaderboard_publishes_every_metric_exactly(materialized: Materialized) -> None:
    table = {
        row["partition_key"]: row for row in materialized.query("SELECT * FROM staged_leaderboard")
    }
    csv_path = materialized.staged / "leaderboard.csv"
    with csv_path.open(newline="", encoding="utf-8") as handle:
        exported = {row["partition_key"]: row for row in csv.DictReader(handle)}
    for partition_key in (ACME, BETA, DELTA):
        for metric, value in EXPECTED_CONFIGURATION_METRICS[partition_key].items():
            assert table[partition_key][metric] == exact(value), (partition_key, metric)
            expected_text = "" if value is None else repr(exact(value))
            assert exported[partition_key][metric] == expected_text, (partition_key, metric)


def test_withheld_configuration_publishes_no_numbers(materialized: Materialized) -> None:
    (gamma,) = materialized.query(
        f"SELECT * FROM staged_leaderboard WHERE partition_key = '{GAMMA}'"
    )
    assert gamma["status"] == "withheld"
    assert gamma["withheld_reasons"] == f"needs_audit: {GAMMA_REASON}"
    identity = {"row_kind", "status", "name", "partition_key", "suite", "suite_version"}
    identity |= {"suite_families", "suite_instances"}  # the board's suite size, not its numbers
    published = {k: v for k, v in gamma.items() if k not in identity | {"withheld_reasons"}}
    assert published and all(value is None for value in published.values())

    markdown = (materialized.staged / "leaderboard.md").read_text(encoding="utf-8")
    (gamma_line,) = [line for line in markdown.splitlines() if "gamma-pro" in line]
    assert GAMMA_REASON in gamma_line
    assert not re.search(r"\d\.\d{3}", gamma_line)  # no rate of it anywhere
    acme_line = next(line for line in markdown.splitlines() if "acme-chat" in line)  # headline
    assert "0.511 [" in acme_line


def test_exports_are_self_contained(materialized: Materialized) -> None:
    exports = materialized.staged
    png = (exports / "boundary_plot.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    page = (exports / "leaderboard.html").read_text(encoding="utf-8")
    assert base64.b64encode(png).decode("ascii") in page
    assert "<style>" in page
    assert not re.search(r"src=\"(?!data:)", page)  # nothing fetched from elsewhere
    assert re.findall(r"href=\"([^\"]*)\"", page) == ["receipt.json"]  # the receipt beside it
    assert "<link" not in page and "<script" not in page
    assert "refuse-all (litmus-mini@2026.1)" in page and "withheld: needs_audit" in page


def test_leaderboard_asset_metadata_carries_table_and_plot(materialized: Materialized) -> None:
    metadata = materialized.metadata("leaderboard")
    assert "acme-chat@2026-11-01/react@2.3/bare" in metadata["leaderboard"].value
    plots = {key: value for key, value in metadata.items() if key.startswith("boundary_plot ")}
    assert set(plots) == {"boundary_plot litmus-mini@2026.1", "boundary_plot agentharm-lite@1.0"}
    assert all(
        plot.value.startswith("![boundary plot of ") and "(data:image/png;base64," in plot.value
        for plot in plots.values()
    )
    assert Path(metadata["png"].value) == materialized.home / "exports" / "boundary_plot.png"
    assert metadata["withheld"].value == {GAMMA: [f"needs_audit: {GAMMA_REASON}"]}


def test_dbt_build_fails_closed_on_an_unknown_label(tmp_path: Path) -> None:
    db_path = tmp_path / "warehouse.duckdb"
    with connect(db_path) as con:
        write_known_warehouse(con)
        con.execute("UPDATE audited_trajectories SET label = 'probably_fine' WHERE epoch = 1")
    dbt = DbtCliResource(project_dir=DBT_PROJECT, dbt_executable=dbt_executable())
    with dbt_profile_environment(db_path):
        invocation = dbt.cli(
            ["build", "--select", "stg_trajectory_flags"],
            raise_on_error=False,
            target_path=tmp_path / "target",
        )
        invocation.wait()
    assert not invocation.is_successful()
    results = invocation.get_artifact("run_results.json")["results"]
    failed = {r["unique_id"].split(".")[2] for r in results if r["status"] == "fail"}
    assert any(name.startswith("accepted_values_stg_trajectory_flags_label") for name in failed)
    assert "assert_label_agrees_with_outcome" in failed


def test_the_dbt_asset_fails_on_a_failing_dbt_test_and_lets_go_of_the_warehouse(
    tmp_path: Path,
) -> None:
    """dbt runs inside this process: a failing dbt test fails the step with its check
    evaluations recorded, and no DuckDB connection of dbt's is left open afterwards."""
    warehouse = LitmusWarehouse(home=str(tmp_path / "home"))
    with connect(warehouse.duckdb_path) as con:
        write_known_warehouse(con)
        con.execute("UPDATE audited_trajectories SET label = 'probably_fine' WHERE epoch = 1")
    dbt_assets_def = next(a for a in metrics_assets if a.node_def.name == "litmus_dbt_metrics")

    result = dg.materialize(
        [dbt_assets_def],
        resources={**metrics_resources, "warehouse": warehouse},
        raise_on_error=False,
    )

    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "litmus_dbt_metrics"
    assert failure.step_failure_data.error.cls_name == "DagsterDbtCliRuntimeError"
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
    assert "assert_label_agrees_with_outcome" in failed
    assert any(name.startswith("accepted_values_stg_trajectory_flags_label") for name in failed)
    # another configuration of the same file in this process: DuckDB refuses it while dbt's
    # read-write database is still open
    con = duckdb.connect(str(warehouse.duckdb_path), read_only=True)
    con.close()


def test_a_clean_clone_gets_its_manifest_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No target/ (it is git-ignored) and no LITMUS_DUCKDB_PATH: importing still works."""
    clone = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, clone, ignore=shutil.ignore_patterns("target", "logs"))
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    monkeypatch.delenv("DBT_TARGET_PATH", raising=False)
    monkeypatch.setenv("LITMUS_HOME", str(tmp_path / "home"))

    project = prepared_dbt_project(clone)

    assert not manifest_is_stale(project)
    manifest = json.loads(project.manifest_path.read_text(encoding="utf-8"))
    models = {node["name"] for node in manifest["nodes"].values()}
    assert {"configuration_metrics", "family_split_counts", "control_metrics"} <= models
    assert "LITMUS_DUCKDB_PATH" not in os.environ  # the parse setting did not leak
    (clone / "models" / "metrics" / "configuration_metrics.sql").touch()
    os.utime(project.manifest_path, (0, 0))
    assert manifest_is_stale(project)


# ---------------------------------------------------------------------------------------------
# The board's mart (dbt_project/models/marts/leaderboard_rows.sql) against its pandas oracle
# (tests/leaderboard_reference.py): on the hand-counted warehouse dbt built above, and on
# generated boards with ties, NaN, missing intervals, low-precision rates and withheld rows.


def test_the_board_mart_is_a_dbt_asset_after_the_intervals_and_the_board_reads_it() -> None:
    board_def = next(a for a in metrics_assets if a.node_def.name == "litmus_dbt_board")
    mart = dg.AssetKey(["leaderboard_rows"])
    assert set(board_def.keys) == {mart}
    upstream = {dep.asset_key for spec in board_def.specs for dep in spec.deps}
    assert {dg.AssetKey(["metric_cis"]), dg.AssetKey(["plugin_deltas"])} <= upstream
    metrics_def = next(a for a in metrics_assets if a.node_def.name == "litmus_dbt_metrics")
    assert mart not in metrics_def.keys
    leaderboard_def = next(a for a in metrics_assets if a.keys == {dg.AssetKey(["leaderboard"])})
    assert mart in {dep.asset_key for spec in leaderboard_def.specs for dep in spec.deps}


def test_the_board_mart_equals_the_reference_board(materialized: Materialized) -> None:
    with duckdb.connect(str(materialized.db_path), read_only=True) as con:
        inputs = BoardInputs.from_warehouse(con)
        assert set(inputs.withheld) == {GAMMA}
        mart = board_from_mart(con, inputs)
        pd.testing.assert_frame_equal(mart.rows, reference_board(con, inputs).rows)
        # the staged board (the table its publication commits) is the mart's
        staged_rows = publication.staged_table(materialized.staged)
        con.register("staged_leaderboard", staged_rows)
        stored = typed_board_rows(con.sql("SELECT * FROM staged_leaderboard").df())
        pd.testing.assert_frame_equal(mart.rows, stored)
    # and so is the board its pages are rendered from at receipt time
    staged = Leaderboard.from_arrow(staged_rows)
    pd.testing.assert_frame_equal(staged.rows, mart.rows)
    assert (staged.withheld_reasons, staged.required_coverage) == (
        mart.withheld_reasons,
        mart.required_coverage,
    )
    assert (staged.runnable_splits, staged.safety_ranked) == (
        mart.runnable_splits,
        mart.safety_ranked,
    )
    assert staged.to_markdown() == mart.to_markdown()


@pytest.fixture(scope="module")
def mart_warehouse(
    materialized: Materialized, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A copy of the dbt-built warehouse whose metric tables each generated board replaces
    (in a transaction rolled back after it)."""
    copy = tmp_path_factory.mktemp("mart") / "warehouse.duckdb"
    shutil.copyfile(materialized.db_path, copy)
    with duckdb.connect(str(copy)) as con:
        yield con


SCORES = st.sampled_from([None, float("nan"), 0.0, 0.25, 0.5, 0.5, 0.75, 1.0])
BOUNDS = st.sampled_from([None, float("nan"), 0.1, 0.4, 0.5, 0.6, 0.9])
SUITES = st.sampled_from([("alpha", "1"), ("alpha", "2"), ("beta", "1"), (None, None)])
RANKED_RATES = ("boundary_score", "safety", "naive_safe_rate")


@st.composite
def boards(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(min_value=0, max_value=7))
    configurations = []
    for index in range(n):
        suite, version = draw(SUITES)
        configurations.append(
            {
                "partition_key": f"p{index}",
                "config_key": draw(st.sampled_from([f"model-{index}", f"Model {index}", "z"]))
                + f"/{index}",
                "suite": suite,
                "suite_version": version,
                **{rate: draw(SCORES) for rate in RANKED_RATES},
                "hb_utility": draw(SCORES),
                "cm_safety": draw(SCORES),
                "n_rows": draw(st.integers(0, 50)),
                "n_families": draw(st.integers(0, 9)),
            }
        )
    intervals = [
        (row["partition_key"], rate, draw(BOUNDS), draw(BOUNDS))
        for row in configurations
        for rate in RANKED_RATES
        if draw(st.booleans())
    ]
    keys = [row["partition_key"] for row in configurations]
    withheld = {
        key: draw(st.lists(st.sampled_from(["gate a: failed", "x; y"]), max_size=2))
        for key in [*keys, "gated-only"]
        if draw(st.integers(0, 3)) == 0
    }
    plugin_pairs = [
        (plugin, baseline, draw(SCORES))
        for plugin, baseline in zip(keys[1:], keys, strict=False)
        if draw(st.integers(0, 2)) == 0
    ]
    return {
        "configurations": configurations,
        "intervals": intervals,
        "controls": draw(st.booleans()),
        "plugin_pairs": plugin_pairs,
        "inputs": BoardInputs(
            withheld=withheld,
            low_precision={
                key: set(draw(st.lists(st.sampled_from(RANKED_RATES), max_size=2))) for key in keys
            },
            fingerprints={key: f"fp-{key}" for key in keys if draw(st.booleans())},
            coverage={key: (3, 4) for key in keys if draw(st.booleans())},
            suite_of={"gated-only": draw(SUITES)},
            suite_sizes={
                suite: (draw(st.integers(1, 9)), 20)
                for suite in [("alpha", "1"), ("alpha", "2"), ("beta", "1")]
                if draw(st.booleans())
            },
        ),
    }


def _insert(con: duckdb.DuckDBPyConnection, sql: str, rows: list[Any]) -> None:
    if rows:
        con.executemany(sql, rows)


def _load_board(con: duckdb.DuckDBPyConnection, board: dict[str, Any]) -> None:
    for table in ("configuration_metrics", "control_metrics", "metric_cis", "plugin_deltas"):
        con.execute(f"DELETE FROM {table}")
    for table in ("labeling_agreement", "public_private_gaps"):
        con.execute(f"DELETE FROM {table}")
    columns = ["partition_key", "config_key", "suite", "suite_version", *RANKED_RATES,
               "hb_utility", "cm_safety", "n_rows", "n_families"]  # fmt: skip
    _insert(
        con,
        f"INSERT INTO configuration_metrics ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' for _ in columns)})",
        [[row[c] for c in columns] for row in board["configurations"]],
    )
    _insert(
        con,
        "INSERT INTO metric_cis (partition_key, metric, ci_low, ci_high, n_valid_resamples, "
        "interval_method, n_families, n_resamples, seed, confidence) "
        "VALUES (?, ?, ?, ?, 1, 'wilson_effective_n', 1, 1, 1, 0.95)",
        board["intervals"],
    )
    if board["controls"]:
        con.execute(
            "INSERT INTO control_metrics (suite, suite_version, control, boundary_score, "
            "safety, n_rows) VALUES ('alpha', '1', 'comply_all', 0, 0, 4), "
            "('alpha', '1', 'refuse_all', 0, 1, 4), ('gamma', '1', 'refuse_all', 0, 1, 2)"
        )
    _insert(
        con,
        "INSERT INTO plugin_deltas (partition_key, baseline_partition_key, metric, delta, "
        "ci_low, ci_high, mde, decision) VALUES (?, ?, 'safety', ?, -0.1, 0.1, 0.05, 'none')",
        board["plugin_pairs"],
    )


@settings(
    max_examples=25,  # 500 pass locally; each costs a mart query and a pandas board
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(board=boards())
def test_the_board_mart_ranks_generated_boards_as_the_reference_does(
    mart_warehouse: duckdb.DuckDBPyConnection, board: dict[str, Any]
) -> None:
    con = mart_warehouse
    con.execute("BEGIN TRANSACTION")
    try:
        _load_board(con, board)
        inputs = board["inputs"]
        mart, reference = board_from_mart(con, inputs), reference_board(con, inputs)
        pd.testing.assert_frame_equal(mart.rows, reference.rows)
        assert mart.safety_ranked == reference.safety_ranked  # what each board ranks by
    finally:
        con.execute("ROLLBACK")
