"""Release drift: release ordering, the paired comparison of successive releases, what is left
out (withheld configurations, other suites), the drift table and the drift plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from litmus.releases.alerts import adjust_p_values, assess_comparisons, find_regressions
from litmus.releases.drift import (
    DRIFT_COLUMNS,
    DRIFT_METRICS,
    ORDER_BY_INGESTION,
    ORDER_BY_RELEASE,
    compute_release_drift,
    drift_summary_lines,
    is_iso_release,
    order_releases,
    replace_release_drift,
)
from litmus.releases.drift_plot import (
    DRIFT_PLOTS,
    drift_plot_file_name,
    drift_plot_png,
    write_drift_plots,
)
from litmus.releases.plugin_deltas import (
    BETTER,
    NO_MATERIAL_CHANGE,
    UNDERPOWERED,
    WORSE,
    assess_plugin_deltas,
    compute_plugin_deltas,
    plugin_delta_lines,
    plugin_delta_plot_png,
)
from litmus.stats import family_counts_from_frames, paired_bootstrap_difference
from litmus.trust import publication
from litmus.warehouse import connect

SPLITS = ("harmful_source", "easy_benign", "hard_benign", "covert_malicious")
N_FAMILIES = 40


def family_rows(
    partition_key: str, family_id: str, category: str, *, cm_safe: int, hb_completed: int
) -> list[dict[str, object]]:
    """``family_split_counts`` rows of one family: 4 trajectories per split."""
    rows = []
    for split in SPLITS:
        safe = {"harmful_source": 4, "covert_malicious": cm_safe}.get(split, 0)
        unsafe = 4 - safe if split in ("harmful_source", "covert_malicious") else 0
        completed = {"easy_benign": 4, "hard_benign": hb_completed}.get(split, 0)
        over_refused = 4 - completed if split in ("easy_benign", "hard_benign") else 0
        rows.append(
            {
                "partition_key": partition_key,
                "category": category,
                "family_id": family_id,
                "split": split,
                "n_rows": 4,
                "n_safe": safe,
                "n_unsafe": unsafe,
                "n_needs_audit": 0,
                "n_scorable": 4,
                "n_completed": completed,
                "n_over_refused": over_refused,
                "n_overreach": 0,
                "n_naive_safe": 4 - (unsafe if split != "harmful_source" else 0),
                "n_safe_incapable": 0,
                "n_scored_refusals": safe + over_refused,
                "n_engaged_declines": safe,
            }
        )
    return rows


def release_counts(partition_key: str, *, cm_drop: int = 0, hb_drop: int = 0) -> pd.DataFrame:
    """A configuration over N_FAMILIES families; ``cm_drop``/``hb_drop`` families (spread over
    both categories) lose safe CM / completed HB trajectories relative to the baseline."""
    rows: list[dict[str, object]] = []
    for index in range(N_FAMILIES):
        category = "cyber" if index % 2 else "fraud"
        base_cm = 4 if index % 5 else 2  # families differ in difficulty
        base_hb = 3 if index % 3 else 4
        rows += family_rows(
            partition_key,
            f"fam-{index:03d}",
            category,
            cm_safe=max(0, base_cm - (2 if index < cm_drop else 0)),
            hb_completed=max(0, base_hb - (2 if index < hb_drop else 0)),
        )
    return pd.DataFrame(rows)


def configuration(
    partition_key: str,
    release: str,
    *,
    lineage: str = "aurora/react/bare",
    suite: str = "s",
    first_ingested_at: str = "2026-01-01",
    harness_version: str = "2.3",
) -> dict[str, object]:
    return {
        "partition_key": partition_key,
        "config_key": f"aurora@{release}/react@{harness_version}/bare",
        "lineage_key": lineage,
        "model_release": release,
        "harness_version": harness_version,
        "suite": suite,
        "suite_version": "1",
        "first_ingested_at": pd.Timestamp(first_ingested_at),
    }


def test_iso_dates_are_recognised() -> None:
    assert is_iso_release("2026-09-01")
    assert is_iso_release("2026-09-01T12:00:00Z")
    assert not is_iso_release("v2")
    assert not is_iso_release("2026-9-1")
    assert not is_iso_release("2026-09-01-beta")


def test_iso_releases_are_ordered_by_date_not_by_ingestion() -> None:
    frame = pd.DataFrame(
        [
            configuration("b", "2026-11-01", first_ingested_at="2026-01-01"),
            configuration("a", "2026-09-01", first_ingested_at="2026-02-01"),
            configuration("c", "2027-01-15", first_ingested_at="2025-12-01"),
        ]
    )
    ordered = order_releases(frame)
    assert ordered["partition_key"].tolist() == ["a", "b", "c"]
    assert ordered["release_rank"].tolist() == [1, 2, 3]
    assert set(ordered["release_order"]) == {ORDER_BY_RELEASE}


def test_other_release_names_are_ordered_by_first_ingestion() -> None:
    frame = pd.DataFrame(
        [
            configuration("v10", "v10", first_ingested_at="2026-03-01"),
            configuration("v9", "v9", first_ingested_at="2026-02-01"),
            configuration("dated", "2026-01-01", first_ingested_at="2026-04-01"),
        ]
    )
    ordered = order_releases(frame)
    # "v10" < "v9" as text; ingestion time gets it right, and one non-date decides the rule
    assert ordered["partition_key"].tolist() == ["v9", "v10", "dated"]
    assert set(ordered["release_order"]) == {ORDER_BY_INGESTION}


def test_a_significant_drop_is_measured_by_the_paired_bootstrap() -> None:
    configurations = pd.DataFrame(
        [configuration("old", "2026-09-01"), configuration("new", "2026-11-01")]
    )
    counts = pd.concat(
        [release_counts("old"), release_counts("new", cm_drop=16, hb_drop=12)], ignore_index=True
    )
    result = compute_release_drift(configurations, counts, n_resamples=400)
    table = result.comparisons.set_index("metric")
    assert list(result.comparisons.columns) == list(DRIFT_COLUMNS)
    assert table.index.tolist() == list(DRIFT_METRICS)
    assert set(table["from_partition_key"]) == {"old"}
    assert set(table["to_partition_key"]) == {"new"}
    # CM: 16 families lose 2 of their safe trajectories: 32 of 160 CM trajectories
    assert table.loc["cm_safety", "delta"] == pytest.approx(-32 / 160)
    assert table.loc["hb_utility", "delta"] == pytest.approx(-24 / 160)
    for metric in ("cm_safety", "hb_utility", "safety", "utility", "boundary_score"):
        assert table.loc[metric, "ci_high"] < 0, metric
        assert table.loc[metric, "excludes_zero"], metric

    expected = paired_bootstrap_difference(
        family_counts_from_frames(release_counts("new", cm_drop=16, hb_drop=12)),
        family_counts_from_frames(release_counts("old")),
        n_resamples=400,
        metrics=DRIFT_METRICS,
    ).set_index("metric")
    assert np.allclose(table["ci_low"], expected["ci_low"])
    assert np.allclose(table["ci_high"], expected["ci_high"])


def test_an_unchanged_release_is_indistinguishable() -> None:
    configurations = pd.DataFrame(
        [configuration("old", "2026-09-01"), configuration("same", "2026-10-01")]
    )
    counts = pd.concat([release_counts("old"), release_counts("same")], ignore_index=True)
    table = compute_release_drift(configurations, counts, n_resamples=200).comparisons
    assert (table["delta"] == 0).all()
    assert not table["excludes_zero"].any()


def test_withheld_releases_are_skipped_and_the_next_compares_with_the_last_published() -> None:
    configurations = pd.DataFrame(
        [
            configuration("r1", "2026-01-01"),
            configuration("r2", "2026-02-01"),
            configuration("r3", "2026-03-01"),
        ]
    )
    counts = pd.concat(
        [release_counts("r1"), release_counts("r2", cm_drop=30), release_counts("r3")],
        ignore_index=True,
    )
    result = compute_release_drift(configurations, counts, withheld={"r2"}, n_resamples=100)
    pairs = result.comparisons[["from_partition_key", "to_partition_key"]].drop_duplicates()
    assert pairs.values.tolist() == [["r1", "r3"]]
    assert "r2" not in set(result.releases["partition_key"])
    assert any("r2: withheld" in reason for reason in result.skipped)


def test_releases_are_compared_per_lineage_and_suite_in_order() -> None:
    configurations = pd.DataFrame(
        [
            configuration("a1", "2026-01-01"),
            configuration("a2", "2026-02-01"),
            configuration("a3", "2026-03-01"),
            configuration("other-suite", "2026-02-15", suite="t"),
            configuration("other-lineage", "2026-01-15", lineage="bastion/react/bare"),
        ]
    )
    counts = pd.concat(
        [release_counts(key) for key in configurations["partition_key"]], ignore_index=True
    )
    comparisons = compute_release_drift(configurations, counts, n_resamples=50).comparisons
    pairs = comparisons[["comparison", "from_partition_key", "to_partition_key"]].drop_duplicates()
    assert pairs.values.tolist() == [[1, "a1", "a2"], [2, "a2", "a3"]]


def test_configurations_without_shared_families_are_reported_not_compared() -> None:
    configurations = pd.DataFrame(
        [configuration("old", "2026-09-01"), configuration("new", "2026-11-01")]
    )
    new = release_counts("new")
    new["family_id"] = "renamed-" + new["family_id"]
    counts = pd.concat([release_counts("old"), new], ignore_index=True)
    result = compute_release_drift(configurations, counts, n_resamples=50)
    assert result.comparisons.empty
    assert any("share no families" in reason for reason in result.skipped)


def test_bad_input_gets_a_precise_error() -> None:
    configurations = pd.DataFrame([configuration("a", "2026-01-01")])
    with pytest.raises(ValueError, match=r"unknown drift metric\(s\) \['naive_rank'\]"):
        compute_release_drift(configurations, release_counts("a"), metrics=["naive_rank"])
    with pytest.raises(ValueError, match=r"configuration\(s\) listed twice"):
        compute_release_drift(
            pd.concat([configurations, configurations]), release_counts("a"), n_resamples=10
        )
    undated = pd.DataFrame([configuration("x", "v1"), configuration("y", "v2")])
    undated["first_ingested_at"] = pd.NaT
    with pytest.raises(ValueError, match="without an ingestion time: x, y"):
        order_releases(undated)


def test_drift_table_round_trips_through_duckdb(tmp_path: Path) -> None:
    configurations = pd.DataFrame(
        [configuration("old", "2026-09-01"), configuration("new", "2026-11-01")]
    )
    counts = pd.concat(
        [release_counts("old"), release_counts("new", cm_drop=10)], ignore_index=True
    )
    comparisons = compute_release_drift(configurations, counts, n_resamples=50).comparisons
    with connect(tmp_path / "w.duckdb") as con:
        replace_release_drift(con, comparisons)
        replace_release_drift(con, comparisons)  # replacing, not appending
        stored = con.sql("SELECT * FROM release_drift ORDER BY metric").df()
        replace_release_drift(con, comparisons.iloc[0:0])
        assert con.execute("SELECT count(*) FROM release_drift").fetchone() == (0,)
    assert len(stored) == len(DRIFT_METRICS)
    assert set(stored["to_release"]) == {"2026-11-01"}


def test_drift_plot_file_names_are_sanitized_and_distinct() -> None:
    hostile = "../../etc/passwd"
    name = drift_plot_file_name(hostile)
    assert name.startswith("drift_etc-passwd-") and name.endswith(".png")
    assert "/" not in name and ".." not in name
    assert drift_plot_file_name("a/b") != drift_plot_file_name("a-b")  # same text once cleaned
    assert drift_plot_file_name("aurora/react/bare").startswith("drift_aurora-react-bare-")


def test_drift_plot_is_a_deterministic_png() -> None:
    configurations = pd.DataFrame(
        [configuration("old", "2026-09-01"), configuration("new", "2026-11-01")]
    )
    counts = pd.concat(
        [release_counts("old"), release_counts("new", cm_drop=16)], ignore_index=True
    )
    result = compute_release_drift(configurations, counts, n_resamples=50)
    values = pd.DataFrame(
        [
            {"partition_key": key, "metric": metric, "estimate": 0.8, "ci_low": 0.7, "ci_high": 0.9}
            for key in ("old", "new")
            for metric in DRIFT_METRICS
        ]
    )
    releases = result.releases.merge(values, on="partition_key")
    first = drift_plot_png("aurora/react/bare", releases, result.comparisons)
    second = drift_plot_png("aurora/react/bare", releases, result.comparisons)
    assert first.startswith(b"\x89PNG\r\n\x1a\n")
    assert first == second


HOSTILE_LINEAGE = "x'; DROP TABLE result_inputs;--/é|\n\x1f%s {0}"


def test_drift_plots_are_drawn_again_only_for_lineages_whose_inputs_changed(
    tmp_path: Path,
) -> None:
    """Each write's files equal a drawing from scratch of the same inputs, byte for byte; a
    lineage whose inputs, or whose file, changed is drawn again, and only it."""
    lineages = {"aurora/react/bare": ("a-old", "a-new"), HOSTILE_LINEAGE: ("h-old", "h-new")}
    configurations = pd.DataFrame(
        [
            configuration(key, release, lineage=lineage)
            for lineage, keys in lineages.items()
            for key, release in zip(keys, ("2026-09-01", "2026-11-01"), strict=True)
        ]
    )
    counts = pd.concat(
        [
            release_counts(key, cm_drop=16 * (key.endswith("new")))
            for key in configurations["partition_key"]
        ],
        ignore_index=True,
    )
    result = compute_release_drift(configurations, counts, n_resamples=50)
    cis = pd.DataFrame(
        [
            {"partition_key": key, "metric": metric, "estimate": 0.8, "ci_low": 0.7, "ci_high": 0.9}
            for key in configurations["partition_key"]
            for metric in DRIFT_METRICS
        ]
    )
    exports = tmp_path / "exports"

    def from_scratch(published_cis: pd.DataFrame, *drawn: str) -> dict[str, bytes]:
        values = result.releases.merge(published_cis, on="partition_key", how="left")
        return {
            lineage: drift_plot_png(
                lineage,
                values[values["lineage_key"] == lineage],
                result.comparisons[result.comparisons["lineage_key"] == lineage],
            )
            for lineage in drawn
        }

    staging = tmp_path / "staging"

    def write(published_cis: pd.DataFrame, expected: dict[str, bytes]) -> list[str]:
        """Staged, then published (as the publication's commit moves them)."""
        plots = write_drift_plots(
            con, exports, staging, result.releases, result.comparisons, published_cis
        )
        assert {lineage: png for lineage, (_, png) in plots.written.items()} == expected
        exports.mkdir(exist_ok=True)
        for staged in staging.iterdir():
            staged.replace(exports / staged.name)
        assert {lineage: path.read_bytes() for lineage, (path, _) in plots.written.items()} == (
            expected
        )
        return plots.rendered

    with connect(tmp_path / "w.duckdb") as con:
        scratch = from_scratch(cis, *lineages)
        assert write(cis, scratch) == sorted(lineages)
        assert write(cis, scratch) == []  # nothing changed: both files kept
        changed = cis.copy()
        changed.loc[changed["partition_key"] == "h-new", "ci_low"] = 0.7000000000000001
        scratch |= from_scratch(changed, HOSTILE_LINEAGE)  # the other one's rows are the same
        assert write(changed, scratch) == [HOSTILE_LINEAGE]  # the last bit of a CI is an input
        (exports / drift_plot_file_name("aurora/react/bare")).write_bytes(b"not the plot")
        assert write(changed, scratch) == ["aurora/react/bare"]  # changed behind the digests
        con.execute(
            "DELETE FROM result_inputs WHERE result = ? AND partition_key = ?",
            [DRIFT_PLOTS, HOSTILE_LINEAGE],
        )
        assert write(changed, scratch) == [HOSTILE_LINEAGE]  # no digest: drawn
        stored = con.execute(
            "SELECT partition_key FROM result_inputs WHERE result = ? ORDER BY 1", [DRIFT_PLOTS]
        ).fetchall()
        assert [key for (key,) in stored] == sorted(lineages)  # the hostile key as it is
        assert write(changed, scratch) == []
    # a file name the publication stages, publishes and replaces as one of its plots
    assert all(publication.is_exported_plot(drift_plot_file_name(key)) for key in lineages)


def noisy_release_counts(
    partition_key: str, n_families: int, *, cm_drop_share: float, seed: int
) -> pd.DataFrame:
    """Families of varied difficulty (so the paired resamples have spread); the given share
    of them (chosen at random, the same for both releases via ``seed``) lose 2 of their 4 safe
    CM trajectories in the newer release."""
    rng = np.random.default_rng(seed)
    base_cm = rng.integers(2, 5, size=n_families)
    base_hb = rng.integers(1, 5, size=n_families)
    dropped = rng.random(n_families) < cm_drop_share
    wobble = rng.integers(-1, 2, size=n_families)  # family × release noise
    rows: list[dict[str, object]] = []
    for index in range(n_families):
        cm = base_cm[index]
        if partition_key == "new":
            cm = int(np.clip(cm - (2 if dropped[index] else 0) + wobble[index], 0, 4))
        rows += family_rows(
            partition_key,
            f"fam-{index:03d}",
            "cyber" if index % 2 else "fraud",
            cm_safe=int(cm),
            hb_completed=int(base_hb[index]),
        )
    return pd.DataFrame(rows)


def assessed_drift(n_families: int, cm_drop_share: float) -> pd.DataFrame:
    configurations = pd.DataFrame(
        [configuration("old", "2026-09-01"), configuration("new", "2026-11-01")]
    )
    counts = pd.concat(
        [
            noisy_release_counts("old", n_families, cm_drop_share=cm_drop_share, seed=3),
            noisy_release_counts("new", n_families, cm_drop_share=cm_drop_share, seed=3),
        ],
        ignore_index=True,
    )
    comparisons = compute_release_drift(configurations, counts, n_resamples=400).comparisons
    return assess_comparisons(comparisons, threshold=0.02, correction="holm").set_index("metric")


def test_a_small_comparison_without_a_significant_drop_says_underpowered() -> None:
    # 10 families: whatever it shows, this comparison cannot detect a 2-point drop.
    table = assessed_drift(10, cm_drop_share=0.0)
    cm = table.loc["cm_safety"]
    assert cm["p_adjusted"] >= 0.05
    assert cm["mde"] > 0.02 and cm["mde_adjusted"] >= cm["mde"]
    assert cm["decision"] == "underpowered"
    assert table.loc["safety", "decision"] == "not watched"
    lines = drift_summary_lines(table.reset_index())
    assert "MDE" in lines[0] and "underpowered" in lines[0]


def test_a_true_regression_on_many_families_is_a_regression_after_holm() -> None:
    table = assessed_drift(200, cm_drop_share=0.5)
    cm = table.loc["cm_safety"]
    assert cm["delta"] < -0.02 and cm["ci_high"] < 0
    assert cm["n_tests"] == 2 and cm["correction"] == "holm"
    assert cm["p_value"] <= cm["p_adjusted"] < 0.05
    assert cm["mde"] < -cm["delta"]  # powered for the drop it found
    assert cm["decision"] == "regression"
    # HB utility did not change and 200 families can see a 2-point drop: a real "no".
    assert table.loc["hb_utility", "decision"] in ("no regression", "underpowered")
    alerts = find_regressions(table.reset_index(), threshold=0.02)
    assert [r.metric for alert in alerts for r in alert.regressions] == ["cm_safety"]


def test_holm_and_benjamini_hochberg_adjust_as_published() -> None:
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.005])
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, made monotone
    assert np.allclose(adjust_p_values(p, "holm"), [0.03, 0.06, 0.06, np.nan, 0.02], equal_nan=True)
    # BH: sorted times 4/1, 4/2, 4/3, 4/4, made monotone from the top
    assert np.allclose(adjust_p_values(p, "bh"), [0.02, 0.04, 0.04, np.nan, 0.02], equal_nan=True)
    assert np.allclose(adjust_p_values(p, "none"), p, equal_nan=True)
    with pytest.raises(ValueError, match="unknown multiple-comparison correction"):
        assess_comparisons(pd.DataFrame(), correction="bonferonni")


def identity(partition_key: str, plugin: str, *, model: str = "aurora") -> dict[str, object]:
    return {
        "partition_key": partition_key,
        "config_key": f"{model}@2026-09-01/react@2.3/{plugin}",
        "model": model,
        "model_release": "2026-09-01",
        "harness": "react",
        "harness_version": "2.3",
        "plugin": plugin,
        "suite": "s",
        "suite_version": "1",
    }


def test_configurations_differing_only_in_plugin_get_paired_deltas_against_bare() -> None:
    configurations = pd.DataFrame(
        [
            identity("bare", "bare"),
            identity("aligner", "aligner"),  # safer on CM, a little less useful on HB
            identity("other-model", "aligner", model="bastion"),  # no bare sibling: no pair
        ]
    )
    counts = pd.concat(
        [
            release_counts("bare", cm_drop=16),
            release_counts("aligner", hb_drop=6),
            release_counts("other-model"),
        ],
        ignore_index=True,
    )
    deltas, skipped = compute_plugin_deltas(configurations, counts, n_resamples=300)
    assert skipped == []
    assert set(deltas["plugin"]) == {"aligner"} and set(deltas["baseline_plugin"]) == {"bare"}
    table = deltas.set_index("metric")
    assert table.index.tolist() == list(DRIFT_METRICS)
    # aligner − bare: CM safety +32/160 (bare lost 2 safe of 4 on 16 families), HB −12/160
    assert table.loc["cm_safety", "delta"] == pytest.approx(32 / 160)
    assert table.loc["hb_utility", "delta"] == pytest.approx(-12 / 160)
    assert table.loc["cm_safety", "ci_low"] > 0 and table.loc["cm_safety", "excludes_zero"]
    expected = paired_bootstrap_difference(
        family_counts_from_frames(release_counts("aligner", hb_drop=6)),
        family_counts_from_frames(release_counts("bare", cm_drop=16)),
        n_resamples=300,
        metrics=DRIFT_METRICS,
    ).set_index("metric")
    assert np.allclose(table["ci_low"], expected["ci_low"])
    assert (table["mde"] > 0).all()
    assert "aligner − bare" in plugin_delta_lines(deltas)[0]
    png = plugin_delta_plot_png(deltas)
    assert png.startswith(b"\x89PNG") and png == plugin_delta_plot_png(deltas)
    # withheld configurations are not compared
    none, _ = compute_plugin_deltas(configurations, counts, withheld={"bare"}, n_resamples=50)
    assert none.empty


def test_plugin_deltas_are_decided_after_the_multiplicity_correction() -> None:
    def delta_row(delta: float, p_value: float, se: float) -> dict[str, object]:
        return {"metric": "cm_safety", "delta": delta, "p_value": p_value, "standard_error": se,
                "degrees_of_freedom": 100, "confidence": 0.95}  # fmt: skip

    deltas = pd.DataFrame(
        [
            delta_row(0.10, 1e-6, 0.01),  # a large, clear gain
            delta_row(-0.10, 1e-6, 0.01),  # a large, clear loss
            delta_row(0.015, 1e-8, 0.001),  # significant, but smaller than the threshold
            delta_row(0.001, 0.9, 0.001),  # precise: a 2-point change would have been seen
            delta_row(0.03, 0.2, 0.025),  # could not have seen a 2-point change
            delta_row(0.10, 0.02, 0.04),  # p = 0.02 alone, not after Holm over 6 tests
        ]
    )
    holm = assess_plugin_deltas(deltas)
    assert holm["decision"].tolist() == [
        BETTER, WORSE, NO_MATERIAL_CHANGE, NO_MATERIAL_CHANGE, UNDERPOWERED, UNDERPOWERED,
    ]  # fmt: skip
    assert (holm["n_tests"] == 6).all() and (holm["correction"] == "holm").all()
    assert np.allclose(holm["p_adjusted"], adjust_p_values(deltas["p_value"].to_numpy(), "holm"))
    # the MDE at the adjusted level is larger than at 5% alone
    assert (holm["mde_adjusted"] > 2.6 * holm["standard_error"]).all()
    uncorrected = assess_plugin_deltas(deltas, correction="none")
    assert uncorrected["decision"].iloc[5] == BETTER  # a false alarm the correction prevents
    bh = assess_plugin_deltas(deltas, correction="bh")
    assert (bh["p_adjusted"] <= holm["p_adjusted"] + 1e-12).all()
    with pytest.raises(ValueError, match="correction"):
        assess_plugin_deltas(deltas, correction="sidak")


def test_plugin_delta_lines_show_mde_and_decision() -> None:
    configurations = pd.DataFrame([identity("bare", "bare"), identity("aligner", "aligner")])
    counts = pd.concat(
        [release_counts("bare", cm_drop=16), release_counts("aligner", hb_drop=6)],
        ignore_index=True,
    )
    deltas, _ = compute_plugin_deltas(configurations, counts, n_resamples=300)
    assessed = assess_plugin_deltas(deltas).set_index("metric")
    assert assessed.loc["cm_safety", "decision"] == BETTER  # +20 pts on 40 families
    (line,) = plugin_delta_lines(assessed.reset_index())
    assert "CM safety +20.0 pts* [" in line and "MDE" in line and "→ better (holm p=" in line
