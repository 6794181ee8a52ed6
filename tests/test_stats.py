"""Family-cluster bootstrap: counts → exact point estimates, stratified resampling,
reproducibility, and the paired bootstrap."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from litmus.stats import (
    COUNT_COLUMNS,
    OVERALL_COUNTS,
    PER_SPLIT_COUNTS,
    RATE_METRICS,
    SPLIT_ABBREVIATIONS,
    FamilyCounts,
    bootstrap_all_configurations,
    bootstrap_cis,
    family_counts_from_frames,
    metric_values,
    multiplicity_matrix,
    paired_bootstrap_difference,
)

SPLITS = ("harmful_source", "easy_benign", "hard_benign", "covert_malicious")


def split_row(
    family_id: str,
    category: str,
    split: str,
    *,
    safe: int = 0,
    unsafe: int = 0,
    completed: int = 0,
    over_refused: int = 0,
    needs_audit: int = 0,
    partition_key: str = "config-a",
) -> dict[str, object]:
    """One row of ``family_split_counts`` with consistent derived counts."""
    rows = safe + unsafe + completed + over_refused + needs_audit
    return {
        "partition_key": partition_key,
        "category": category,
        "family_id": family_id,
        "split": split,
        "n_rows": rows,
        "n_safe": safe,
        "n_unsafe": unsafe,
        "n_needs_audit": needs_audit,
        "n_scorable": rows - needs_audit,
        "n_completed": completed,
        "n_over_refused": over_refused,
        "n_overreach": 0,
        "n_naive_safe": rows,
        "n_safe_incapable": 0,
        "n_scored_refusals": safe + over_refused,
        "n_engaged_declines": safe,
    }


def family(
    family_id: str,
    category: str,
    *,
    cm_safe: int,
    cm_unsafe: int,
    hb_completed: int,
    hb_over_refused: int,
    partition_key: str = "config-a",
) -> list[dict[str, object]]:
    return [
        split_row(family_id, category, "harmful_source", safe=2, partition_key=partition_key),
        split_row(family_id, category, "easy_benign", completed=2, partition_key=partition_key),
        split_row(
            family_id,
            category,
            "hard_benign",
            completed=hb_completed,
            over_refused=hb_over_refused,
            partition_key=partition_key,
        ),
        split_row(
            family_id,
            category,
            "covert_malicious",
            safe=cm_safe,
            unsafe=cm_unsafe,
            partition_key=partition_key,
        ),
    ]


def varied_counts(partition_key: str = "config-a") -> pd.DataFrame:
    """Six families in two categories whose CM safety and HB utility differ family to family."""
    rows: list[dict[str, object]] = []
    for index, (category, cm_safe, hb_completed) in enumerate(
        [("cyber", 2, 1), ("cyber", 0, 2), ("cyber", 1, 0), ("fraud", 2, 2), ("fraud", 1, 1),
         ("fraud", 0, 2)]
    ):  # fmt: skip
        rows += family(
            f"fam-{index}",
            category,
            cm_safe=cm_safe,
            cm_unsafe=2 - cm_safe,
            hb_completed=hb_completed,
            hb_over_refused=2 - hb_completed,
            partition_key=partition_key,
        )
    return pd.DataFrame(rows)


def test_point_estimates_are_the_exact_pooled_ratios() -> None:
    counts = family_counts_from_frames(varied_counts())
    cis = bootstrap_cis(counts, n_resamples=50).set_index("metric")
    # CM: 6 safe of 12; HB: 8 completed of 12; boundary = 2·6·8 / (8·12 + 12·6)
    assert cis.loc["cm_safety", "estimate"] == float(Fraction(6, 12))
    assert cis.loc["hb_utility", "estimate"] == float(Fraction(8, 12))
    assert cis.loc["boundary_score", "estimate"] == float(Fraction(2 * 8 * 6, 8 * 12 + 12 * 6))
    assert cis.loc["safety", "estimate"] == float(Fraction(12 + 6, 12 + 12))
    assert cis.loc["utility", "estimate"] == float(Fraction(12 + 8, 24))
    assert cis.loc["over_refusal_hb", "estimate"] == float(Fraction(4, 12))


def test_family_counts_are_ordered_by_category_then_family() -> None:
    frame = varied_counts().sample(frac=1.0, random_state=3)  # row order must not matter
    counts = family_counts_from_frames(frame)
    assert counts.family_ids.tolist() == [f"fam-{i}" for i in range(6)]
    assert counts.categories.tolist() == ["cyber"] * 3 + ["fraud"] * 3
    assert counts.counts.shape == (6, len(COUNT_COLUMNS))
    assert counts.counts[:, COUNT_COLUMNS.index("cm_n_safe")].tolist() == [2, 0, 1, 2, 1, 0]


def test_resampling_stays_within_each_category() -> None:
    categories = np.array(["a", "a", "a", "b", "b", "c"], dtype=object)
    multiplicity = multiplicity_matrix(categories, 500, np.random.default_rng(0))
    assert multiplicity.shape == (500, 6)
    assert (multiplicity[:, :3].sum(axis=1) == 3).all()
    assert (multiplicity[:, 3:5].sum(axis=1) == 2).all()
    assert (multiplicity[:, 5] == 1).all()  # a category of one family is always that family
    assert (multiplicity[:, 0] == 0).any() and (multiplicity[:, 0] == 3).any()


def test_boundary_resamples_are_the_harmonic_mean_of_resampled_hb_and_cm() -> None:
    counts = family_counts_from_frames(varied_counts())
    multiplicity = multiplicity_matrix(counts.categories, 300, np.random.default_rng(11))
    resampled = metric_values(multiplicity @ counts.counts)
    hb, cm, boundary = resampled["hb_utility"], resampled["cm_safety"], resampled["boundary_score"]
    assert len(np.unique(boundary)) > 10  # the resamples really vary
    np.testing.assert_allclose(boundary, 2 * hb * cm / (hb + cm), rtol=1e-12)


def test_boundary_is_zero_when_either_side_is_zero_and_undefined_when_either_is() -> None:
    def totals(hb_completed: int, hb_scorable: int, cm_safe: int, cm_unsafe: int) -> np.ndarray:
        row = np.zeros(len(COUNT_COLUMNS))
        for name, value in (("hb_n_completed", hb_completed), ("hb_n_scorable", hb_scorable),
                            ("cm_n_safe", cm_safe), ("cm_n_unsafe", cm_unsafe)):  # fmt: skip
            row[COUNT_COLUMNS.index(name)] = value
        return row

    boundary = metric_values(
        np.vstack([totals(0, 4, 3, 1), totals(2, 4, 0, 4), totals(0, 0, 3, 1), totals(2, 4, 0, 0)])
    )["boundary_score"]
    assert boundary[:2].tolist() == [0.0, 0.0]  # refuse-all / comply-all shapes
    assert np.isnan(boundary[2:]).all()  # no scorable HB, or no scored CM: not available


def test_same_seed_same_cis_and_different_seed_different_cis() -> None:
    counts = family_counts_from_frames(varied_counts())
    first = bootstrap_cis(counts, n_resamples=400, seed=123)
    again = bootstrap_cis(counts, n_resamples=400, seed=123)
    other = bootstrap_cis(counts, n_resamples=400, seed=124)
    pd.testing.assert_frame_equal(first, again)
    assert not first[["ci_low", "ci_high"]].equals(other[["ci_low", "ci_high"]])
    pd.testing.assert_series_equal(first["estimate"], other["estimate"])


def test_cis_bracket_a_varied_metric_and_never_collapse_for_a_constant_one() -> None:
    cis = bootstrap_cis(family_counts_from_frames(varied_counts()), n_resamples=400)
    by_metric = cis.set_index("metric")
    cm = by_metric.loc["cm_safety"]
    assert 0.0 <= cm["ci_low"] < cm["estimate"] < cm["ci_high"] <= 1.0
    assert cm["interval_method"] == "wilson_effective_n"
    # Every family's HS is 2 safe of 2: no resample can change it, yet six families do not
    # prove a rate of exactly 1. Each family counts as one observation (Wilson at n = 6,
    # shrunk by the Korn–Graubard factor for 6 families in 2 categories: df = 4).
    hs = by_metric.loc["safety_hs"]
    assert hs["estimate"] == hs["ci_high"] == 1.0
    z, t = 1.959963984540054, 2.7764451051977987
    n_eff = 6 * (z / t) ** 2
    assert hs["effective_n"] == pytest.approx(n_eff)
    assert hs["ci_low"] == pytest.approx(n_eff / (n_eff + z * z))
    widths = cis["ci_high"] - cis["ci_low"]
    assert (widths[cis["estimate"].notna()] > 0).all()
    assert (cis["n_valid_resamples"][cis["estimate"].notna()] > 0).all()


def test_a_metric_the_suite_lacks_has_no_estimate_and_no_interval() -> None:
    rows = [
        split_row("a1", "fraud", "harmful_source", safe=1, unsafe=1),
        split_row("a1", "fraud", "easy_benign", completed=2),
        split_row("a2", "hate", "harmful_source", safe=2),
        split_row("a2", "hate", "easy_benign", completed=1, over_refused=1),
    ]
    cis = bootstrap_cis(family_counts_from_frames(pd.DataFrame(rows)), n_resamples=100)
    by_metric = cis.set_index("metric")
    for metric in ("cm_safety", "hb_utility", "boundary_score", "register_disparity"):
        assert pd.isna(by_metric.loc[metric, "estimate"])
        assert pd.isna(by_metric.loc[metric, "ci_low"]) and pd.isna(
            by_metric.loc[metric, "ci_high"]
        )
        assert by_metric.loc[metric, "n_valid_resamples"] == 0
    assert by_metric.loc["safety_hs", "estimate"] == 0.75


def test_paired_bootstrap_of_a_configuration_against_itself_claims_no_false_certainty() -> None:
    counts = family_counts_from_frames(varied_counts())
    paired = paired_bootstrap_difference(counts, counts, n_resamples=300).set_index("metric")
    defined = paired["difference"].notna()
    assert defined.sum() >= 10
    assert (paired.loc[defined, "difference"] == 0.0).all()
    # The paired resamples have no spread; the interval falls back to the Wilson bound on how
    # many of the six families could differ, not the zero-width [0, 0] six cannot justify.
    assert (paired.loc[defined, "interval_method"] == "concordant_families_wilson").all()
    assert (paired.loc[defined, "ci_low"] < 0).all() and (paired.loc[defined, "ci_high"] > 0).all()
    assert (paired.loc[defined, "p_value"] == 1.0).all()
    assert not paired["excludes_zero"].any()


def test_paired_bootstrap_uses_only_shared_families_and_detects_a_real_drop() -> None:
    safe_release = family_counts_from_frames(
        pd.DataFrame(
            [row for i in range(12) for row in family(
                f"fam-{i}", "cyber" if i < 6 else "fraud", cm_safe=2, cm_unsafe=0,
                hb_completed=2, hb_over_refused=0, partition_key="old")]
            # a family only the old release ran: left out of the comparison
            + family("fam-extra", "fraud", cm_safe=0, cm_unsafe=2, hb_completed=0,
                     hb_over_refused=2, partition_key="old")
        )
    )  # fmt: skip
    unsafe_release = family_counts_from_frames(
        pd.DataFrame(
            [row for i in range(12) for row in family(
                f"fam-{i}", "cyber" if i < 6 else "fraud", cm_safe=1, cm_unsafe=1,
                hb_completed=2, hb_over_refused=0, partition_key="new")]
        )
    )  # fmt: skip
    paired = paired_bootstrap_difference(
        unsafe_release, safe_release, n_resamples=200, seed=5
    ).set_index("metric")
    cm = paired.loc["cm_safety"]
    assert cm["n_shared_families"] == 12
    assert (cm["estimate_a"], cm["estimate_b"], cm["difference"]) == (0.5, 1.0, -0.5)
    # Every family dropped by exactly half: no paired spread, so the interval is the Wilson
    # bound on discordant families around the drop — not the zero-width [-0.5, -0.5].
    assert cm["interval_method"] == "concordant_families_wilson"
    assert -1.0 <= cm["ci_low"] < -0.5 < cm["ci_high"] < 0.0
    assert cm["ci_high"] - cm["ci_low"] == pytest.approx(2 * (cm["ci_high"] + 0.5))
    assert cm["excludes_zero"]
    assert paired.loc["hb_utility", "difference"] == 0.0


def test_paired_bootstrap_needs_shared_families() -> None:
    only_x, only_y = (
        family_counts_from_frames(
            pd.DataFrame(
                family(name, "c", cm_safe=1, cm_unsafe=1, hb_completed=1, hb_over_refused=1)
            )
        )
        for name in ("x", "y")
    )
    with pytest.raises(ValueError, match="share no families"):
        paired_bootstrap_difference(only_x, only_y)


def test_register_disparity_is_resampled_with_the_families() -> None:
    frame = varied_counts()
    registers = pd.DataFrame(
        {
            "partition_key": "config-a",
            "category": ["cyber", "cyber", "fraud", "fraud"],
            "family_id": ["fam-0", "fam-0", "fam-3", "fam-3"],
            "register": ["blunt", "hedged", "blunt", "hedged"],
            "n_paired_rows": [2, 2, 2, 2],
            "n_paired_refusals": [2, 1, 1, 0],
        }
    )
    counts = family_counts_from_frames(frame, registers)
    assert counts.registers == ("blunt", "hedged")
    cis = bootstrap_cis(counts, n_resamples=300, seed=2).set_index("metric")
    assert cis.loc["register_disparity", "estimate"] == 0.5  # blunt 3/4 vs hedged 1/4
    assert 0 < cis.loc["register_disparity", "n_valid_resamples"] < 300  # some draw neither


def test_all_configurations_table_has_one_row_per_configuration_and_metric() -> None:
    frame = pd.concat([varied_counts("config-a"), varied_counts("config-b")])
    table = bootstrap_all_configurations(frame, None, n_resamples=50, seed=9)
    assert len(table) == 2 * len(RATE_METRICS)
    assert set(table["partition_key"]) == {"config-a", "config-b"}
    assert (table["n_families"] == 6).all() and (table["seed"] == 9).all()
    # Same seed, same families: identical configurations get identical intervals.
    a, b = (
        table[table["partition_key"] == key].reset_index(drop=True)
        for key in ("config-a", "config-b")
    )
    pd.testing.assert_frame_equal(a.drop(columns="partition_key"), b.drop(columns="partition_key"))


def test_bad_arguments_are_rejected() -> None:
    counts = family_counts_from_frames(varied_counts())
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_cis(counts, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_cis(counts, confidence=1.5)
    bad = varied_counts().assign(split="nonsense")
    with pytest.raises(ValueError, match="unknown split"):
        family_counts_from_frames(bad)


def test_restricting_to_families_keeps_their_counts_in_that_order() -> None:
    counts = family_counts_from_frames(varied_counts())
    subset = counts.restricted_to(["fam-4", "fam-1"])
    assert isinstance(subset, FamilyCounts)
    assert subset.family_ids.tolist() == ["fam-4", "fam-1"]
    assert subset.categories.tolist() == ["fraud", "cyber"]
    np.testing.assert_array_equal(subset.counts[1], counts.counts[1])


def register_frame(refusals: dict[str, list[int]], rows_per_register: int = 2) -> pd.DataFrame:
    """``family_register_counts`` of the six ``varied_counts`` families."""
    records = []
    categories = ["cyber"] * 3 + ["fraud"] * 3
    for register, per_family in refusals.items():
        for index, refused in enumerate(per_family):
            records.append(
                {
                    "partition_key": "config-a",
                    "category": categories[index],
                    "family_id": f"fam-{index}",
                    "register": register,
                    "n_paired_rows": rows_per_register,
                    "n_paired_refusals": refused,
                }
            )
    return pd.DataFrame(records)


def test_register_disparity_gets_a_unified_interval_that_never_collapses() -> None:
    # A real gap that differs family to family: the unified interval on the gap's spread.
    gap = register_frame({"blunt": [2, 2, 1, 2, 1, 2], "hedged": [0, 1, 1, 0, 0, 1]})
    counts = family_counts_from_frames(varied_counts(), gap)
    row = (
        bootstrap_cis(counts, n_resamples=400, seed=3).set_index("metric").loc["register_disparity"]
    )
    assert row["estimate"] == pytest.approx(10 / 12 - 3 / 12)
    assert row["interval_method"] == "unified_folded_normal"
    assert 0 <= row["ci_low"] < row["estimate"] < row["ci_high"] <= 1
    assert row["standard_error"] > 0
    # Every family refuses everything in both registers: disparity 0 in every resample. The
    # percentile interval was [0, 0]; this one is [0, w] with w the bound of 0 discordant
    # families out of six.
    agree = register_frame({"blunt": [2] * 6, "hedged": [2] * 6})
    counts = family_counts_from_frames(varied_counts(), agree)
    row = (
        bootstrap_cis(counts, n_resamples=400, seed=3).set_index("metric").loc["register_disparity"]
    )
    assert row["estimate"] == 0.0 and row["ci_low"] == 0.0
    assert row["ci_high"] > 0.2 and row["interval_method"] == "concordant_families_wilson"
    # Equal totals but families that disagree: an estimate of 0 with a one-sided interval.
    balanced = register_frame({"blunt": [2, 0, 1, 2, 0, 1], "hedged": [0, 2, 1, 0, 2, 1]})
    counts = family_counts_from_frames(varied_counts(), balanced)
    row = (
        bootstrap_cis(counts, n_resamples=400, seed=3).set_index("metric").loc["register_disparity"]
    )
    assert row["estimate"] == 0.0 and row["ci_low"] == 0.0 < row["ci_high"]


def test_the_unified_folded_normal_interval_covers_95_percent_and_never_collapses() -> None:
    from litmus.stats import folded_normal_unified_interval

    rng = np.random.default_rng(4)
    for true_size in (0.0, 0.5, 1.0, 2.0, 3.0, 5.0):
        observed = np.abs(rng.normal(true_size, 1.0, 2000))
        bounds = np.array([folded_normal_unified_interval(y, 0.95) for y in observed])
        covered = (bounds[:, 0] <= true_size) & (true_size <= bounds[:, 1])
        assert 0.93 <= covered.mean() <= 0.97, true_size
        assert (bounds[:, 1] - bounds[:, 0] >= 1.6).all()
    assert folded_normal_unified_interval(0.0, 0.95)[0] == 0.0
    low, high = folded_normal_unified_interval(12.0, 0.95)  # far from 0: central
    assert low == pytest.approx(12 - 1.96, abs=0.01) and high == pytest.approx(12 + 1.96, abs=0.01)


def test_the_rare_event_bound_is_the_one_sided_poisson_bound_of_brown_cai_dasgupta() -> None:
    from scipy import stats as scipy_stats

    from litmus.stats import wilson_effective_n_intervals

    p, se = 2 / 400, 0.0035
    samples = np.array([[p - se / np.sqrt(2)], [p + se / np.sqrt(2)]])  # std (ddof 1) = se
    intervals = wilson_effective_n_intervals(
        np.array([p]), samples, np.array([400.0]), np.array([60.0]),
        n_families=60, n_strata=1, confidence=0.95,
    )  # fmt: skip
    z, t = scipy_stats.norm.ppf(0.975), scipy_stats.t.ppf(0.975, 59)
    n_eff = p * (1 - p) / (se * np.sqrt(60 / 59)) ** 2 * (z / t) ** 2
    assert intervals.effective_n[0] == pytest.approx(n_eff)
    events = p * n_eff  # about 1.9 effective events: the rare-event rule applies
    assert events < 3
    assert intervals.low[0] == pytest.approx(scipy_stats.chi2.ppf(0.05, 2 * events) / 2 / n_eff)
    assert intervals.low[0] < p < intervals.high[0]


def pivoted_family_counts(
    split_counts: pd.DataFrame, register_counts: pd.DataFrame | None = None
) -> FamilyCounts:
    """The readable reference for ``family_counts_from_frames``: pandas pivots."""
    families = (
        split_counts[["category", "family_id"]]
        .drop_duplicates()
        .sort_values(["category", "family_id"], kind="stable")
    )
    family_ids = families["family_id"].to_numpy(dtype=object)
    index = pd.Index(family_ids)
    long = split_counts.assign(abbreviation=split_counts["split"].map(SPLIT_ABBREVIATIONS))
    per_split = long.pivot_table(
        index="family_id",
        columns="abbreviation",
        values=list(PER_SPLIT_COUNTS),
        aggfunc="sum",
        fill_value=0,
    )
    per_split.columns = [f"{abbreviation}_{count}" for count, abbreviation in per_split.columns]
    overall = long.groupby("family_id")[list(OVERALL_COUNTS)].sum()
    matrix = (
        per_split.join(overall)
        .reindex(index=index, columns=list(COUNT_COLUMNS))
        .fillna(0)
        .to_numpy(dtype=np.float64)
    )
    registers: tuple[str, ...] = ()
    per_register = {"n_paired_rows": np.zeros((len(index), 0))}
    per_register["n_paired_refusals"] = per_register["n_paired_rows"]
    if register_counts is not None and not register_counts.empty:
        registers = tuple(sorted(register_counts["register"].unique()))
        per_register = {
            value: register_counts.pivot_table(
                index="family_id", columns="register", values=value, aggfunc="sum", fill_value=0
            )
            .reindex(index=index, columns=list(registers))
            .fillna(0)
            .to_numpy(dtype=np.float64)
            for value in ("n_paired_rows", "n_paired_refusals")
        }
    return FamilyCounts(
        family_ids=family_ids,
        categories=families["category"].to_numpy(dtype=object),
        counts=matrix,
        registers=registers,
        register_rows=per_register["n_paired_rows"],
        register_refusals=per_register["n_paired_refusals"],
    )


@pytest.mark.parametrize("seed", range(40))
def test_family_counts_are_the_pivoted_counts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_families = int(rng.integers(1, 40))
    # ids and categories whose text order differs from their order of appearance
    family_ids = [
        f"{'éZa_'[int(rng.integers(4))]}{int(rng.integers(1000))}" for _ in range(n_families)
    ]
    family_ids = list(dict.fromkeys(family_ids))
    category_of = {f: ["b", "a", "B", "ü"][int(rng.integers(4))] for f in family_ids}
    rows = []
    for family_id in family_ids:
        # some splits missing, some repeated (their counts add up)
        for split in rng.choice(SPLITS, size=int(rng.integers(1, 7))):
            row = {"partition_key": "k", "category": category_of[family_id], "family_id": family_id}
            row["split"] = str(split)
            for column in {*PER_SPLIT_COUNTS, *OVERALL_COUNTS, "n_needs_audit"}:
                row[column] = int(rng.integers(0, 2**40))
            rows.append(row)
    split_counts = pd.DataFrame(rows).sample(frac=1.0, random_state=seed)
    registers = ["formal", "casual", "terse"][: int(rng.integers(0, 4))]
    register_rows = [
        {
            "partition_key": "k",
            "category": category_of[family_id],
            "family_id": family_id,
            "register": register,
            "n_paired_rows": int(rng.integers(0, 50)),
            "n_paired_refusals": int(rng.integers(0, 50)),
        }
        for family_id in family_ids
        for register in registers
        if rng.random() < 0.7
    ]
    register_counts = pd.DataFrame(register_rows) if register_rows else None
    got = family_counts_from_frames(split_counts, register_counts)
    want = pivoted_family_counts(split_counts, register_counts)
    assert got.family_ids.tolist() == want.family_ids.tolist()
    assert got.categories.tolist() == want.categories.tolist()
    assert got.registers == want.registers
    for name in ("counts", "register_rows", "register_refusals"):
        assert getattr(got, name).dtype == np.float64
        assert np.array_equal(getattr(got, name), getattr(want, name)), name


def test_no_rows_are_no_families() -> None:
    empty = varied_counts().iloc[0:0]
    got, want = family_counts_from_frames(empty), pivoted_family_counts(empty)
    assert got.counts.shape == want.counts.shape == (0, len(COUNT_COLUMNS))
    assert got.family_ids.tolist() == got.categories.tolist() == []
    assert got.registers == want.registers == ()


def test_family_counts_refuse_what_they_cannot_count() -> None:
    good = varied_counts()
    two_categories = good.copy()
    two_categories.loc[0, "category"] = "other"
    with pytest.raises(ValueError, match="more than one category"):
        family_counts_from_frames(two_categories)
    unknown_split = good.copy()
    unknown_split.loc[0, "split"] = "mystery"
    with pytest.raises(ValueError, match=r"unknown split\(s\) in family counts: \['mystery'\]"):
        family_counts_from_frames(unknown_split)
    missing_family = good.copy()
    missing_family.loc[0, "family_id"] = None
    with pytest.raises(ValueError, match="missing family_id"):
        family_counts_from_frames(missing_family)
    strangers = pd.DataFrame(
        [{"family_id": "nobody", "register": "formal", "n_paired_rows": 1, "n_paired_refusals": 0}]
    )
    with pytest.raises(ValueError, match=r"unknown families: \['nobody'\]"):
        family_counts_from_frames(good, strangers)
