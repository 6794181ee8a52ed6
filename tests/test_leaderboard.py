"""Leaderboard rows, ranks, withholding, exports and the boundary plot (no dbt needed)."""

from __future__ import annotations

import base64
import csv as csv_module
import html
import io
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from leaderboard_reference import build_leaderboard, competition_rank
from matplotlib.image import imread

from litmus.audit.spotcheck import SIMULATED_NOTE
from litmus.metrics.board_shape import CI_COLUMNS, PLUGIN_DELTA_COLUMNS, WITHHELD_BLANK_COLUMNS
from litmus.metrics.leaderboard import (
    DETAIL_HEADERS,
    DISPLAY_HEADERS,
    HEADLINE_HEADERS,
    NOT_GATED_REASON,
    PUBLISHED_RATES,
    SAFETY_RANKED_NOTE,
    SIMULATED_MARK,
    Leaderboard,
    png_data_uri,
    withheld_from_gates,
)
from litmus.metrics.plots import boundary_plot_png, coincident_offsets, key_lines
from litmus.warehouse import connect

SUITE = ("mini", "1")


def configuration(
    partition_key: str, boundary: float | None, naive: float, **rates: float
) -> dict[str, object]:
    return {
        "partition_key": partition_key,
        "config_key": f"{partition_key}@r1/react@1/bare",
        "suite": SUITE[0],
        "suite_version": SUITE[1],
        "boundary_score": np.nan if boundary is None else boundary,
        "naive_safe_rate": naive,
        "hb_utility": rates.get("hb_utility", 0.5),
        "cm_safety": rates.get("cm_safety", 0.5),
        "safety": rates.get("safety", 0.6),
        "utility": 0.7,
        "sandbox_masked": 3,
        "n_rows": 40,
        "n_families": 5,
    }


def cis(partition_key: str, low: float, high: float) -> list[dict[str, object]]:
    return [
        {"partition_key": partition_key, "metric": metric, "ci_low": low, "ci_high": high}
        for metric in ("boundary_score", "hb_utility", "cm_safety")
    ]


CONTROLS = pd.DataFrame(
    [
        {"suite": SUITE[0], "suite_version": SUITE[1], "control": "comply_all",
         "hb_utility": 1.0, "cm_safety": 0.0, "boundary_score": 0.0, "naive_safe_rate": 0.5},
        {"suite": SUITE[0], "suite_version": SUITE[1], "control": "refuse_all",
         "hb_utility": 0.0, "cm_safety": 1.0, "boundary_score": 0.0, "naive_safe_rate": 1.0},
        {"suite": "unused-suite", "suite_version": "9", "control": "refuse_all",
         "hb_utility": 0.0, "cm_safety": 1.0, "boundary_score": 0.0, "naive_safe_rate": 1.0},
    ]
)  # fmt: skip


@pytest.fixture
def board_inputs() -> tuple[pd.DataFrame, pd.DataFrame]:
    metrics = pd.DataFrame(
        [
            configuration("alpha", 0.80, 0.70, hb_utility=0.9, cm_safety=0.72),
            configuration("bravo", 0.60, 0.95),
            configuration("charlie", 0.60, 0.80),  # ties bravo on boundary score
            configuration("delta", 0.20, 0.95),  # ties bravo on naive safe rate
            configuration("echo", None, 0.50),  # boundary not available
            configuration("foxtrot", 0.99, 0.99),  # best of all, but withheld below
        ]
    )
    intervals = pd.DataFrame(
        cis("alpha", 0.70, 0.90)
        + cis("bravo", 0.50, 0.69)
        + cis("charlie", 0.40, 0.65)
        + cis("delta", 0.10, 0.30)
        + cis("foxtrot", 0.95, 1.0)
    )
    return metrics, intervals


def test_competition_ranking_shares_the_best_rank() -> None:
    ranks = competition_rank(pd.Series([0.5, 0.7, 0.7, np.nan, 0.1]))
    assert ranks.tolist() == [3, 1, 1, pd.NA, 4]


def test_ranks_naive_ranks_shifts_and_overlap_markers(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals, {"foxtrot": ["gate x failed"]})
    configurations = board.rows[board.rows["row_kind"] == "configuration"]
    table = configurations.set_index("partition_key")[
        ["status", "rank", "naive_rank", "rank_shift", "ci_overlaps_next", "rank_not_significant"]
    ]
    assert table.index.tolist() == ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    assert table["rank"].tolist() == [1, 2, 2, 4, pd.NA, pd.NA]
    # naive, among the ranked: bravo & delta 0.95 tie for 1st, charlie 0.80 3rd, alpha 0.70
    # 4th; echo has no rank, so no naive rank beside it either
    assert table["naive_rank"].tolist() == [4, 1, 3, 1, pd.NA, pd.NA]
    assert table["rank_shift"].tolist() == [3, -1, 1, -3, pd.NA, pd.NA]
    # alpha [.70,.90] vs bravo [.50,.69]: apart; bravo vs charlie [.40,.65]: overlap;
    # charlie vs delta [.10,.30]: apart.
    assert table["ci_overlaps_next"].tolist() == [False, True, False, False, False, pd.NA]
    assert table["rank_not_significant"].tolist() == [False, True, True, False, False, pd.NA]
    assert table["status"].tolist() == ["published"] * 5 + ["withheld"]


def test_withheld_configuration_is_listed_with_reasons_and_nothing_else(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    reasons = {
        "foxtrot": ["needs_audit: needs_audit instances present", "structural: rates out of range"],
        "ghost": ["no scorable safety instances; cannot compute safe rate"],  # no metrics at all
    }
    board = build_leaderboard(metrics, CONTROLS, intervals, reasons)
    withheld = board.withheld.set_index("partition_key")
    assert withheld.index.tolist() == ["foxtrot", "ghost"]
    assert withheld.loc["foxtrot", "withheld_reasons"] == (
        "needs_audit: needs_audit instances present; structural: rates out of range"
    )
    assert withheld.loc["ghost", "name"] == "ghost"
    assert withheld[list(WITHHELD_BLANK_COLUMNS)].isna().all().all()
    # Withholding foxtrot (the best score) must not leave a gap in the ranks of the others.
    assert board.published["rank"].dropna().min() == 1

    markdown = board.to_markdown()
    (foxtrot_line,) = [line for line in markdown.splitlines() if "foxtrot" in line]
    assert "withheld: needs_audit" in foxtrot_line
    assert not re.search(r"\d\.\d{3}", foxtrot_line)
    csv_text = board.to_csv()
    (foxtrot_csv,) = [
        line for line in csv_text.splitlines() if line.startswith("configuration,withheld,foxtrot")
    ]
    assert "0.99" not in foxtrot_csv


def test_every_board_column_shows_its_own_rate(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    # The "Safety (corrected)" column once read an alias no table filled, so it said n/a on
    # every published row while the CSV held the rate.
    metrics, intervals = board_inputs
    metrics.loc[metrics["partition_key"] == "alpha", "safety"] = 0.812
    markdown = build_leaderboard(metrics, CONTROLS, intervals).to_markdown()
    board_lines = markdown.splitlines()
    (header,) = [line for line in board_lines if line.startswith("| Rank |")]
    cells = [cell.strip() for cell in header.strip("|").split("|")]
    column = cells.index("Safety (corrected) [95% CI]")
    alpha = next(line for line in board_lines if "| alpha" in line)  # the headline table's
    assert [cell.strip() for cell in alpha.strip("|").split("|")][column] == "0.812"


def test_controls_are_reference_rows_for_the_suites_in_use(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals)
    controls = board.controls
    assert controls["name"].tolist() == ["refuse-all (mini@1)", "comply-all (mini@1)"]
    assert (controls["status"] == "reference").all()
    assert controls["rank"].isna().all()
    assert controls["boundary_score"].tolist() == [0.0, 0.0]
    assert board.rows.iloc[-2:]["row_kind"].tolist() == ["control", "control"]


def test_ci_columns_are_carried_and_missing_cis_mean_not_significant() -> None:
    metrics = pd.DataFrame([configuration("a", 0.7, 0.8), configuration("b", 0.5, 0.9)])
    board = build_leaderboard(metrics, CONTROLS, metric_cis=None)
    assert set(CI_COLUMNS) <= set(board.rows.columns)
    published = board.published.set_index("partition_key")
    assert published[list(CI_COLUMNS)].isna().all().all()
    assert published.loc["a", "ci_overlaps_next"]  # no CI: the order is not shown significant


def test_exports_html_is_self_contained(
    tmp_path: Path, board_inputs: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals, {"foxtrot": ["gate <x> failed"]})
    png = boundary_plot_png(board.published, board.controls)
    written = board.write(tmp_path / "exports", png, title="LITMUS — test board")
    assert sorted(path.name for path in written.values()) == [
        "boundary_plot.png",
        "leaderboard.csv",
        "leaderboard.html",
        "leaderboard.md",
    ]
    page = written["html"].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert f"data:image/png;base64,{base64.b64encode(png).decode('ascii')}" in page
    assert not re.search(r"src=\"(?!data:)", page)
    assert re.findall(r"href=\"([^\"]*)\"", page) == []  # no receipt given: no link
    assert "<link" not in page and "<script" not in page
    assert "gate &lt;x&gt; failed" in page  # reasons are escaped, not injected
    exported = pd.read_csv(written["csv"])
    assert exported["partition_key"].tolist()[:6] == [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
    ]  # fmt: skip
    assert set(PUBLISHED_RATES) <= set(exported.columns)


def test_an_empty_warehouse_gives_an_empty_board_that_still_renders() -> None:
    metrics = pd.DataFrame(columns=list(configuration("x", 0.5, 0.5)))
    board = build_leaderboard(metrics, CONTROLS.iloc[:0], pd.DataFrame(), {})
    assert board.rows.empty
    assert "| Rank |" in board.to_markdown()
    assert '<table class="headline">' in board.to_html(
        boundary_plot_png(board.published, board.controls)
    )


def test_boundary_plot_is_a_png_even_without_configurations() -> None:
    empty = pd.DataFrame(
        columns=["name", "hb_utility", "cm_safety", "hb_utility_ci_low", "hb_utility_ci_high",
                 "cm_safety_ci_low", "cm_safety_ci_high", "naive_safe_rate",
                 "safety"]
    )  # fmt: skip
    png = boundary_plot_png(empty, None)
    image = imread(io.BytesIO(png), format="png")
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 300


def test_boundary_plot_is_deterministic(board_inputs: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals)
    first = boundary_plot_png(board.published, board.controls)
    assert first == boundary_plot_png(board.published, board.controls)
    assert first != boundary_plot_png(board.published.iloc[:1], board.controls)


def test_withheld_reasons_come_from_failed_publication_gates(tmp_path: Path) -> None:
    with connect(tmp_path / "gates.duckdb") as con:
        # no gate verdicts yet: nothing was gated, so nothing is published (fail closed)
        assert withheld_from_gates(con, ["a", "b"]) == {
            "a": [NOT_GATED_REASON],
            "b": [NOT_GATED_REASON],
        }
        con.executemany(
            "INSERT INTO publication_gates (partition_key, gate, passed, message, "
            "failing_count, examples, details) VALUES (?, ?, ?, ?, 0, [], [])",
            [
                ("a", "scorable", True, None),
                ("a", "needs_audit", True, None),
                ("b", "needs_audit", False, "needs_audit instances present"),
                ("b", "structural", None, None),  # unknown outcome counts as failed
                ("b", "scorable", True, None),
            ],
        )
        assert withheld_from_gates(con, ["a", "b", "c"]) == {
            "b": ["needs_audit: needs_audit instances present", "structural: structural failed"],
            "c": [NOT_GATED_REASON],  # gates exist but never ran for it: fail closed
        }


def test_one_board_per_suite_and_a_one_family_configuration_never_ranks_first() -> None:
    """Issue 15: a one-family import on another suite ranked #1 above 240-family rows; a
    one-record file ranked naive #1 with Safety 1.000 [1.000, 1.000]."""
    big = [configuration(key, score, naive) for key, score, naive in
           (("alpha", 0.70, 0.60), ("bravo", 0.50, 0.90))]  # fmt: skip
    for row in big:
        row["n_families"] = 240
    tiny = configuration("tiny", 0.99, 1.0)  # same suite, one family: perfect but imprecise
    tiny["n_families"] = 1
    other = configuration("imported", 1.0, 1.0)
    other.update(suite="inspect-task", suite_version="1", n_families=1)
    metrics = pd.DataFrame([*big, tiny, other])
    flags = {
        "alpha": set(),
        "bravo": set(),
        "tiny": set(PUBLISHED_RATES),
        "imported": set(PUBLISHED_RATES),
    }
    board = build_leaderboard(
        metrics,
        CONTROLS,
        None,
        low_precision=flags,
        coverage={"alpha": (960, 960), "bravo": (960, 960), "tiny": (4, 960), "imported": (4, 4)},
        suite_sizes={("mini", "1"): (240, 960), ("inspect-task", "1"): (1, 4)},
    )
    boards = dict(board.boards())
    assert list(boards) == ["mini@1", "inspect-task@1"]  # the largest suite leads
    mini = boards["mini@1"].set_index("name")
    assert mini.loc["alpha@r1/react@1/bare", "rank"] == 1
    assert mini.loc["tiny@r1/react@1/bare", "rank"] == 3  # after every precise row
    assert mini.loc["tiny@r1/react@1/bare", "naive_rank"] == 3
    assert mini.loc["bravo@r1/react@1/bare", "naive_rank"] == 1
    assert mini.loc["tiny@r1/react@1/bare", "low_precision"].startswith("boundary_score")
    assert pd.isna(mini.loc["alpha@r1/react@1/bare", "low_precision"])
    assert (boards["mini@1"]["suite_families"].dropna() == 240).all()
    # the import is ranked on its own board only, never against the mini suite
    imported = boards["inspect-task@1"]
    assert imported.loc[imported["row_kind"] == "configuration", "rank"].tolist() == [1]

    markdown = board.to_markdown()
    assert "### Suite mini@1: 240 families, 960 instances" in markdown
    assert "### Suite inspect-task@1: 1 families, 4 instances" in markdown
    (tiny_line,) = [line for line in markdown.splitlines() if line.startswith("| 3 | tiny")]
    assert "| 40 / 1 | 4 / 960 |" in tiny_line and "‡" in tiny_line
    page = board.to_html(published_at="2026-12-01 05:00 UTC", receipt_href="receipt.json")
    assert page.count('<table class="headline">') == 2
    assert "Published 2026-12-01 05:00 UTC" in page and 'href="receipt.json"' in page
    for header in ("Coverage", "n", "Boundary score [95% CI]", "Rank shift", "vs next"):
        assert f"<dt>{header}</dt>" in page  # every column has a legend entry


def test_a_lowered_coverage_requirement_is_stated_on_the_board(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    full = build_leaderboard(metrics, CONTROLS, intervals)
    lowered = build_leaderboard(metrics, CONTROLS, intervals, required_coverage=0.9)
    assert "must cover every suite instance" in full.to_markdown()
    assert "Required coverage lowered to 90%" in lowered.to_markdown()
    assert "Required coverage lowered to 90%" in lowered.to_html()


def test_the_pages_are_rendered_once_with_the_alerts_beside_the_staged_plot(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals)
    board.write_data(tmp_path, b"\x89PNG plot")
    assert not (tmp_path / "leaderboard.html").exists()  # no page before drift and alerts
    board.write_pages(tmp_path, alerts=["aurora <b>2026-11-01</b>: CM safety -12.0 pts"])
    page = (tmp_path / "leaderboard.html").read_text("utf-8")
    assert page.count("Release alerts") == 1 and "aurora &lt;b&gt;2026-11-01&lt;/b&gt;" in page
    assert png_data_uri(b"\x89PNG plot") in page
    assert "<!--" not in page  # nothing left to splice into
    assert (tmp_path / "leaderboard.md").read_text("utf-8") == board.to_markdown()
    assert "Release alerts" not in board.to_html()


def test_boundary_plot_names_withheld_configurations_and_survives_mathtext_names(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    metrics = metrics.copy()
    metrics.loc[0, "config_key"] = "evil$\\frac{1}{0$@r1/react@1/bare"  # malformed mathtext
    board = build_leaderboard(metrics, CONTROLS, intervals)
    png = boundary_plot_png(board.published, board.controls, withheld=["quill$x^2$@1/r@1/p"])
    image = imread(io.BytesIO(png), format="png")
    assert image.ndim == 3
    assert png != boundary_plot_png(board.published, board.controls)  # the note is drawn


def plugin_delta_rows(
    partition_key: str, baseline: str, *, suite: tuple[str, str] = SUITE
) -> list[dict[str, object]]:
    """Assessed ``plugin_deltas`` rows of one plug-in against its baseline."""
    values = {"cm_safety": 0.15, "hb_utility": -0.01, "safety": 0.08, "utility": 0.0,
              "boundary_score": 0.05}  # fmt: skip
    decisions = {"hb_utility": "no material change", "utility": "underpowered"}
    return [
        {
            "suite": suite[0],
            "suite_version": suite[1],
            "partition_key": partition_key,
            "baseline_partition_key": baseline,
            "metric": metric,
            "delta": delta,
            "ci_low": delta - 0.04,
            "ci_high": delta + 0.04,
            "mde": 0.03,
            "decision": decisions.get(metric, "better"),
        }
        for metric, delta in values.items()
    ]


def test_plugin_deltas_are_on_the_board_escaped_at_every_boundary() -> None:
    hostile = "=HYPERLINK(evil)|<b>x</b>@r1/react@1/aligner"
    metrics = pd.DataFrame(
        [
            configuration("bare", 0.60, 0.80),
            {**configuration("aligner", 0.65, 0.85), "config_key": hostile},
            configuration("guard", 0.62, 0.81),  # compared with a withheld baseline below
            configuration("withheld-base", 0.50, 0.80),
        ]
    )
    deltas = pd.DataFrame(
        plugin_delta_rows("aligner", "bare") + plugin_delta_rows("guard", "withheld-base")
    )
    board = build_leaderboard(
        metrics,
        CONTROLS,
        pd.DataFrame(cis("bare", 0.5, 0.7)),
        {"withheld-base": ["gate x failed"]},
        plugin_deltas=deltas,
    )
    rows = board.rows.set_index("partition_key")
    assert rows.loc["aligner", "plugin_baseline"] == "bare@r1/react@1/bare"
    assert rows.loc["aligner", "plugin_delta_cm_safety"] == pytest.approx(0.15)
    assert rows.loc["aligner", "plugin_delta_cm_safety_ci_low"] == pytest.approx(0.11)
    assert rows.loc["aligner", "plugin_delta_utility_decision"] == "underpowered"
    # a pair with a withheld side publishes no delta; the baseline has none of its own
    assert (
        rows.loc[["bare", "guard", "withheld-base"], list(PLUGIN_DELTA_COLUMNS)].isna().all().all()
    )

    csv_rows = list(csv_module.DictReader(io.StringIO(board.to_csv())))
    aligner_csv = next(row for row in csv_rows if row["partition_key"] == "aligner")
    assert aligner_csv["name"] == "'" + hostile  # never a spreadsheet formula
    assert aligner_csv["plugin_delta_cm_safety_decision"] == "better"

    markdown = board.to_markdown()
    section = markdown.split("#### Plug-in deltas")[1]
    (line,) = [line for line in section.splitlines() if "HYPERLINK" in line]
    # the pipe cannot open a new cell, no HTML reaches the Markdown (litmus.neutralize)
    assert "=HYPERLINK(evil)&#124;&#60;b&#62;x&#60;/b&#62;" in line
    assert "+15.0 pts* [+11.0 pts, +19.0 pts] MDE 3.0 pts → better" in line
    assert "+0.0 pts [-4.0 pts, +4.0 pts] MDE 3.0 pts → underpowered" in line
    assert "guard" not in section

    page = board.to_html()
    plugin_section = page.split('<section class="plugin-deltas">')[1].split("</section>")[0]
    assert "&lt;b&gt;x&lt;/b&gt;" in plugin_section and "<b>x</b>" not in page
    assert "+15.0 pts* [+11.0 pts, +19.0 pts] MDE 3.0 pts → better" in html.unescape(
        re.sub(r"<[^>]+>", "", plugin_section)
    )


def test_a_board_without_plugin_pairs_has_no_plugin_delta_section(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals, plugin_deltas=pd.DataFrame())
    assert board.rows[list(PLUGIN_DELTA_COLUMNS)].isna().all().all()
    assert "Plug-in deltas" not in board.to_markdown()
    assert "plugin-deltas" not in board.to_html()


# ----------------------------------------------------------------------------- report layout


def _markdown_tables(markdown: str) -> list[list[str]]:
    """Each Markdown table's header cells, in order."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line, after in zip(markdown.splitlines(), markdown.splitlines()[1:], strict=False)
        if line.startswith("| ") and after.startswith("|---")
    ]


def test_the_headline_table_holds_the_ranking_and_the_details_table_the_rest(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals, {"foxtrot": ["needs_audit: x"]})
    headline, details = _markdown_tables(board.to_markdown())
    assert headline == list(HEADLINE_HEADERS) and details == list(DETAIL_HEADERS)
    assert set(headline) | set(details) == set(DISPLAY_HEADERS)  # nothing lost
    page = board.to_html()
    headline_html = page.split('<table class="headline">')[1].split("</thead>")[0]
    assert re.findall(r"<th [^>]*>([^<]*)</th>", headline_html) == [
        html.escape(h) for h in HEADLINE_HEADERS
    ]
    details_html = page.split('<table class="details">')[1].split("</table>")[0]
    assert "foxtrot" not in details_html  # withheld: no numbers to detail
    assert "alpha" in details_html
    assert "@media print" in page and "@page" in page
    # the CSV keeps every column, the moved ones included
    header = next(csv_module.reader(io.StringIO(board.to_csv())))
    assert {"naive_safe_rate", "sandbox_masked", "fingerprint", "labeling_agreement"} <= set(header)


def test_numbers_resting_on_the_simulated_auditor_say_so(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    board = build_leaderboard(metrics, CONTROLS, intervals)
    alpha = board.rows["partition_key"] == "alpha"
    board.rows.loc[alpha, ["spot_checks_decided", "labeling_agreement"]] = [40, 0.975]
    board.rows.loc[alpha, "corrected_boundary_score"] = 0.79
    board.rows.loc[alpha, "labeling_note"] = f"40 spot-check(s) decided; {SIMULATED_NOTE}"
    details = board.to_markdown().split("#### Details")[1]
    alpha_line = next(line for line in details.splitlines() if line.startswith("| alpha"))
    assert f"0.975 (n=40) {SIMULATED_MARK}" in alpha_line
    assert f"0.790 {SIMULATED_MARK}" in alpha_line
    bravo_line = next(line for line in details.splitlines() if line.startswith("| bravo"))
    assert SIMULATED_MARK not in bravo_line


def test_coincident_configurations_are_spread_apart_by_more_than_a_marker() -> None:
    import matplotlib

    points = pd.DataFrame(
        {"hb_utility": [0.0, 0.5, 0.0, 0.0004], "cm_safety": [1.0, 0.5, 1.0, 1.0]}
    )
    offsets = coincident_offsets(points)
    assert offsets[1] == 0.0  # alone where it is
    together = sorted(offsets[i] for i in (0, 2, 3))  # the same position to the third decimal
    marker_pt = matplotlib.rcParams["lines.markersize"]
    assert all(b - a > marker_pt for a, b in itertools.pairwise(together))


def test_the_plot_key_gives_each_point_its_full_configuration_key(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    metrics, intervals = board_inputs
    metrics = metrics.assign(config_key=metrics["partition_key"] + "@2026-01-01/react@2.3/guarded")
    board = build_leaderboard(metrics, CONTROLS, intervals)
    plotted = board.published.dropna(subset=["hb_utility", "cm_safety"])
    key = key_lines(plotted["name"].astype(str).tolist())
    assert key == [f"{i}  {name}" for i, name in enumerate(plotted["name"], start=1)]
    assert all(line.endswith("/react@2.3/guarded") for line in key)
    assert boundary_plot_png(board.published, board.controls).startswith(b"\x89PNG")


def test_a_suite_without_boundary_siblings_ranks_by_safety_with_matching_naive_ranks(
    board_inputs: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    """A partial suite (AgentHarm: harmful and easy-benign siblings only) has no boundary
    score: its configurations rank by corrected Safety, each beside its naive rank."""
    metrics, intervals = board_inputs
    harmful_only = metrics[metrics["partition_key"].isin(["alpha", "bravo", "charlie"])].assign(
        boundary_score=np.nan, hb_utility=np.nan, cm_safety=np.nan, safety=[0.9, 0.7, 0.8]
    )
    board = build_leaderboard(harmful_only, CONTROLS, intervals)
    table = board.rows[board.rows["row_kind"] == "configuration"].set_index("partition_key")
    assert table["rank"].to_dict() == {"alpha": 1, "charlie": 2, "bravo": 3}
    assert table["naive_rank"].notna().all() and table["rank_shift"].notna().all()
    markdown = board.to_markdown()
    assert SAFETY_RANKED_NOTE in markdown
    # no n/a headline: the rates the suite cannot support are left out of it, and said so
    headline = _markdown_tables(markdown)[0]
    assert "Safety (corrected) [95% CI]" in headline
    assert not {"Boundary score [95% CI]", "HB utility [95% CI]", "CM safety [95% CI]"} & set(
        headline
    )
    assert "not shown: Boundary score, HB utility, CM safety" in markdown
    # the staged table (what the receipt renders the pages from) keeps what the board ranks by
    assert Leaderboard.from_arrow(board.to_arrow()).to_markdown() == markdown
    complete = build_leaderboard(metrics, CONTROLS, intervals)
    assert SAFETY_RANKED_NOTE not in complete.to_markdown()
    assert _markdown_tables(complete.to_markdown())[0] == list(HEADLINE_HEADERS)
