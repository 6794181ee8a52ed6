"""Plug-in deltas: what a plug-in (a guard, an aligner) changes, with everything else fixed.

Configurations that differ **only** in plug-in — same model, model release, harness, harness
version, suite and suite version — are compared with a baseline plug-in of the same group
by the paired family bootstrap of :mod:`litmus.stats` (the same resampled families for both,
over the families both ran), for every headline metric (CM safety, HB utility, Safety,
Utility, boundary score), like release drift. The baseline is the plug-in named ``bare`` or
``none`` when the group has one, else the alphabetically first; ``delta`` is
*plug-in − baseline*. Withheld configurations are left out, as in release drift.

Each delta gets a decision (:func:`assess_plugin_deltas`), with the multiplicity control of
release drift: the two-sided p-values of every plug-in delta of the publication (all
metrics, all pairs) are adjusted together (Holm by default, or Benjamini–Hochberg); a change
larger than the threshold (default 2 points, the regression threshold) with an adjusted
p-value below α is ``better`` or ``worse``; otherwise a comparison whose MDE at the adjusted
level exceeds the threshold is ``underpowered`` (it could not have seen a change of the size
that matters); otherwise ``no material change``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from litmus.neutralize import display_name, for_matplotlib
from litmus.png import png_bytes
from litmus.releases.alerts import (
    DEFAULT_CORRECTION,
    DEFAULT_REGRESSION_THRESHOLD,
    adjusted_tests,
    validate_policy,
)
from litmus.releases.drift import ASSESSMENT_COLUMNS, DRIFT_METRICS, METRIC_LABELS, points
from litmus.releases.paired import NotCompared, compare_pair, paired_columns
from litmus.reuse import ConfigurationCounts, pair_key, record_digests, stored_pairs
from litmus.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from litmus.warehouse import atomically, replace_rows, table_exists

BASELINE_PLUGINS = ("bare", "none")
GROUP_COLUMNS = ("model", "model_release", "harness", "harness_version", "suite", "suite_version")
PLUGIN_DELTA_COLUMNS: tuple[str, ...] = (
    *GROUP_COLUMNS,
    "baseline_plugin",
    "plugin",
    "baseline_partition_key",
    "partition_key",
    "metric",
    "baseline_value",
    "value",
    "delta",
    "ci_low",
    "ci_high",
    "excludes_zero",
    "standard_error",
    "p_value",
    "mde",
    "interval_method",
    "n_shared_families",
    "degrees_of_freedom",
    "n_resamples",
    "seed",
    "confidence",
)
BETTER, WORSE, UNDERPOWERED, NO_MATERIAL_CHANGE = (
    "better",
    "worse",
    "underpowered",
    "no material change",
)


def baseline_plugin(plugins: Sequence[str]) -> str:
    for name in BASELINE_PLUGINS:
        if name in plugins:
            return name
    return sorted(plugins)[0]


def compute_plugin_deltas(
    configurations: pd.DataFrame,
    split_counts: pd.DataFrame | ConfigurationCounts,
    *,
    withheld: Collection[str] = (),
    metrics: Sequence[str] = DRIFT_METRICS,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    reusable: Mapping[str, tuple[str, pd.DataFrame]] | None = None,
    pair_digests: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Paired deltas of every plug-in against its group's baseline; and why a pair was not
    compared. ``configurations``: rows of ``configuration_identities``.

    ``reusable``: :func:`stored_plugin_pairs`; a pair whose two configurations' counts (and
    the parameters) are unchanged is taken from there, not bootstrapped again
    (``litmus.reuse``). ``pair_digests``, when given, receives each compared pair's digest,
    to store with the rows (:func:`replace_plugin_deltas`)."""
    reusable = reusable or {}
    published = configurations[~configurations["partition_key"].isin(set(withheld))]
    counts = (
        split_counts
        if isinstance(split_counts, ConfigurationCounts)
        else ConfigurationCounts.from_frame(split_counts)
    )
    frames, skipped = [], []
    for group_key, group in published.groupby(list(GROUP_COLUMNS), sort=True):
        if group["plugin"].nunique() < 2:
            continue
        if group["plugin"].duplicated().any():
            skipped.append(f"{group_key}: a plug-in appears twice; not compared")
            continue
        base_name = baseline_plugin(group["plugin"].astype(str).tolist())
        base = group[group["plugin"] == base_name].iloc[0]
        if base["partition_key"] not in counts:
            skipped.append(f"{base['partition_key']}: no family counts")
            continue
        for row in group[group["plugin"] != base_name].sort_values("plugin").itertuples():
            key = pair_key(base["partition_key"], row.partition_key)
            try:
                compared = compare_pair(
                    row.partition_key,
                    base["partition_key"],
                    counts,
                    _PAIRED_COLUMNS,
                    stored=reusable.get(key),
                    metrics=metrics,
                    n_resamples=n_resamples,
                    seed=seed,
                    confidence=confidence,
                )
            except NotCompared as reason:
                skipped.append(f"{row.partition_key} vs {base['partition_key']}: {reason}")
                continue
            if pair_digests is not None:
                pair_digests[key] = compared.digest
            frame = compared.rows
            for column, value in zip(GROUP_COLUMNS, group_key, strict=True):
                frame[column] = value
            frame["baseline_plugin"] = base_name
            frame["plugin"] = row.plugin
            frame["baseline_partition_key"] = base["partition_key"]
            frame["partition_key"] = row.partition_key
            frame["n_resamples"], frame["seed"], frame["confidence"] = (
                n_resamples,
                seed,
                confidence,
            )
            frames.append(frame[list(PLUGIN_DELTA_COLUMNS)])
    deltas = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=list(PLUGIN_DELTA_COLUMNS))
    )
    return deltas, skipped


def assess_plugin_deltas(
    deltas: pd.DataFrame,
    *,
    threshold: float = DEFAULT_REGRESSION_THRESHOLD,
    correction: str = DEFAULT_CORRECTION,
    power: float = 0.80,
) -> pd.DataFrame:
    """``deltas`` plus the decision on each (module docstring): ``threshold``,
    ``correction``, ``n_tests`` (the tests the correction spans: every delta with a
    p-value), ``p_adjusted``, ``mde_adjusted`` (the MDE at the Bonferroni level α / n_tests,
    the strictest step of either correction) and ``decision``."""
    validate_policy(threshold, DRIFT_METRICS, correction)
    assessed = deltas.copy()
    if assessed.empty:
        for column in ASSESSMENT_COLUMNS:
            assessed[column] = pd.Series(dtype="object")
        return assessed
    tests = adjusted_tests(assessed, correction, power)
    n_tests, adjusted, alpha = tests.n_tests, tests.p_adjusted, tests.alpha
    mde_adjusted, delta = tests.mde_adjusted, tests.delta
    material = (np.abs(delta) > threshold) & (adjusted < alpha)
    decision = np.where(
        material & (delta > 0),
        BETTER,
        np.where(
            material,
            WORSE,
            np.where(~(mde_adjusted <= threshold), UNDERPOWERED, NO_MATERIAL_CHANGE),
        ),
    )
    decision = np.where(np.isnan(delta), None, decision)
    return assessed.assign(
        threshold=float(threshold),
        correction=correction,
        n_tests=n_tests,
        p_adjusted=adjusted,
        mde_adjusted=mde_adjusted,
        decision=decision,
    )


def read_configurations(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    if not table_exists(con, "configuration_identities"):
        raise LookupError("dbt model 'configuration_identities' is not in the warehouse")
    return con.sql(
        "SELECT partition_key, config_key, model, model_release, harness, harness_version, "
        "plugin, suite, suite_version FROM configuration_identities ORDER BY partition_key"
    ).df()


# plugin_deltas column ← paired_bootstrap_difference column
_PAIRED_COLUMNS = paired_columns(older_value="baseline_value", newer_value="value")


def stored_plugin_pairs(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, pd.DataFrame]]:
    """The stored paired bootstrap of every pair in ``plugin_deltas`` (``litmus.reuse``)."""
    return stored_pairs(
        con,
        "plugin_deltas",
        _PAIRED_COLUMNS,
        newer="partition_key",
        older="baseline_partition_key",
    )


def replace_plugin_deltas(
    con: duckdb.DuckDBPyConnection,
    deltas: pd.DataFrame,
    pair_digests: Mapping[str, str] | None = None,
) -> None:
    """Store ``deltas`` (assessed, :func:`assess_plugin_deltas`) as table ``plugin_deltas``,
    with the pairs' digests when given (none stored: every pair is bootstrapped next time)."""
    typed = deltas.reindex(columns=[*PLUGIN_DELTA_COLUMNS, *ASSESSMENT_COLUMNS]).copy()
    numbers = {"baseline_value", "value", "delta", "ci_low", "ci_high", "standard_error",
               "p_value", "mde", "confidence", "threshold", "p_adjusted",
               "mde_adjusted"}  # fmt: skip
    for column in typed.columns:
        if column in numbers:
            typed[column] = pd.to_numeric(typed[column]).astype("float64")
        elif column in ("n_shared_families", "n_resamples", "seed", "degrees_of_freedom",
                        "n_tests"):  # fmt: skip
            typed[column] = pd.to_numeric(typed[column]).astype("int64")
        elif column == "excludes_zero":
            typed[column] = typed[column].astype(bool)
        else:
            typed[column] = typed[column].astype("string")

    def replace() -> None:
        replace_rows(con, "plugin_deltas", typed)
        record_digests(con, "plugin_deltas", pair_digests or {})

    atomically(con, replace, what="plug-in deltas")


def read_plugin_deltas(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The stored ``plugin_deltas`` rows (a read-only connection is enough)."""
    return con.sql("SELECT * FROM plugin_deltas").df()


def plugin_delta_lines(deltas: pd.DataFrame) -> list[str]:
    """One readable line per compared plug-in (deltas in points, CI, MDE)."""
    lines = []
    for _, pair in deltas.groupby([*GROUP_COLUMNS, "plugin"], sort=True):
        first = pair.iloc[0]
        cells = []
        for row in pair.itertuples(index=False):
            if pd.isna(row.delta):
                continue
            cells.append(plugin_delta_cell(row._asdict(), with_label=True))
        lines.append(
            display_name(
                f"{first['model']}@{first['model_release']}/{first['harness']}@"
                f"{first['harness_version']}"
            )
            + f" on {display_name(str(first['suite']) + '@' + str(first['suite_version']))}: "
            f"{display_name(first['plugin'])} − {display_name(first['baseline_plugin'])}: "
            + "; ".join(cells)
        )
    return lines


def plugin_delta_cell(row: Mapping[str, Any], *, with_label: bool = False) -> str:
    """One metric's delta as text: points with ``*`` when the CI excludes 0, the CI, the MDE
    at 80% power and (once assessed) the decision with the adjusted p-value."""
    if pd.isna(row.get("delta")):
        return "n/a"
    marker = "*" if bool(row.get("excludes_zero")) else ""
    text = f"{points(row['delta'])}{marker} [{points(row['ci_low'])}, {points(row['ci_high'])}]"
    if pd.notna(row.get("mde")):
        text += f" MDE {float(row['mde']) * 100:.1f} pts"
    decision = row.get("decision")
    if isinstance(decision, str) and decision:
        text += f" → {decision}"
        if pd.notna(row.get("p_adjusted")):
            text += f" ({row['correction']} p={float(row['p_adjusted']):.2g})"
    if with_label:
        text = f"{METRIC_LABELS.get(row['metric'], row['metric'])} {text}"
    return text


def _plot_text(text: object) -> str:
    """Record text as a plot label (the matplotlib boundary's helper), bounded length."""
    return for_matplotlib(str(text)[:80])


# its file name in exports/ (staged with the board: litmus.trust.publication)
PLUGIN_DELTA_PLOT = "plugin_deltas.png"


def plugin_delta_plot_png(deltas: pd.DataFrame, *, dpi: int = 100) -> bytes:
    """A forest plot: one panel per metric, one row per compared plug-in, the paired delta
    with its 95% CI; a CI that excludes 0 is drawn solid, one that does not is faded."""
    metrics = [m for m in DRIFT_METRICS if m in set(deltas["metric"])] or list(DRIFT_METRICS)
    pairs = deltas[[*GROUP_COLUMNS, "plugin", "baseline_plugin"]].drop_duplicates()
    labels = [
        _plot_text(f"{row.model}@{row.model_release}: {row.plugin} − {row.baseline_plugin}")
        for row in pairs.itertuples(index=False)
    ]
    height = 1.2 + 0.35 * max(len(labels), 1)
    figure = Figure(figsize=(2.6 * len(metrics) + 2.5, height), dpi=dpi)
    FigureCanvasAgg(figure)
    axes_row = figure.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    y = np.arange(len(labels))
    for axes, metric in zip(axes_row, metrics, strict=True):
        for position, pair in zip(y, pairs.itertuples(index=False), strict=True):
            match = deltas[
                (deltas["metric"] == metric)
                & (deltas["plugin"] == pair.plugin)
                & (deltas["model"] == pair.model)
                & (deltas["model_release"] == pair.model_release)
                & (deltas["harness"] == pair.harness)
                & (deltas["harness_version"] == pair.harness_version)
                & (deltas["suite"] == pair.suite)
                & (deltas["suite_version"] == pair.suite_version)
            ]
            if match.empty or pd.isna(match["delta"].iloc[0]):
                continue
            row = match.iloc[0]
            alpha = 1.0 if row["excludes_zero"] else 0.45
            axes.errorbar(
                [row["delta"]], [position],
                xerr=[[row["delta"] - row["ci_low"]], [row["ci_high"] - row["delta"]]],
                fmt="o", color="#0969da", alpha=alpha, capsize=3,
            )  # fmt: skip
        axes.axvline(0.0, color="#57606a", linewidth=0.8)
        axes.set_title(METRIC_LABELS.get(metric, metric), fontsize=10)
        axes.grid(alpha=0.25)
        axes.set_xlabel("delta (plug-in − baseline)", fontsize=8)
    axes_row[0].set_yticks(y, labels, fontsize=8)
    figure.suptitle("plug-in deltas (paired family bootstrap, 95% CI)", fontsize=11)
    figure.tight_layout()
    return png_bytes(figure)
