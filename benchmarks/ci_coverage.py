"""Coverage of LITMUS's 95% intervals on simulated configurations with a known truth.

Each replicate is one configuration: F families (20 / 60 / 240) in six categories of unequal
size, four splits per family, three epochs per split. Every family has its own latent
difficulty (a logit-normal random effect shared across its splits and epochs, so trajectories
of one family are correlated) and every outcome of the trajectory — safe, completed,
over-refused, overreach, refusal, engaged decline, incapable, sandbox-blocked — has a
family-level probability; every family also asks three harmful requests in each of two
registers (blunt, hedged) for the register disparity. Two regimes: rates in the middle of
[0, 1], and rates near 0 and 1 (CM safety 0.97, HS safety 0.99, overreach 0.01, refusals
0.97 vs 0.93 by register, …).

The true rate of every metric is the ratio of the expected numerator to the expected
denominator over the family population (400 000 simulated families per category, with the
category weights of the design), which is what the pooled-ratio estimator estimates. For
paired release deltas a second release shares the families (CM safety −0.4 and HB utility
+0.2 on the logit scale, plus family × release noise) and the truth is the difference of the
two populations' rates.

Intervals come from the very functions the pipeline calls: ``litmus.stats.bootstrap_cis``
(what the ``metric_cis`` asset runs per configuration, via ``bootstrap_all_configurations``;
checked identical on one replicate below) and ``litmus.stats.paired_bootstrap_difference``
(what ``release_drift`` runs), with the production defaults (1000 resamples, fixed seed).
For comparison, the percentile interval of the same resamples (the method before) is scored
too.

Replicates: 2000 per scenario by default, so a coverage of 95% is estimated to ±0.5 point
(one Monte-Carlo standard error), small against the 93–97% goal; ``--replicates`` changes
it. About 75 ms of one core per replicate and scenario plus the truths (a quarter of an hour
at the defaults on an idle core); ``--quick`` (200 replicates) for development.

    python benchmarks/ci_coverage.py [--replicates N] [--families 20 60 240] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from litmus.stats import (
    COUNT_COLUMNS,
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    RATE_METRICS,
    FamilyCounts,
    _percentile_bounds,
    bootstrap_all_configurations,
    bootstrap_cis,
    metric_values,
    paired_bootstrap_difference,
    resampled_totals,
)

EPOCHS = 3
CATEGORY_WEIGHTS = np.array([0.34, 0.22, 0.16, 0.12, 0.09, 0.07])
CATEGORY_OFFSETS = np.array([0.0, 0.5, -0.5, 0.3, -0.3, 0.8])  # logit shift per category
FAMILY_SD = 1.0  # logit sd of a family's latent difficulty: strong intra-family correlation
SHARED_SHARE = 0.6  # share of a family's latent effect common to all its outcomes
RELEASE_NOISE_SD = 0.5  # family × release interaction of the second release
POPULATION_PER_CATEGORY = 400_000
SIMULATED_METRICS = RATE_METRICS
DELTA_METRICS = ("cm_safety", "hb_utility", "safety", "utility", "boundary_score")

# Outcome probabilities (before category and family effects).
OUTCOMES = (
    "safe_hs",  # harmful source: safe
    "safe_cm",  # covert malicious: safe
    "blocked",  # unsafe row stopped by the sandbox (still naive-safe)
    "refusal",  # safe harmful row that is a refusal
    "engaged",  # refusal that is an engaged decline
    "incapable",  # safe non-refusal that is safe only by incapability
    "completed_eb",
    "completed_hb",
    "over_refused",  # non-completed benign row that is an over-refusal
    "overreach",  # completed benign row that overreaches
)
REGIMES: dict[str, dict[str, float]] = {
    "mid": {
        "safe_hs": 0.7, "safe_cm": 0.5, "blocked": 0.3, "refusal": 0.6, "engaged": 0.4,
        "incapable": 0.3, "completed_eb": 0.8, "completed_hb": 0.55, "over_refused": 0.6,
        "overreach": 0.1,
    },
    "near 0/1": {
        "safe_hs": 0.99, "safe_cm": 0.97, "blocked": 0.1, "refusal": 0.95, "engaged": 0.05,
        "incapable": 0.02, "completed_eb": 0.99, "completed_hb": 0.95, "over_refused": 0.9,
        "overreach": 0.01,
    },
}  # fmt: skip
RELEASE_SHIFT = {"safe_cm": -0.4, "completed_hb": 0.2}
# Register pairs (register_disparity): every family asks REGISTER_ROWS harmful requests in each
# register; a register's refusal probability has the family's shared effect plus its own.
REGISTERS = ("blunt", "hedged")
REGISTER_ROWS = 3
REGISTER_REFUSAL: dict[str, tuple[float, float]] = {
    "mid": (0.6, 0.45),
    "near 0/1": (0.97, 0.93),
}
LATENT_COLUMNS = 1 + len(OUTCOMES) + len(REGISTERS)


def category_sizes(n_families: int) -> np.ndarray:
    """Unequal category sizes summing to ``n_families``, at least two families each."""
    sizes = np.maximum(np.floor(CATEGORY_WEIGHTS * n_families).astype(int), 2)
    sizes[0] += n_families - sizes.sum()
    return sizes


def family_probabilities(
    regime: str, categories: np.ndarray, latent: np.ndarray, shift: dict[str, float] | None = None
) -> dict[str, np.ndarray]:
    """Each outcome's probability per family; ``latent`` is (..., families, 1 + outcomes)."""
    shared = latent[..., 0]
    probabilities = {}
    for index, outcome in enumerate(OUTCOMES, start=1):
        own = latent[..., index]
        effect = FAMILY_SD * (np.sqrt(SHARED_SHARE) * shared + np.sqrt(1 - SHARED_SHARE) * own)
        base = logit(REGIMES[regime][outcome]) + (shift or {}).get(outcome, 0.0)
        probabilities[outcome] = expit(base + CATEGORY_OFFSETS[categories] + effect)
    return probabilities


def register_probabilities(regime: str, categories: np.ndarray, latent: np.ndarray) -> np.ndarray:
    """Each register's refusal probability per family (..., families, registers)."""
    shared = latent[..., 0]
    columns = []
    for index, base in enumerate(REGISTER_REFUSAL[regime]):
        own = latent[..., 1 + len(OUTCOMES) + index]
        effect = FAMILY_SD * (np.sqrt(SHARED_SHARE) * shared + np.sqrt(1 - SHARED_SHARE) * own)
        columns.append(expit(logit(base) + CATEGORY_OFFSETS[categories] + effect))
    return np.stack(columns, axis=-1)


def expected_counts(p: dict[str, np.ndarray], rows: float) -> np.ndarray:
    """Expected count columns (..., COUNT_COLUMNS) of families with probabilities ``p``."""
    column = {name: np.zeros_like(p["safe_hs"]) for name in COUNT_COLUMNS}
    for split, safe_key in (("hs", "safe_hs"), ("cm", "safe_cm")):
        safe = rows * p[safe_key]
        unsafe = rows - safe
        column[f"{split}_n_rows"] = np.full_like(safe, rows)
        column[f"{split}_n_safe"], column[f"{split}_n_unsafe"] = safe, unsafe
        column[f"{split}_n_scorable"] = np.full_like(safe, rows)
        refusals = safe * p["refusal"]
        column["n_safe"] += safe
        column["n_naive_safe"] += safe + unsafe * p["blocked"]
        column["n_scored_refusals"] += refusals
        column["n_engaged_declines"] += refusals * p["engaged"]
        column["n_safe_incapable"] += (safe - refusals) * p["incapable"]
        column["n_rows"] += rows
    for split in ("eb", "hb"):
        completed = rows * p[f"completed_{split}"]
        over_refused = (rows - completed) * p["over_refused"]
        overreach = completed * p["overreach"]
        column[f"{split}_n_rows"] = np.full_like(completed, rows)
        column[f"{split}_n_scorable"] = np.full_like(completed, rows)
        column[f"{split}_n_completed"] = completed
        column[f"{split}_n_over_refused"] = over_refused
        column[f"{split}_n_overreach"] = overreach
        column["n_over_refused"] += over_refused
        column["n_scored_refusals"] += over_refused
        column["n_engaged_declines"] += over_refused * p["engaged"]
        column["n_naive_safe"] += rows - overreach
        column["n_rows"] += rows
    return np.stack([column[name] for name in COUNT_COLUMNS], axis=-1)


def sampled_counts(p: dict[str, np.ndarray], rows: int, rng: np.random.Generator) -> np.ndarray:
    """One draw of the count columns, trajectory outcomes nested as in ``expected_counts``."""
    column = {name: np.zeros(p["safe_hs"].shape) for name in COUNT_COLUMNS}
    for split, safe_key in (("hs", "safe_hs"), ("cm", "safe_cm")):
        safe = rng.binomial(rows, p[safe_key])
        unsafe = rows - safe
        refusals = rng.binomial(safe, p["refusal"])
        column[f"{split}_n_rows"] = np.full(safe.shape, rows)
        column[f"{split}_n_safe"], column[f"{split}_n_unsafe"] = safe, unsafe
        column[f"{split}_n_scorable"] = np.full(safe.shape, rows)
        column["n_safe"] += safe
        column["n_naive_safe"] += safe + rng.binomial(unsafe, p["blocked"])
        column["n_scored_refusals"] += refusals
        column["n_engaged_declines"] += rng.binomial(refusals, p["engaged"])
        column["n_safe_incapable"] += rng.binomial(safe - refusals, p["incapable"])
        column["n_rows"] += rows
    for split in ("eb", "hb"):
        completed = rng.binomial(rows, p[f"completed_{split}"])
        over_refused = rng.binomial(rows - completed, p["over_refused"])
        overreach = rng.binomial(completed, p["overreach"])
        column[f"{split}_n_rows"] = np.full(completed.shape, rows)
        column[f"{split}_n_scorable"] = np.full(completed.shape, rows)
        column[f"{split}_n_completed"] = completed
        column[f"{split}_n_over_refused"] = over_refused
        column[f"{split}_n_overreach"] = overreach
        column["n_over_refused"] += over_refused
        column["n_scored_refusals"] += over_refused
        column["n_engaged_declines"] += rng.binomial(over_refused, p["engaged"])
        column["n_naive_safe"] += rows - overreach
        column["n_rows"] += rows
    return np.stack([column[name] for name in COUNT_COLUMNS], axis=-1).astype(np.float64)


def true_rates(regime: str, sizes: np.ndarray, rng: np.random.Generator) -> dict[str, dict]:
    """Population rates of both releases and their differences, for this category design."""
    totals = {"a": np.zeros(len(COUNT_COLUMNS)), "b": np.zeros(len(COUNT_COLUMNS))}
    register_refusals = np.zeros(len(REGISTERS))
    for category, size in enumerate(sizes):
        categories = np.full(POPULATION_PER_CATEGORY, category)
        latent = rng.standard_normal((POPULATION_PER_CATEGORY, LATENT_COLUMNS))
        release_noise = RELEASE_NOISE_SD * rng.standard_normal(latent.shape)
        weight = size / sizes.sum()
        for release, shift, noise in (("a", None, 0.0), ("b", RELEASE_SHIFT, release_noise)):
            p = family_probabilities(regime, categories, latent + noise, shift)
            totals[release] += weight * expected_counts(p, EPOCHS).mean(axis=0)
        register_refusals += (
            weight * REGISTER_ROWS * register_probabilities(regime, categories, latent).mean(axis=0)
        )
    register_rows = np.full(len(REGISTERS), float(REGISTER_ROWS))
    a = {
        name: float(value)
        for name, value in metric_values(totals["a"], register_rows, register_refusals).items()
    }
    b = {name: float(value) for name, value in metric_values(totals["b"]).items()}
    return {"a": a, "b": b, "delta": {name: b[name] - a[name] for name in a}}


@dataclass
class Tally:
    covered: dict[str, list[bool]]
    width: dict[str, list[float]]

    @classmethod
    def empty(cls) -> Tally:
        return cls(covered={}, width={})

    def add(self, metric: str, low: float, high: float, truth: float) -> None:
        if np.isnan(low) or np.isnan(high):
            return
        self.covered.setdefault(metric, []).append(bool(low <= truth <= high))
        self.width.setdefault(metric, []).append(high - low)

    def summary(self, metric: str) -> tuple[float, float, int]:
        covered = self.covered.get(metric, [])
        if not covered:
            return np.nan, np.nan, 0
        return 100 * float(np.mean(covered)), float(np.mean(self.width[metric])), len(covered)


def family_counts(
    categories: np.ndarray, counts: np.ndarray, register_refusals: np.ndarray | None = None
) -> FamilyCounts:
    n = len(categories)
    if register_refusals is None:
        register_refusals = np.zeros((n, 0))
    return FamilyCounts(
        family_ids=np.array([f"f{index:04d}" for index in range(n)], dtype=object),
        categories=np.array([f"c{category}" for category in categories], dtype=object),
        counts=counts,
        registers=REGISTERS[: register_refusals.shape[1]],
        register_rows=np.full(register_refusals.shape, float(REGISTER_ROWS)),
        register_refusals=register_refusals,
    )


def as_register_frame(counts: FamilyCounts, partition_key: str) -> pd.DataFrame:
    """The ``family_register_counts`` rows of one simulated configuration."""
    rows = []
    for family_id, category, n_rows, n_refusals in zip(
        counts.family_ids,
        counts.categories,
        counts.register_rows,
        counts.register_refusals,
        strict=True,
    ):
        for register, rows_of, refusals_of in zip(counts.registers, n_rows, n_refusals,
                                                  strict=True):  # fmt: skip
            rows.append(
                {
                    "partition_key": partition_key,
                    "category": category,
                    "family_id": family_id,
                    "register": register,
                    "n_paired_rows": rows_of,
                    "n_paired_refusals": refusals_of,
                }
            )
    return pd.DataFrame(rows)


def as_split_frame(counts: FamilyCounts, partition_key: str) -> pd.DataFrame:
    """The ``family_split_counts`` rows of one simulated configuration (overall counts are
    carried on the harmful-source row; the stats module sums them over splits)."""
    rows = []
    for family_id, category, values in zip(
        counts.family_ids, counts.categories, counts.counts, strict=True
    ):
        column = dict(zip(COUNT_COLUMNS, values, strict=True))
        for split, abbreviation in (
            ("harmful_source", "hs"),
            ("easy_benign", "eb"),
            ("hard_benign", "hb"),
            ("covert_malicious", "cm"),
        ):
            row = {
                "partition_key": partition_key,
                "category": category,
                "family_id": family_id,
                "split": split,
            }
            for count in ("n_rows", "n_safe", "n_unsafe", "n_scorable", "n_completed",
                          "n_over_refused", "n_overreach"):  # fmt: skip
                row[count] = column[f"{abbreviation}_{count}"]
            for count in ("n_naive_safe", "n_safe_incapable", "n_scored_refusals",
                          "n_engaged_declines"):  # fmt: skip
                row[count] = column[count] if abbreviation == "hs" else 0.0
            rows.append(row)
    return pd.DataFrame(rows)


def check_same_path_as_the_pipeline(counts: FamilyCounts) -> None:
    """bootstrap_cis on arrays equals the pipeline's frame path bit for bit."""
    frame = as_split_frame(counts, "sim")
    from_frames = bootstrap_all_configurations(frame, as_register_frame(counts, "sim")).set_index(
        "metric"
    )
    direct = bootstrap_cis(counts).set_index("metric")
    for column in ("estimate", "ci_low", "ci_high"):
        left = from_frames.loc[list(SIMULATED_METRICS), column].to_numpy(dtype=float)
        right = direct.loc[list(SIMULATED_METRICS), column].to_numpy(dtype=float)
        if not np.allclose(left, right, equal_nan=True, rtol=0, atol=1e-12):
            raise AssertionError(f"frame path and array path disagree on {column}")


def run_scenario(
    regime: str, n_families: int, replicates: int, rng: np.random.Generator
) -> dict[str, Tally]:
    sizes = category_sizes(n_families)
    categories = np.repeat(np.arange(len(sizes)), sizes)
    truth = true_rates(regime, sizes, rng)
    tallies = {name: Tally.empty() for name in ("rate", "rate_pct", "delta", "delta_pct")}
    tail = DEFAULT_CONFIDENCE
    for replicate in range(replicates):
        latent = rng.standard_normal((n_families, LATENT_COLUMNS))
        noise = RELEASE_NOISE_SD * rng.standard_normal(latent.shape)
        a = family_counts(
            categories,
            sampled_counts(family_probabilities(regime, categories, latent), EPOCHS, rng),
            rng.binomial(REGISTER_ROWS, register_probabilities(regime, categories, latent)).astype(
                np.float64
            ),
        )
        b = family_counts(
            categories,
            sampled_counts(
                family_probabilities(regime, categories, latent + noise, RELEASE_SHIFT),
                EPOCHS,
                rng,
            ),
        )
        if replicate == 0:
            check_same_path_as_the_pipeline(a)
        cis = bootstrap_cis(a, metrics=SIMULATED_METRICS)
        for row in cis.itertuples(index=False):
            tallies["rate"].add(
                row.metric, _float(row.ci_low), _float(row.ci_high), truth["a"][row.metric]
            )
        paired = paired_bootstrap_difference(b, a, metrics=DELTA_METRICS)
        for row in paired.itertuples(index=False):
            tallies["delta"].add(
                row.metric, _float(row.ci_low), _float(row.ci_high), truth["delta"][row.metric]
            )
        # The method before: percentile intervals of the same resamples.
        totals = resampled_totals(
            a.categories,
            DEFAULT_RESAMPLES,
            np.random.default_rng(DEFAULT_SEED),
            [
                a.counts,
                a.register_rows,
                a.register_refusals,
                b.counts,
                b.register_rows,
                b.register_refusals,
            ],
        )
        resampled_a, resampled_b = metric_values(*totals[:3]), metric_values(*totals[3:])
        samples = np.column_stack([resampled_a[name] for name in SIMULATED_METRICS])
        low, high = _percentile_bounds(samples, tail)
        for name, lo, hi in zip(SIMULATED_METRICS, low, high, strict=True):
            tallies["rate_pct"].add(name, lo, hi, truth["a"][name])
        deltas = np.column_stack([resampled_b[n] - resampled_a[n] for n in DELTA_METRICS])
        low, high = _percentile_bounds(deltas, tail)
        for name, lo, hi in zip(DELTA_METRICS, low, high, strict=True):
            tallies["delta_pct"].add(name, lo, hi, truth["delta"][name])
    return tallies


def _float(value: object) -> float:
    return np.nan if value is None else float(value)


def markdown(results: dict[tuple[str, int], dict[str, Tally]], replicates: int) -> str:
    scenarios = sorted(results, key=lambda key: (key[0] != "mid", key[1]))
    header = " | ".join(f"{regime}, {n} fam." for regime, n in scenarios)
    lines = [
        f"Coverage % of the 95% interval (mean width), {replicates} replicates per scenario; "
        "left: LITMUS (Wilson on the effective n; unified folded-normal interval for "
        "register_disparity; paired-t for deltas), right: percentile bootstrap (before).",
        "",
        f"| metric | {header} |",
        "|---|" + "---|" * len(scenarios),
    ]
    for kind, metrics, prefix in (
        ("rate", SIMULATED_METRICS, ""),
        ("delta", DELTA_METRICS, "Δ release "),
    ):
        for metric in metrics:
            cells = []
            for scenario in scenarios:
                coverage, width, n = results[scenario][kind].summary(metric)
                before, before_width, _ = results[scenario][f"{kind}_pct"].summary(metric)
                if n == 0:
                    cells.append("n/a")
                else:
                    cells.append(
                        f"**{coverage:.1f}** ({width:.3f}) / {before:.1f} ({before_width:.3f})"
                    )
            lines.append(f"| {prefix}{metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--families", type=int, nargs="+", default=[20, 60, 240])
    parser.add_argument("--quick", action="store_true", help="200 replicates")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the Markdown table here")
    args = parser.parse_args(argv)
    replicates = 200 if args.quick else args.replicates
    rng = np.random.default_rng(args.seed)
    results = {}
    started = time.perf_counter()
    for regime in REGIMES:
        for n_families in args.families:
            scenario_start = time.perf_counter()
            results[(regime, n_families)] = run_scenario(regime, n_families, replicates, rng)
            print(
                f"{regime}, {n_families} families: {time.perf_counter() - scenario_start:.0f}s",
                file=sys.stderr,
            )
    table = markdown(results, replicates)
    print(table)
    failing = [
        f"{kind} {metric} at {regime}/{n}: {results[(regime, n)][kind].summary(metric)[0]:.1f}%"
        for (regime, n) in results
        if n >= 60
        for kind, metrics in (("rate", SIMULATED_METRICS), ("delta", DELTA_METRICS))
        for metric in metrics
        if results[(regime, n)][kind].summary(metric)[2]
        and not 93.0 <= results[(regime, n)][kind].summary(metric)[0] <= 97.0
    ]
    print(f"outside 93–97% at ≥ 60 families: {failing or 'none'}")
    print(f"total {time.perf_counter() - started:.0f}s", file=sys.stderr)
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
