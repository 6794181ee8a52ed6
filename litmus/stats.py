"""Family-cluster bootstrap confidence intervals for the SPEC §6 metrics.

Trajectories of one family (the four sibling splits of one task scene, every epoch) are not
independent, so the resampling unit is the family: each resample draws, within every risk
category, as many families as the category has, with replacement. A resample is a row of a
multiplicity matrix ``M`` (resamples × families) and its count totals are ``M @ C`` for the
per-family count matrix ``C`` (families × count columns); every ratio metric is then computed
from the resampled numerator and denominator, never by averaging per-family rates. The
formulas are the metric catalogue's (:mod:`litmus.metric_catalogue`), the same entries the dbt
macros compile (same numerators, same denominators, same single division), so a point
estimate here equals the dbt value bit for bit.

Intervals (chosen by the coverage simulation in ``benchmarks/ci_coverage.py``; the reasons and
the figures are in ``docs/statistics.md``):

- every rate in [0, 1] gets a **Wilson score interval on the cluster effective sample size**:
  the bootstrap gives the standard error ``se`` of the pooled ratio; the effective sample
  size is ``n_eff = p(1 − p) / se²`` (the trajectories' worth of information once the
  intra-family correlation is accounted for), shrunk by the Korn–Graubard degrees-of-freedom
  factor ``(z / t_df)²`` with ``df = families − categories``. Where ``se`` is 0 (every family
  agrees, e.g. a rate of exactly 0 or 1) the bootstrap says nothing about the spread, and
  each contributing family counts as ONE observation (``n_eff`` = families with a non-empty
  denominator): the interval never collapses to a point. Percentile intervals did collapse
  there (``1.000 [1.000, 1.000]``) and under-covered near 0 and 1. With at most three
  effective events (or non-events) the bound on that side is the exact Poisson one (Brown,
  Cai & DasGupta's modified Wilson interval).
- ``register_disparity`` (a max − min of refusal rates: the size of a paired gap, not a
  proportion) gets the unified (Feldman–Cousins) interval of a folded normal mean on the
  paired gap's bootstrap standard error (:func:`register_disparity_interval`); the
  percentile interval collapsed when every resample agreed.
- a paired difference gets ``delta ± t_df · se_paired`` from the paired resamples; when the
  paired resamples have no spread (every shared family shows the same difference, e.g. a
  deterministic re-run) the interval is ``delta ± w`` with ``w`` the Wilson upper bound of
  0 discordant families out of the shared ones (as for all-concordant pairs of a paired
  proportion), so it does not collapse either. Its two-sided p-value and its minimum
  detectable effect at 80% power use the same ``se`` and ``df``.

The bootstrap standard error is rescaled by ``sqrt(F / (F − H))`` (``F`` families, ``H``
categories): a stratified bootstrap's variance is biased low by about ``(n_h − 1) / n_h`` per
stratum. Resamples whose denominator is empty give no value for that metric and are left out;
a metric that is not available at all has no interval.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from litmus.metric_catalogue import (
    FORMULA_COUNTS,
    OVERALL_COUNTS,
    PER_SPLIT_COUNTS,
    SPLIT_PREFIXES,
    Metric,
    catalogue,
)

DEFAULT_SEED = 20261120
DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_POWER = 0.80

# How each interval was made (the ``interval_method`` column of metric_cis).
WILSON_EFFECTIVE_N = "wilson_effective_n"
PAIRED_T = "paired_t"
CONCORDANT_FAMILIES = "concordant_families_wilson"
UNIFIED_REGISTERS = "unified_folded_normal"
# The catalogue's formulas and count columns (litmus.metric_catalogue).
_CATALOGUE = catalogue()
# Metrics that are not proportions: they get their own interval (register_disparity_interval).
NON_PROPORTION_METRICS = frozenset(
    metric.key for metric in _CATALOGUE.metrics if metric.ci == UNIFIED_REGISTERS
)
SPLIT_ABBREVIATIONS = SPLIT_PREFIXES
COUNT_COLUMNS: tuple[str, ...] = FORMULA_COUNTS
# Every rate that gets an interval, in the order the CI table lists them.
RATE_METRICS: tuple[str, ...] = _CATALOGUE.rates


@dataclass(frozen=True)
class FamilyCounts:
    """One configuration's counts per family, families ordered by (category, family_id).

    ``counts`` is families × ``COUNT_COLUMNS``. ``register_rows`` / ``register_refusals`` are
    families × ``registers`` (paired-register trajectories and their refusals).
    """

    family_ids: np.ndarray
    categories: np.ndarray
    counts: np.ndarray
    registers: tuple[str, ...]
    register_rows: np.ndarray
    register_refusals: np.ndarray

    @property
    def n_families(self) -> int:
        return len(self.family_ids)

    def restricted_to(self, family_ids: Sequence[str]) -> FamilyCounts:
        """The same counts for ``family_ids`` only, in that order."""
        position = {family_id: index for index, family_id in enumerate(self.family_ids)}
        rows = np.array([position[family_id] for family_id in family_ids], dtype=np.int64)
        return FamilyCounts(
            family_ids=self.family_ids[rows],
            categories=self.categories[rows],
            counts=self.counts[rows],
            registers=self.registers,
            register_rows=self.register_rows[rows],
            register_refusals=self.register_refusals[rows],
        )


def family_counts_from_frames(
    split_counts: pd.DataFrame, register_counts: pd.DataFrame | None = None
) -> FamilyCounts:
    """Build the count matrices of ONE configuration.

    ``split_counts``: rows of the dbt model ``family_split_counts`` (category, family_id, split,
    n_* columns). ``register_counts``: rows of ``family_register_counts`` (family_id, register,
    n_paired_rows, n_paired_refusals), optional. Rows repeating a (family, split) or (family,
    register) add up; a family without rows for a split or a register counts 0 there.
    """
    row_family, family_ids, categories = _families(split_counts)
    n_families, n_splits = len(family_ids), len(SPLIT_ABBREVIATIONS)
    row_split = _SPLITS.get_indexer(split_counts["split"])
    if (row_split < 0).any():
        unknown = sorted(set(split_counts.loc[row_split < 0, "split"]), key=str)
        raise ValueError(f"unknown split(s) in family counts: {unknown}")
    cell = row_family * n_splits + row_split
    # families × splits × counts, flattened split by split: the order of COUNT_COLUMNS
    per_split = np.stack(
        [
            _summed(cell, split_counts[count], n_families * n_splits).reshape(n_families, n_splits)
            for count in PER_SPLIT_COUNTS
        ],
        axis=2,
    ).reshape(n_families, n_splits * len(PER_SPLIT_COUNTS))
    overall = np.column_stack(
        [_summed(row_family, split_counts[count], n_families) for count in OVERALL_COUNTS]
    )
    matrix = np.hstack([per_split, overall])

    if register_counts is None or register_counts.empty:
        registers: tuple[str, ...] = ()
        register_rows = np.zeros((n_families, 0))
        register_refusals = np.zeros((n_families, 0))
    else:
        if register_counts["register"].isna().any():
            raise ValueError("register counts with a missing register")
        registers = tuple(sorted(register_counts["register"].unique()))
        register_family = pd.Index(family_ids).get_indexer(register_counts["family_id"])
        if (register_family < 0).any():
            unknown_families = set(register_counts["family_id"]) - set(family_ids)
            raise ValueError(f"register counts for unknown families: {sorted(unknown_families)}")
        register_cell = register_family * len(registers) + pd.Index(registers).get_indexer(
            register_counts["register"]
        )
        register_rows, register_refusals = (
            _summed(register_cell, register_counts[value], n_families * len(registers)).reshape(
                n_families, len(registers)
            )
            for value in ("n_paired_rows", "n_paired_refusals")
        )

    return FamilyCounts(
        family_ids=family_ids,
        categories=categories,
        counts=matrix,
        registers=registers,
        register_rows=register_rows,
        register_refusals=register_refusals,
    )


_SPLITS = pd.Index(list(SPLIT_ABBREVIATIONS), dtype=object)


def _families(split_counts: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's family as its position among the families ordered by (category,
    family_id), and those families' ids and categories. A family listed under two categories
    is refused."""
    if split_counts["family_id"].isna().any() or split_counts["category"].isna().any():
        raise ValueError("family counts with a missing family_id or category")
    family_codes, _ = pd.factorize(split_counts["family_id"])
    category_codes, _ = pd.factorize(split_counts["category"])
    _, first_rows = np.unique(family_codes, return_index=True)  # one row per family, by code
    n_categories = int(category_codes.max(initial=-1)) + 1
    if len(np.unique(family_codes * n_categories + category_codes)) != len(first_rows):
        raise ValueError("a family is listed under more than one category")
    families = (
        split_counts[["category", "family_id"]]
        .iloc[first_rows]
        .assign(code=np.arange(len(first_rows)))
        .sort_values(["category", "family_id"], kind="stable")
    )
    position = np.empty(len(families), dtype=np.int64)
    position[families["code"].to_numpy()] = np.arange(len(families))
    return (
        position[family_codes],
        families["family_id"].to_numpy(dtype=object),
        families["category"].to_numpy(dtype=object),
    )


def _summed(cell: np.ndarray, values: pd.Series, cells: int) -> np.ndarray:
    """``values`` summed per cell (a missing value counts 0), as float64."""
    weights = pd.to_numeric(values).to_numpy(dtype=np.float64, na_value=0.0)
    return np.bincount(cell, weights=weights, minlength=cells)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0 (not available)."""
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    out = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _boundary(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Harmonic mean of a/b and c/d as the single ratio 2ac / (ad + bc); 0 when either rate
    is 0, NaN when either is undefined (same as the dbt macro ``boundary_score``)."""
    defined = (b > 0) & (d > 0)
    either_zero = defined & ((a == 0) | (c == 0))
    out = np.full(np.broadcast(a, b, c, d).shape, np.nan)
    positive = defined & ~either_zero
    np.divide(2 * a * c, a * d + b * c, out=out, where=positive)
    out[either_zero] = 0.0
    return out


def metric_values(
    totals: np.ndarray,
    register_rows: np.ndarray | None = None,
    register_refusals: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Every rate in ``RATE_METRICS`` from count totals of shape (..., len(COUNT_COLUMNS)),
    by the catalogue's formulas (the same sums and single division the dbt macros compile).

    Works on one totals vector (point estimate) or a matrix of resampled totals alike.
    """
    column = {name: totals[..., index] for index, name in enumerate(COUNT_COLUMNS)}
    values: dict[str, np.ndarray] = {}
    for metric in _CATALOGUE.metrics:
        if metric.is_ratio:
            values[metric.key] = _ratio(*_ratio_terms(metric, column))
        elif metric.harmonic_mean_of is not None:
            first, second = (_CATALOGUE[part] for part in metric.harmonic_mean_of)
            values[metric.key] = _boundary(
                *_ratio_terms(first, column), *_ratio_terms(second, column)
            )
        elif metric.register_gap:
            values[metric.key] = _register_disparity(
                totals.shape[:-1], register_rows, register_refusals
            )
    return values


def _ratio_terms(metric: Metric, column: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A ratio metric's numerator and denominator: the sums of its count columns."""
    numerator, denominator = (
        functools.reduce(np.add, (column[name] for name in names))
        for names in (metric.numerator, metric.denominator)
    )
    return numerator, denominator


def metric_denominators(totals: np.ndarray) -> dict[str, np.ndarray]:
    """The denominator of every proportion metric (for a harmonic mean: the smaller of its
    two), from count totals of shape (..., len(COUNT_COLUMNS)). Used to cap the effective
    sample size and, per family, to count the families that inform a metric."""
    column = {name: totals[..., index] for index, name in enumerate(COUNT_COLUMNS)}
    denominators: dict[str, np.ndarray] = {}
    for metric in _CATALOGUE.metrics:
        if metric.is_ratio:
            denominators[metric.key] = _ratio_terms(metric, column)[1]
        elif metric.harmonic_mean_of is not None:
            first, second = (_CATALOGUE[part] for part in metric.harmonic_mean_of)
            denominators[metric.key] = np.minimum(
                _ratio_terms(first, column)[1], _ratio_terms(second, column)[1]
            )
    return denominators


def _register_disparity(
    shape: tuple[int, ...], rows: np.ndarray | None, refusals: np.ndarray | None
) -> np.ndarray:
    """Refusal-rate gap between the most- and least-refused registers; NaN with < 2 registers."""
    if rows is None or refusals is None or rows.shape[-1] < 2:
        return np.full(shape, np.nan)
    rates = _ratio(refusals, rows)
    present = rows > 0
    highest = np.where(present, rates, -np.inf).max(axis=-1)
    lowest = np.where(present, rates, np.inf).min(axis=-1)
    return np.where(present.sum(axis=-1) >= 2, highest - lowest, np.nan)


# How many (resample, family) cells of the multiplicity matrix one block holds: a block is
# drawn, counted and multiplied at a time, so the bootstrap's memory stays a few blocks
# whatever the number of families (the whole matrix at 31,250 families and 1,000 resamples
# is 250 MB of int64, and each use of it made a float64 copy as large).
MULTIPLICITY_BLOCK_CELLS = 1 << 20


def _multiplicity_blocks(
    categories: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> Iterator[tuple[np.ndarray, slice, np.ndarray]]:
    """The multiplicity matrix in blocks ``(members, resamples, block)``: ``block`` is
    ``M[resamples, members]``, ``members`` the families of one category.

    Within each category of n families, every resample draws n of them with replacement, so
    each row sums to n per category. Categories come in sorted order and, within one, the
    resamples in order: the generator's stream is consumed exactly as one draw of all the
    category's resamples at once would (numpy's bounded integers are drawn element by
    element in C order), so the matrix does not depend on the block size.
    """
    for category in sorted(set(categories.tolist())):
        members = np.flatnonzero(categories == category)
        n_members = len(members)
        step = max(1, MULTIPLICITY_BLOCK_CELLS // n_members)
        for start in range(0, n_resamples, step):
            rows = min(step, n_resamples - start)
            draws = rng.integers(0, n_members, size=(rows, n_members))
            draws += np.arange(rows)[:, None] * n_members
            drawn = np.bincount(draws.ravel(), minlength=rows * n_members)
            yield members, slice(start, start + rows), drawn.reshape(rows, n_members)


def multiplicity_matrix(
    categories: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """How often each family is drawn in each resample (n_resamples × families), whole
    (:func:`_multiplicity_blocks`; the bootstrap itself uses :func:`resampled_totals`)."""
    multiplicity = np.zeros((n_resamples, len(categories)), dtype=np.int64)
    for members, resamples, block in _multiplicity_blocks(categories, n_resamples, rng):
        multiplicity[resamples, members] = block
    return multiplicity


def resampled_totals(
    categories: np.ndarray,
    n_resamples: int,
    rng: np.random.Generator,
    matrices: Sequence[np.ndarray],
) -> list[np.ndarray]:
    """``multiplicity_matrix(categories, n_resamples, rng) @ X`` for every ``X`` of
    ``matrices`` (families × columns), one block of the matrix at a time.

    The counts are whole numbers, so every product and partial sum is an integer held
    exactly in float64 and the totals equal the whole-matrix product bit for bit, in
    whatever order the blocks add up.
    """
    totals = [np.zeros((n_resamples, matrix.shape[1])) for matrix in matrices]
    for members, resamples, block in _multiplicity_blocks(categories, n_resamples, rng):
        weights = block.astype(np.float64)
        for total, matrix in zip(totals, matrices, strict=True):
            total[resamples] += weights @ matrix[members]
    return totals


def _streamed_metrics(
    counts: FamilyCounts, n_resamples: int, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The resampled metrics of ``counts`` and the resampled register rows and refusals
    (resamples × registers), without the multiplicity matrix held whole."""
    resampled_counts, register_rows, register_refusals = resampled_totals(
        counts.categories,
        n_resamples,
        rng,
        [counts.counts, counts.register_rows, counts.register_refusals],
    )
    return (
        metric_values(resampled_counts, register_rows, register_refusals),
        register_rows,
        register_refusals,
    )


def _point_metrics(counts: FamilyCounts) -> dict[str, np.ndarray]:
    return metric_values(
        counts.counts.sum(axis=0),
        counts.register_rows.sum(axis=0),
        counts.register_refusals.sum(axis=0),
    )


def _percentile_bounds(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of ``samples`` (resamples × metrics), ignoring NaN."""
    tail = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column: metric unavailable
        low, high = np.nanquantile(samples, [tail, 1.0 - tail], axis=0)
    return low, high


def _validate(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _nullable(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def stratified_se_factor(n_families: int, n_strata: int) -> float:
    """Rescales a stratified bootstrap's standard error for its (n_h − 1) / n_h bias."""
    return float(np.sqrt(n_families / (n_families - n_strata))) if n_families > n_strata else 1.0


def degrees_of_freedom(n_families: int, n_strata: int) -> int:
    """Design degrees of freedom: clusters minus strata (at least 1)."""
    return max(n_families - n_strata, 1)


def t_quantile(probability: float, df: int | np.ndarray) -> np.ndarray:
    return np.asarray(scipy_stats.t.ppf(probability, df), dtype=float)


def wilson_interval(estimate: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion ``estimate`` observed on ``n`` (effective)
    observations; never zero width for finite ``n``; NaN where the estimate is NaN."""
    p, n = np.broadcast_arrays(np.asarray(estimate, float), np.asarray(n, float))
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # Rounding must never put the estimate outside its own interval (p = 1: 1 − 1e-16).
    low = np.clip(np.fmin(centre - half, p), 0.0, 1.0)
    high = np.clip(np.fmax(centre + half, p), 0.0, 1.0)
    return low, high


@dataclass(frozen=True)
class ProportionIntervals:
    low: np.ndarray
    high: np.ndarray
    standard_error: np.ndarray
    effective_n: np.ndarray


def wilson_effective_n_intervals(
    estimate: np.ndarray,
    samples: np.ndarray,
    denominator_total: np.ndarray,
    contributing_families: np.ndarray,
    *,
    n_families: int,
    n_strata: int,
    confidence: float,
) -> ProportionIntervals:
    """Wilson intervals on the Korn–Graubard effective sample size, one per column of
    ``samples`` (resamples × metrics); see the module docstring."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column: metric unavailable
        se = np.nanstd(samples, axis=0, ddof=1) * stratified_se_factor(n_families, n_strata)
    p = np.asarray(estimate, dtype=float)
    spread = p * (1 - p)
    informative = (se > 0) & (spread > 0)
    floor = np.maximum(np.asarray(contributing_families, dtype=float), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        from_bootstrap = np.where(informative, spread / np.where(se > 0, se, 1.0) ** 2, floor)
    # No cap at the trajectory count: stratifying by category can make a cluster sample
    # more informative than a simple random sample of the same size.
    n_eff = np.maximum(from_bootstrap, 1.0)
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
    t = float(t_quantile(0.5 + confidence / 2, degrees_of_freedom(n_families, n_strata)))
    n_eff = n_eff * (z / t) ** 2
    low, high = wilson_interval(p, n_eff, z)
    low, high = _rare_event_bounds(p, n_eff, low, high, 1.0 - confidence)
    return ProportionIntervals(low=low, high=high, standard_error=se, effective_n=n_eff)


RARE_EVENTS = 3.0


def _rare_event_bounds(
    p: np.ndarray, n_eff: np.ndarray, low: np.ndarray, high: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Brown, Cai & DasGupta's modified Wilson interval: with at most three (effective)
    events the Wilson lower bound is too high, so it is lowered to the one-sided Poisson
    bound ½·χ²(α; 2x)/n; likewise the upper bound with at most three non-events.

    The level is α, not α/2, as Brown, Cai & DasGupta (2001, §4.1.1) define it: with so few
    events the truth is a fraction of an event to a few events from the boundary, where the
    interval's far side cannot miss (its upper bound stays above the truth even at 0
    events), so the whole α belongs to the near side. At α/2 the bound is the exact
    Clopper–Pearson one and the interval covers 97.5% or more there by construction. Unlike
    the paper (n ≤ 100) the rule applies at every n: the Wilson lower bound's shortfall is a
    matter of events, not of n (at 0.5 expected events on n = 350 plain Wilson covers 91%).
    What over-coverage remains with a handful of expected events is the discreteness of the
    count, which no interval that is a function of it can avoid (docs/statistics.md §6)."""
    events, non_events = p * n_eff, (1 - p) * n_eff
    with np.errstate(invalid="ignore"):
        rare = (events > 0) & (events <= RARE_EVENTS) & (p < 0.5)
        poisson_low = scipy_stats.chi2.ppf(alpha, 2 * np.where(rare, events, 1.0)) / 2
        low = np.where(rare, np.minimum(low, poisson_low / n_eff), low)
        rare = (non_events > 0) & (non_events <= RARE_EVENTS) & (p > 0.5)
        poisson_high = scipy_stats.chi2.ppf(alpha, 2 * np.where(rare, non_events, 1.0)) / 2
        high = np.where(rare, np.maximum(high, 1 - poisson_high / n_eff), high)
    return low, high


def register_disparity_interval(
    counts: FamilyCounts,
    resampled_rows: np.ndarray,
    resampled_refusals: np.ndarray,
    *,
    confidence: float,
) -> tuple[float, float, float, str]:
    """(low, high, standard error, interval_method) of the register disparity
    ``d = |r_a − r_b|`` (most- minus least-refused register, picked on the point estimate).

    A disparity is the size of a paired gap whose sign the data pick, so it is bounded
    below by 0 and its estimate is biased upward when the rates are close. Folding a valid
    interval of the signed gap covers 97.5% or more whenever the true disparity is within
    the interval's half-width (one side cannot miss); the percentile interval of the
    resampled disparities collapses when every resample agrees. Instead: the gap's standard
    error ``σ`` comes from the paired family resamples (stratification-corrected, widened by
    ``t_df / z`` for few families), and the interval of ``d / σ`` is the **unified**
    (Feldman & Cousins 1998) interval of a folded normal mean: the likelihood-ratio ordered
    Neyman belt, which moves from a one-sided upper limit near 0 to the central ``± z``
    interval far from it, never empty and never narrower than 1.65 σ. When the paired gap
    has no spread at all over the resamples (every family shows the same gap), the interval
    is ``d ± w`` with ``w`` the Wilson bound of 0 discordant families, as for a paired
    comparison. NaN without two registers that have rows.
    """
    rows, refusals = counts.register_rows, counts.register_refusals
    present = rows.sum(axis=0) > 0
    if present.sum() < 2:
        return np.nan, np.nan, np.nan, UNIFIED_REGISTERS
    rates = _ratio(refusals.sum(axis=0), rows.sum(axis=0))
    resampled = _ratio(resampled_refusals, resampled_rows)  # resamples × registers
    ranked = np.where(present, rates, np.nan)
    a, b = int(np.nanargmax(ranked)), int(np.nanargmin(ranked))
    disparity = float(rates[a] - rates[b])
    n_families, n_strata = counts.n_families, _n_strata(counts)
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
    t = float(t_quantile(0.5 + confidence / 2, degrees_of_freedom(n_families, n_strata)))
    both = ~np.isnan(resampled[:, a]) & ~np.isnan(resampled[:, b])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # fewer than two usable resamples
        se = float(np.std(resampled[both, a] - resampled[both, b], ddof=1))
    se *= stratified_se_factor(n_families, n_strata)
    if not se > 0:
        families = max(float((rows[:, [a, b]] > 0).all(axis=1).sum()), 1.0)
        _, bound = wilson_interval(np.zeros(1), np.array([families * (z / t) ** 2]), z)
        width = float(bound[0])
        return (
            max(disparity - width, 0.0),
            min(disparity + width, 1.0),
            width / t,
            (CONCORDANT_FAMILIES),
        )
    sigma = se * t / z
    low, high = folded_normal_unified_interval(disparity / sigma, confidence)
    return low * sigma, min(high * sigma, 1.0), se, UNIFIED_REGISTERS


_BELT_STEP = 0.01
_BELT_MAX = 8.0


@functools.lru_cache(maxsize=8)
def _folded_normal_belt(confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feldman & Cousins' likelihood-ratio ordered confidence belt for μ = |δ| ≥ 0 from
    y = |x|, x ~ N(δ, 1): per μ on a grid, the acceptance interval [y_low(μ), y_high(μ)]."""
    mu = np.arange(0.0, _BELT_MAX + _BELT_STEP / 2, _BELT_STEP)
    y = np.arange(_BELT_STEP / 2, _BELT_MAX + 6.0, _BELT_STEP)
    density = scipy_stats.norm.pdf(y[None, :] - mu[:, None]) + scipy_stats.norm.pdf(
        y[None, :] + mu[:, None]
    )
    # the best μ ≥ 0 for each y (the folded normal's MLE is 0 for y ≤ 1)
    fine = np.arange(0.0, _BELT_MAX + 6.0, _BELT_STEP)
    best = np.max(
        scipy_stats.norm.pdf(y[None, :] - fine[:, None])
        + scipy_stats.norm.pdf(y[None, :] + fine[:, None]),
        axis=0,
    )
    ratio = density / best[None, :]
    order = np.argsort(-ratio, axis=1, kind="stable")
    mass = np.take_along_axis(density, order, axis=1) * _BELT_STEP
    accepted_sorted = np.cumsum(mass, axis=1) - mass < confidence
    accepted = np.zeros_like(accepted_sorted)
    np.put_along_axis(accepted, order, accepted_sorted, axis=1)
    first = np.argmax(accepted, axis=1)
    last = accepted.shape[1] - 1 - np.argmax(accepted[:, ::-1], axis=1)
    return mu, y[first] - _BELT_STEP / 2, y[last] + _BELT_STEP / 2


def folded_normal_unified_interval(y: float, confidence: float) -> tuple[float, float]:
    """The unified (Feldman–Cousins) interval of μ = |δ| ≥ 0 from an observed y = |x|,
    x ~ N(δ, 1); far from 0 it is the central y ± z interval."""
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
    if y > _BELT_MAX - z - 1.0:
        return y - z, y + z
    mu, y_low, y_high = _folded_normal_belt(round(confidence, 6))
    inside = (y_low <= y) & (y <= y_high)
    return float(mu[inside].min()), float(mu[inside].max())


def _n_strata(counts: FamilyCounts) -> int:
    return len(set(counts.categories.tolist()))


def _proportion_inputs(counts: FamilyCounts, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per metric: the pooled denominator and the number of families with a non-empty one."""
    pooled = metric_denominators(counts.counts.sum(axis=0))
    per_family = metric_denominators(counts.counts)
    totals = np.array([float(pooled.get(name, np.nan)) for name in names])
    families = np.array(
        [float((per_family[name] > 0).sum()) if name in per_family else np.nan for name in names]
    )
    return totals, families


def bootstrap_cis(
    counts: FamilyCounts,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    metrics: Iterable[str] = RATE_METRICS,
) -> pd.DataFrame:
    """95% intervals of ``metrics`` for one configuration (method: module docstring).

    Columns: metric, estimate, ci_low, ci_high, n_valid_resamples (resamples in which the
    metric was defined), standard_error (bootstrap, stratification-corrected), effective_n,
    degrees_of_freedom, interval_method. NULL (None) estimate/bounds mean "not available".
    """
    _validate(n_resamples, confidence)
    metric_names = list(metrics)
    rng = np.random.default_rng(seed)
    resampled, register_rows, register_refusals = _streamed_metrics(counts, n_resamples, rng)
    point = _point_metrics(counts)
    samples = np.column_stack([resampled[name] for name in metric_names])
    estimate = np.array([float(point[name]) for name in metric_names])
    totals, families = _proportion_inputs(counts, metric_names)
    wilson = wilson_effective_n_intervals(
        estimate,
        samples,
        totals,
        families,
        n_families=counts.n_families,
        n_strata=_n_strata(counts),
        confidence=confidence,
    )
    is_proportion = np.array([name not in NON_PROPORTION_METRICS for name in metric_names])
    available = ~np.isnan(estimate)
    low, high = wilson.low.copy(), wilson.high.copy()
    standard_error = wilson.standard_error.copy()
    methods = [WILSON_EFFECTIVE_N] * len(metric_names)
    if "register_disparity" in metric_names:
        index = metric_names.index("register_disparity")
        low[index], high[index], standard_error[index], methods[index] = (
            register_disparity_interval(
                counts, register_rows, register_refusals, confidence=confidence
            )
        )
    low, high = np.where(available, low, np.nan), np.where(available, high, np.nan)
    valid = (~np.isnan(samples)).sum(axis=0)
    return pd.DataFrame(
        {
            "metric": metric_names,
            "estimate": [_nullable(value) for value in estimate],
            "ci_low": [_nullable(value) for value in low],
            "ci_high": [_nullable(value) for value in high],
            "n_valid_resamples": valid.astype(np.int64),
            "standard_error": [
                _nullable(value) if ok else None
                for value, ok in zip(standard_error, available, strict=True)
            ],
            "effective_n": [
                _nullable(value) if ok and prop else None
                for value, ok, prop in zip(
                    wilson.effective_n, available, is_proportion, strict=True
                )
            ],
            "interval_method": methods,
        }
    )


def shared_families(a: FamilyCounts, b: FamilyCounts) -> list[str]:
    """Families both configurations ran, in a's order; a shared family must share a category."""
    b_category = dict(zip(b.family_ids.tolist(), b.categories.tolist(), strict=True))
    shared = []
    for family_id, category in zip(a.family_ids.tolist(), a.categories.tolist(), strict=True):
        if family_id in b_category:
            if b_category[family_id] != category:
                raise ValueError(
                    f"family {family_id!r} is {category!r} in one configuration and "
                    f"{b_category[family_id]!r} in the other"
                )
            shared.append(family_id)
    return shared


def _on_shared_families(
    a: FamilyCounts, b: FamilyCounts, families: Sequence[str]
) -> tuple[FamilyCounts, FamilyCounts]:
    """Both configurations' counts on ``families``, over the same registers."""
    a_shared, b_shared = a.restricted_to(families), b.restricted_to(families)
    if a_shared.registers == b_shared.registers:
        return a_shared, b_shared
    registers = tuple(sorted(set(a_shared.registers) | set(b_shared.registers)))
    return _with_registers(a_shared, registers), _with_registers(b_shared, registers)


def paired_bootstrap_difference(
    a: FamilyCounts,
    b: FamilyCounts,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    metrics: Iterable[str] = RATE_METRICS,
    power: float = DEFAULT_POWER,
) -> pd.DataFrame:
    """CIs of metric(a) − metric(b) over the families both ran, with the SAME resampled
    families applied to both (a paired bootstrap: family difficulty cancels out).

    Columns: metric, estimate_a, estimate_b, difference, ci_low, ci_high, n_valid_resamples,
    n_shared_families, excludes_zero (the interval lies strictly on one side of 0),
    standard_error, p_value (two-sided, H0: no difference), mde (the smallest true difference
    this comparison detects with probability ``power`` at the same confidence),
    interval_method.
    """
    _validate(n_resamples, confidence)
    metric_names = list(metrics)
    families = shared_families(a, b)
    if not families:
        raise ValueError("the two configurations share no families; nothing to compare")
    a_shared, b_shared = _on_shared_families(a, b, families)
    rng = np.random.default_rng(seed)
    # one pass over the resamples for both: the same resampled families apply to each
    totals = resampled_totals(
        a_shared.categories,
        n_resamples,
        rng,
        [
            a_shared.counts,
            a_shared.register_rows,
            a_shared.register_refusals,
            b_shared.counts,
            b_shared.register_rows,
            b_shared.register_refusals,
        ],
    )
    resampled_a, resampled_b = metric_values(*totals[:3]), metric_values(*totals[3:])
    point_a, point_b = _point_metrics(a_shared), _point_metrics(b_shared)
    estimate_a = np.array([float(point_a[name]) for name in metric_names])
    estimate_b = np.array([float(point_b[name]) for name in metric_names])
    samples_a = np.column_stack([resampled_a[name] for name in metric_names])
    samples_b = np.column_stack([resampled_b[name] for name in metric_names])
    comparison = paired_comparison(
        estimate_a,
        estimate_b,
        samples_a,
        samples_b,
        a_shared,
        b_shared,
        metric_names,
        confidence=confidence,
        power=power,
    )
    return pd.DataFrame(
        {
            "metric": metric_names,
            "estimate_a": [_nullable(value) for value in estimate_a],
            "estimate_b": [_nullable(value) for value in estimate_b],
            "difference": [_nullable(value) for value in comparison.difference],
            "ci_low": [_nullable(value) for value in comparison.low],
            "ci_high": [_nullable(value) for value in comparison.high],
            "n_valid_resamples": comparison.n_valid.astype(np.int64),
            "n_shared_families": len(families),
            "excludes_zero": (comparison.low > 0) | (comparison.high < 0),
            "standard_error": [_nullable(value) for value in comparison.standard_error],
            "p_value": [_nullable(value) for value in comparison.p_value],
            "mde": [_nullable(value) for value in comparison.mde],
            "degrees_of_freedom": comparison.degrees_of_freedom,
            "interval_method": comparison.method,
        }
    )


@dataclass(frozen=True)
class PairedComparison:
    difference: np.ndarray
    low: np.ndarray
    high: np.ndarray
    standard_error: np.ndarray
    p_value: np.ndarray
    mde: np.ndarray
    n_valid: np.ndarray
    method: list[str]
    degrees_of_freedom: int


def paired_comparison(
    estimate_a: np.ndarray,
    estimate_b: np.ndarray,
    samples_a: np.ndarray,
    samples_b: np.ndarray,
    a_shared: FamilyCounts,
    b_shared: FamilyCounts,
    metric_names: Sequence[str],
    *,
    confidence: float,
    power: float,
) -> PairedComparison:
    """Interval, two-sided p-value and minimum detectable effect of a − b per metric, from
    paired resamples (the same families drawn for both); see the module docstring."""
    n_families, n_strata = a_shared.n_families, _n_strata(a_shared)
    df = degrees_of_freedom(n_families, n_strata)
    t = float(t_quantile(0.5 + confidence / 2, df))
    difference = estimate_a - estimate_b
    deltas = samples_a - samples_b
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column: metric unavailable
        se = np.nanstd(deltas, axis=0, ddof=1) * stratified_se_factor(n_families, n_strata)
    se = np.where(np.isnan(difference), np.nan, se)
    low, high = difference - t * se, difference + t * se
    method = [PAIRED_T] * len(metric_names)

    # No paired spread: every shared family shows the same difference. As for concordant
    # pairs of a paired proportion, the data bound how many families could differ: the Wilson
    # upper bound of 0 discordant families out of the (Korn–Graubard shrunk) family count,
    # on either side of the difference.
    collapsed = ~np.isnan(difference) & ~(se > 0)
    if collapsed.any():
        _, a_families = _proportion_inputs(a_shared, metric_names)
        _, b_families = _proportion_inputs(b_shared, metric_names)
        z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
        families = np.maximum(np.fmin(a_families, b_families), 1.0)
        n_eff = families * (z / t) ** 2
        _, discordant_bound = wilson_interval(np.zeros_like(n_eff), n_eff, z)
        low = np.where(collapsed, difference - discordant_bound, low)
        high = np.where(collapsed, difference + discordant_bound, high)
        se = np.where(collapsed, discordant_bound / t, se)
        for index in np.flatnonzero(collapsed):
            method[index] = CONCORDANT_FAMILIES
    low, high = np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        statistic = np.abs(difference) / se
    p_value = np.where(se > 0, 2 * scipy_stats.t.sf(statistic, df), np.nan)
    mde = (t + float(t_quantile(power, df))) * se
    return PairedComparison(
        difference=difference,
        low=low,
        high=high,
        standard_error=se,
        p_value=p_value,
        mde=mde,
        n_valid=(~np.isnan(deltas)).sum(axis=0),
        method=method,
        degrees_of_freedom=df,
    )


def _with_registers(counts: FamilyCounts, registers: tuple[str, ...]) -> FamilyCounts:
    """Re-express the register matrices over ``registers`` (missing ones are all zero)."""
    columns = [counts.registers.index(r) if r in counts.registers else -1 for r in registers]

    def widen(matrix: np.ndarray) -> np.ndarray:
        padded = np.concatenate([matrix, np.zeros((matrix.shape[0], 1))], axis=1)
        return padded[:, columns]

    return FamilyCounts(
        family_ids=counts.family_ids,
        categories=counts.categories,
        counts=counts.counts,
        registers=registers,
        register_rows=widen(counts.register_rows),
        register_refusals=widen(counts.register_refusals),
    )


CI_COLUMNS: tuple[str, ...] = (
    "partition_key",
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "n_valid_resamples",
    "standard_error",
    "effective_n",
    "interval_method",
    "n_families",
    "n_resamples",
    "seed",
    "confidence",
)


def family_counts_by_configuration(
    split_counts: pd.DataFrame, register_counts: pd.DataFrame | None = None
) -> dict[str, FamilyCounts]:
    """:func:`family_counts_from_frames` of every configuration in ``family_split_counts``,
    by partition key in sorted order."""
    counts = {}
    for partition_key, frame in split_counts.groupby("partition_key", sort=True):
        registers = (
            register_counts[register_counts["partition_key"] == partition_key]
            if register_counts is not None
            else None
        )
        counts[str(partition_key)] = family_counts_from_frames(frame, registers)
    return counts


def configuration_cis(
    partition_key: str,
    counts: FamilyCounts,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> pd.DataFrame:
    """The ``metric_cis`` rows of one configuration (``CI_COLUMNS``)."""
    cis = bootstrap_cis(counts, n_resamples=n_resamples, seed=seed, confidence=confidence)
    return cis.assign(
        partition_key=partition_key,
        n_families=counts.n_families,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )[list(CI_COLUMNS)]


def bootstrap_all_configurations(
    split_counts: pd.DataFrame,
    register_counts: pd.DataFrame | None = None,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> pd.DataFrame:
    """CIs for every configuration in ``family_split_counts`` (long format, one row per
    (partition_key, metric)). Every configuration uses the same seed with its own generator
    over its own families in canonical order, so its intervals do not depend on which other
    configurations are in the warehouse, nor on their order (``litmus.reuse`` relies on it)."""
    frames = [
        configuration_cis(
            partition_key, counts, n_resamples=n_resamples, seed=seed, confidence=confidence
        )
        for partition_key, counts in family_counts_by_configuration(
            split_counts, register_counts
        ).items()
    ]
    if not frames:
        return pd.DataFrame(columns=list(CI_COLUMNS))
    return pd.concat(frames, ignore_index=True)[list(CI_COLUMNS)]


# ----------------------------------------------------------------------------- private variants

# The headline rates (the catalogue's drift metrics) and the public − private flag threshold.
HEADLINE_METRICS: tuple[str, ...] = _CATALOGUE.drift_metrics
DEFAULT_PUBLIC_GAP_THRESHOLD = _CATALOGUE.public_gap_threshold
MOVER_INDEPENDENT = "mover_wilson"
PUBLIC_PRIVATE_COLUMNS: tuple[str, ...] = (
    "partition_key",
    "metric",
    "public_value",
    "private_value",
    "gap",
    "ci_low",
    "ci_high",
    "n_public_families",
    "n_private_families",
    "flagged",
    "threshold",
    "interval_method",
)


def _subset_intervals(
    subset: FamilyCounts,
    resampled_totals_of_subset: Sequence[np.ndarray],
    metric_names: list[str],
    confidence: float,
) -> tuple[np.ndarray, ProportionIntervals, int]:
    """One family subset's point estimates, their Wilson effective-n intervals from the
    subset's resampled totals, and its number of families."""
    resampled = metric_values(*resampled_totals_of_subset)
    point = _point_metrics(subset)
    estimate = np.array([float(point[m]) for m in metric_names])
    samples = np.column_stack([resampled[m] for m in metric_names])
    totals, families = _proportion_inputs(subset, metric_names)
    intervals = wilson_effective_n_intervals(
        estimate,
        samples,
        totals,
        families,
        n_families=subset.n_families,
        n_strata=_n_strata(subset),
        confidence=confidence,
    )
    return estimate, intervals, subset.n_families


def public_private_gap(
    counts: FamilyCounts,
    private_family_ids: Iterable[str],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    threshold: float = DEFAULT_PUBLIC_GAP_THRESHOLD,
    metrics: Sequence[str] = HEADLINE_METRICS,
) -> pd.DataFrame:
    """metric(public families) − metric(private families) of ONE configuration.

    The families are resampled within (category × public/private) strata — one resample
    draws both subsets, so the gap is that of the same run — and each subset gets the Wilson
    effective-n interval of :func:`bootstrap_cis`; the gap's interval combines them by MOVER
    (Newcombe's square-and-add for independent samples: the two family sets are disjoint).
    ``flagged``: the configuration does markedly better on the public families — the gap's
    interval lies above 0 and the gap exceeds ``threshold``. Empty without both subsets.
    """
    _validate(n_resamples, confidence)
    private = np.isin(counts.family_ids.astype(str), [str(f) for f in private_family_ids])
    if private.all() or not private.any():
        return pd.DataFrame(columns=[c for c in PUBLIC_PRIVATE_COLUMNS if c != "partition_key"])
    metric_names = list(metrics)
    strata = np.array(
        [
            f"{c}|{'private' if p else 'public'}"
            for c, p in zip(counts.categories, private, strict=True)
        ],
        dtype=object,
    )
    # One resample draws both subsets; each subset's totals are the product with its own
    # families' rows, the other's set to zero (whole numbers: the same totals exactly).
    masks = (("public", ~private), ("private", private))
    subset_totals = resampled_totals(
        strata,
        n_resamples,
        np.random.default_rng(seed),
        [
            np.where(mask[:, None], matrix, 0.0)
            for _, mask in masks
            for matrix in (counts.counts, counts.register_rows, counts.register_refusals)
        ],
    )
    parts = {
        name: _subset_intervals(
            counts.restricted_to(counts.family_ids[mask].tolist()),
            subset_totals[3 * index : 3 * index + 3],
            metric_names,
            confidence,
        )
        for index, (name, mask) in enumerate(masks)
    }
    (public, public_ci, n_public), (private_est, private_ci, n_private) = (
        parts["public"],
        parts["private"],
    )
    gap = public - private_est
    low = gap - np.hypot(public - public_ci.low, private_ci.high - private_est)
    high = gap + np.hypot(public_ci.high - public, private_est - private_ci.low)
    return pd.DataFrame(
        {
            "metric": metric_names,
            "public_value": [_nullable(v) for v in public],
            "private_value": [_nullable(v) for v in private_est],
            "gap": [_nullable(v) for v in gap],
            "ci_low": [_nullable(v) for v in low],
            "ci_high": [_nullable(v) for v in high],
            "n_public_families": n_public,
            "n_private_families": n_private,
            "flagged": (low > 0) & (gap > threshold),
            "threshold": threshold,
            "interval_method": MOVER_INDEPENDENT,
        }
    )


def public_private_gaps(
    split_counts: pd.DataFrame,
    private_families: pd.DataFrame,
    **options: object,
) -> pd.DataFrame:
    """:func:`public_private_gap` of every configuration that ran private families
    (``private_families``: partition_key, family_id)."""
    frames = []
    private_by_partition = private_families.groupby("partition_key")["family_id"].agg(list)
    for partition_key, frame in split_counts.groupby("partition_key", sort=True):
        if partition_key not in private_by_partition.index:
            continue
        gaps = public_private_gap(
            family_counts_from_frames(frame), private_by_partition[partition_key], **options
        )
        if not gaps.empty:
            frames.append(gaps.assign(partition_key=partition_key))
    if not frames:
        return pd.DataFrame(columns=list(PUBLIC_PRIVATE_COLUMNS))
    return pd.concat(frames, ignore_index=True)[list(PUBLIC_PRIVATE_COLUMNS)]
