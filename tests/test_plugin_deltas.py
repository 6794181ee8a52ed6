"""Plug-in deltas on the board, end to end through the real pipeline: a generated sample with a
bare and an aligner configuration of the same model, release, harness and suite is ingested,
labeled, scored by dbt and published; the board files (CSV, Markdown, HTML) carry the paired
delta, its interval, MDE and the multiplicity-adjusted decision of every headline metric, the
same numbers as the ``plugin_deltas`` table, and the receipt still verifies."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litmus.metrics.leaderboard import PLUGIN_DELTA_METRICS
from litmus.releases.drift import DRIFT_METRICS, METRIC_LABELS
from litmus.releases.plugin_deltas import NO_MATERIAL_CHANGE, UNDERPOWERED, WORSE
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect
from litmus_dagster.cli import main as litmus_main
from litmus_dagster.pipeline import run_pipeline
from litmus_dagster.trust.cli import UNVERIFIED_EXIT

N_FAMILIES = 60
ALIGNER_RUN = "aurora_2026-09-01_react-2.3_aligner.jsonl"


def write_aligner_run(regressed_run: Path, out: Path) -> None:
    """The regressed aurora behaviour, run as the aligner plug-in of aurora 2026-09-01: same
    model, release, harness and suite as the bare (calibrated) run, another plug-in."""
    with regressed_run.open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as sink:
        for line in source:
            record = json.loads(line)
            record["run_id"] = "aurora-2026-09-01-aligner-run1"
            record["config"] = {**record["config"], "model_release": "2026-09-01"}
            record["config"]["plugin"] = "aligner"
            sink.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> LitmusPaths:
    paths = litmus_paths(tmp_path_factory.mktemp("plugin-deltas")).ensure()
    manifest = generate_sample(paths.home / "sample", n_families=N_FAMILIES)
    (paths.suites / manifest.suite_path.name).write_bytes(manifest.suite_path.read_bytes())
    bare = manifest.run_paths["calibrated"]
    (paths.landing / bare.name).write_bytes(bare.read_bytes())
    write_aligner_run(manifest.run_paths["regressed"], paths.landing / ALIGNER_RUN)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("LITMUS_DUCKDB_PATH", raising=False)
        patch.setenv("LITMUS_HOME", str(paths.home))
        run_pipeline(paths, instance=dg.DagsterInstance.ephemeral(), progress=lambda _: None)
    return paths


def table_rows(paths: LitmusPaths, sql: str) -> list[dict[str, Any]]:
    with connect(paths.duckdb_path) as con:
        cursor = con.execute(sql)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_the_board_files_carry_every_headline_metrics_plugin_delta(
    published: LitmusPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert PLUGIN_DELTA_METRICS == DRIFT_METRICS  # the board shows what the asset computes
    deltas = {
        row["metric"]: row
        for row in table_rows(published, "SELECT * FROM plugin_deltas ORDER BY metric")
    }
    assert set(deltas) == set(DRIFT_METRICS)
    assert {row["plugin"] for row in deltas.values()} == {"aligner"}
    assert {row["baseline_plugin"] for row in deltas.values()} == {"bare"}
    for row in deltas.values():
        assert row["ci_low"] < row["ci_high"] and row["mde"] > 0
        assert row["correction"] == "holm" and row["n_tests"] == len(DRIFT_METRICS)
        assert row["p_adjusted"] >= row["p_value"]
        assert row["decision"] in {"better", WORSE, UNDERPOWERED, NO_MATERIAL_CHANGE}
    # the regressed behaviour is markedly less safe on covert requests
    assert deltas["cm_safety"]["delta"] < -0.05 and deltas["cm_safety"]["decision"] == WORSE

    exports = published.exports
    with (exports / "leaderboard.csv").open(encoding="utf-8", newline="") as handle:
        board = {row["name"]: row for row in csv.DictReader(handle)}
    aligner = next(row for name, row in board.items() if name.endswith("/aligner"))
    bare = next(row for name, row in board.items() if name.endswith("/bare"))
    assert aligner["plugin_baseline"] == bare["name"]
    assert bare["plugin_baseline"] == ""  # the baseline is not compared with itself
    for metric, row in deltas.items():
        prefix = f"plugin_delta_{metric}"
        assert float(aligner[prefix]) == pytest.approx(row["delta"])
        assert float(aligner[f"{prefix}_ci_low"]) == pytest.approx(row["ci_low"])
        assert float(aligner[f"{prefix}_ci_high"]) == pytest.approx(row["ci_high"])
        assert float(aligner[f"{prefix}_mde"]) == pytest.approx(row["mde"])
        assert aligner[f"{prefix}_decision"] == row["decision"]

    markdown = (exports / "leaderboard.md").read_text(encoding="utf-8")
    page = (exports / "leaderboard.html").read_text(encoding="utf-8")
    cm = deltas["cm_safety"]
    cm_text = (
        f"{cm['delta'] * 100:+.1f} pts* [{cm['ci_low'] * 100:+.1f} pts, "
        f"{cm['ci_high'] * 100:+.1f} pts] MDE {cm['mde'] * 100:.1f} pts → worse"
    )
    assert "#### Plug-in deltas" in markdown and cm_text in markdown
    assert "<h3>Plug-in deltas</h3>" in page
    assert cm_text.split(" [")[0] in page and "MDE" in page and "→ worse" in page
    for metric in DRIFT_METRICS:
        assert METRIC_LABELS[metric] in markdown.split("#### Plug-in deltas")[1]

    # no published interval has zero width: every rate of both configurations (their
    # register disparity included) and every plug-in delta
    collapsed = table_rows(
        published,
        "SELECT partition_key, metric, interval_method FROM metric_cis "
        "WHERE estimate IS NOT NULL AND NOT (ci_high > ci_low)",
    )
    assert collapsed == []
    methods = {row["interval_method"] for row in table_rows(published, "SELECT * FROM metric_cis")}
    assert methods <= {"wilson_effective_n", "unified_folded_normal", "concordant_families_wilson"}

    # the forest plot is staged and published with the board; its receipt vouches for it
    receipt = json.loads((exports / "receipt.json").read_text(encoding="utf-8"))
    plot = (exports / "plugin_deltas.png").read_bytes()
    assert receipt["exported_files"]["plugin_deltas.png"]["bytes"] == len(plot)
    assert not (exports / ".staging").exists()

    # the receipt published with the board recomputes from the warehouse: nothing differs
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    monkeypatch.setenv("LITMUS_HOME", str(published.home))
    assert litmus_main(["verify", str(exports / "receipt.json")]) == UNVERIFIED_EXIT


def test_plugin_deltas_are_computed_before_the_board_that_shows_them() -> None:
    from litmus_dagster.definitions import defs
    from litmus_dagster.jobs import PUBLISH

    graph = defs.resolve_asset_graph()
    assert dg.AssetKey("plugin_deltas") in PUBLISH.resolve(graph)
    assert dg.AssetKey("plugin_deltas") in graph.get(dg.AssetKey("leaderboard")).parent_keys
    # the same gate decisions as the board: a withheld configuration is not compared
    parents = graph.get(dg.AssetKey("plugin_deltas")).parent_keys
    assert {dg.AssetKey("metric_rate_gates"), dg.AssetKey("labeling_agreement")} <= parents
