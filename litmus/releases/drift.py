"""Release drift (SPEC §9): every release of a lineage against the release before it.

A **lineage** is model × harness × plug-in (``lineage_key``); its configurations are the
releases. Releases are compared only on the same suite (name and version): different suites
have different families, and a paired comparison needs shared families.

Release order within (lineage, suite):

- when every ``model_release`` of the group is an ISO date (``YYYY-MM-DD``, optionally with a
  time), releases are ordered by that text — lexicographic order of ISO dates is time order;
- otherwise (``"v2"``, ``"latest"``, mixed schemes) by when the configuration was first
  ingested (the earliest ``raw_files.ingested_at`` of its trajectories), then by release text.

Ties (one release under two harness versions) are broken by harness version, then partition
key, so the order is total and reproducible. Each configuration is compared with its
predecessor by the **paired family-cluster bootstrap** of :mod:`litmus.stats`: the same
resampled families are applied to both, over the families both ran, with a fixed seed.
``delta`` is *to − from*, so a drop is negative.

Withheld configurations (a publication gate failed, or none was evaluated) are left out
entirely: their numbers are unpublished, so they are neither compared nor plotted, and the
next published release is compared with the last published one before it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pandas as pd

from litmus.gates.publication_decision import withheld_reasons
from litmus.metric_catalogue import catalogue
from litmus.neutralize import display_name
from litmus.releases.paired import NotCompared, PairedComparison, compare_pair, paired_columns
from litmus.reuse import ConfigurationCounts, pair_key, record_digests, stored_pairs
from litmus.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from litmus.warehouse import atomically, replace_rows, table_exists

# Bump when the comparison itself changes (what is compared, how it is ordered).
DRIFT_VERSION = "1"

# The compared metrics and their labels: the metric catalogue's (litmus.metric_catalogue).
DRIFT_METRICS: tuple[str, ...] = catalogue().drift_metrics
METRIC_LABELS: dict[str, str] = catalogue().labels

ORDER_BY_RELEASE = "model_release (ISO date)"
ORDER_BY_INGESTION = "first ingestion time"

_ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)

CONFIGURATION_COLUMNS: tuple[str, ...] = (
    "partition_key",
    "config_key",
    "lineage_key",
    "model_release",
    "harness_version",
    "suite",
    "suite_version",
    "first_ingested_at",
)
DRIFT_COLUMNS: tuple[str, ...] = (
    "lineage_key",
    "suite",
    "suite_version",
    "comparison",
    "release_order",
    "from_partition_key",
    "to_partition_key",
    "from_config_key",
    "to_config_key",
    "from_release",
    "to_release",
    "metric",
    "from_value",
    "to_value",
    "delta",
    "ci_low",
    "ci_high",
    "excludes_zero",
    "standard_error",
    "p_value",
    "mde",
    "degrees_of_freedom",
    "interval_method",
    "n_shared_families",
    "n_resamples",
    "seed",
    "confidence",
)
# Added by the regression assessment (litmus.releases.alerts.assess_comparisons) before publication.
ASSESSMENT_COLUMNS: tuple[str, ...] = (
    "threshold",
    "correction",
    "n_tests",
    "p_adjusted",
    "mde_adjusted",
    "decision",
)


@dataclass(frozen=True)
class DriftResult:
    """``comparisons``: one row per (release pair, metric), ``DRIFT_COLUMNS``.
    ``releases``: the published configurations of every compared group in release order
    (``CONFIGURATION_COLUMNS`` plus ``release_rank`` and ``release_order``).
    ``skipped``: why a group or pair was not compared, for people.
    ``pair_digests``: what each compared pair's bootstrap was computed from, by
    :func:`pair_key` (``litmus.reuse``); ``recomputed``: the pairs bootstrapped this time."""

    comparisons: pd.DataFrame
    releases: pd.DataFrame
    skipped: list[str] = field(default_factory=list)
    pair_digests: dict[str, str] = field(default_factory=dict)
    recomputed: list[str] = field(default_factory=list)


# release_drift column ← paired_bootstrap_difference column
_PAIRED_COLUMNS = paired_columns(older_value="from_value", newer_value="to_value")


def stored_drift_pairs(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, pd.DataFrame]]:
    """The stored paired bootstrap of every pair in ``release_drift`` (``litmus.reuse``)."""
    return stored_pairs(
        con,
        "release_drift",
        _PAIRED_COLUMNS,
        newer="to_partition_key",
        older="from_partition_key",
    )


def is_iso_release(model_release: str) -> bool:
    return bool(_ISO_DATE.fullmatch(model_release))


def order_releases(configurations: pd.DataFrame) -> pd.DataFrame:
    """The configurations of ONE (lineage, suite) group in release order.

    Adds ``release_rank`` (1 = oldest) and ``release_order`` (the rule used; see the module
    docstring). ``first_ingested_at`` is only consulted when some release is not an ISO date.
    """
    if configurations.empty:
        return configurations.assign(release_rank=pd.Series(dtype="int64"), release_order="")
    releases = configurations["model_release"].astype(str)
    if releases.map(is_iso_release).all():
        keys, rule = ["model_release", "harness_version", "partition_key"], ORDER_BY_RELEASE
    else:
        if configurations["first_ingested_at"].isna().any():
            missing = configurations.loc[configurations["first_ingested_at"].isna()]
            raise ValueError(
                "cannot order releases that are not ISO dates without an ingestion time: "
                + ", ".join(missing["partition_key"].astype(str))
            )
        keys = ["first_ingested_at", "model_release", "harness_version", "partition_key"]
        rule = ORDER_BY_INGESTION
    ordered = configurations.sort_values(keys, kind="stable").reset_index(drop=True)
    return ordered.assign(release_rank=np.arange(1, len(ordered) + 1), release_order=rule)


def compute_release_drift(
    configurations: pd.DataFrame,
    split_counts: pd.DataFrame | ConfigurationCounts,
    *,
    withheld: Collection[str] = (),
    metrics: Sequence[str] = DRIFT_METRICS,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    reusable: Mapping[str, tuple[str, pd.DataFrame]] | None = None,
) -> DriftResult:
    """Compare every published release with its published predecessor.

    ``configurations``: one row per configuration (``CONFIGURATION_COLUMNS``; the dbt model
    ``configuration_identities`` plus the first ingestion time). ``split_counts``: rows of the
    dbt model ``family_split_counts``, or :meth:`ConfigurationCounts.from_warehouse` (only the
    counts of pairs that are bootstrapped are read). ``withheld``: partition keys whose
    numbers are not published. ``reusable``: :func:`stored_drift_pairs`; a pair whose stored
    digest equals what it would be computed from now is taken from there instead of being
    bootstrapped again (the bootstrap of a pair depends on the two configurations' counts
    only: ``litmus.reuse``).
    """
    _check_drift_inputs(configurations, metrics)
    reusable = reusable or {}
    pair_digests: dict[str, str] = {}
    recomputed: list[str] = []

    published = configurations[~configurations["partition_key"].isin(set(withheld))]
    counts = (
        split_counts
        if isinstance(split_counts, ConfigurationCounts)
        else ConfigurationCounts.from_frame(split_counts)
    )
    comparison_frames: list[pd.DataFrame] = []
    release_frames: list[pd.DataFrame] = []
    skipped: list[str] = [
        f"{key}: withheld by the publication gates, not compared"
        for key in sorted(set(configurations["partition_key"]) & set(withheld))
    ]

    group_keys = ["lineage_key", "suite", "suite_version"]
    for (lineage, suite, suite_version), group in published.groupby(group_keys, sort=True):
        if len(group) < 2:
            continue
        ordered = order_releases(group)
        release_frames.append(ordered)
        for compared_pair in _compare_consecutive_releases(
            ordered,
            counts,
            reusable,
            metrics=metrics,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
        ):
            if isinstance(compared_pair, str):
                skipped.append(compared_pair)
                continue
            key, compared, rows = compared_pair
            if compared.bootstrapped:
                recomputed.append(key)
            pair_digests[key] = compared.digest
            comparison_frames.append(
                rows.assign(lineage_key=lineage, suite=suite, suite_version=suite_version)
            )
    return DriftResult(
        comparisons=_stacked(comparison_frames, list(DRIFT_COLUMNS)),
        releases=_stacked(
            release_frames, [*CONFIGURATION_COLUMNS, "release_rank", "release_order"]
        ),
        skipped=skipped,
        pair_digests=pair_digests,
        recomputed=recomputed,
    )


def _stacked(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """The frames one under the other with ``columns`` (an empty frame of them if none)."""
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


def _check_drift_inputs(configurations: pd.DataFrame, metrics: Sequence[str]) -> None:
    unknown = sorted(set(metrics) - set(DRIFT_METRICS))
    if unknown:
        raise ValueError(f"unknown drift metric(s) {unknown}; choose from {list(DRIFT_METRICS)}")
    missing = sorted(set(CONFIGURATION_COLUMNS) - set(configurations.columns))
    if missing:
        raise ValueError(f"configurations lack column(s) {missing}")
    duplicated = configurations["partition_key"].duplicated()
    if duplicated.any():
        keys = sorted(set(configurations.loc[duplicated, "partition_key"]))
        raise ValueError(f"configuration(s) listed twice (mixed suites or keys?): {keys}")


def _compare_consecutive_releases(
    ordered: pd.DataFrame,
    counts: ConfigurationCounts,
    reusable: Mapping[str, tuple[str, pd.DataFrame]],
    *,
    metrics: Sequence[str],
    n_resamples: int,
    seed: int,
    confidence: float,
) -> Iterator[str | tuple[str, PairedComparison, pd.DataFrame]]:
    """Each release of one lineage against its predecessor: (pair key, the comparison, its
    rows with the pair's identity), or why the pair was not compared."""
    lineage = ordered["lineage_key"].iloc[0]
    rows = ordered.to_dict("records")
    for index, (older, newer) in enumerate(itertools.pairwise(rows), start=1):
        pair = f"{lineage} {older['model_release']} → {newer['model_release']}"
        key = pair_key(older["partition_key"], newer["partition_key"])
        try:
            compared = compare_pair(
                newer["partition_key"],
                older["partition_key"],
                counts,
                _PAIRED_COLUMNS,
                stored=reusable.get(key),
                metrics=metrics,
                n_resamples=n_resamples,
                seed=seed,
                confidence=confidence,
                drift=DRIFT_VERSION,
            )
        except NotCompared as reason:
            yield f"{pair}: {reason}"
            continue
        yield (
            key,
            compared,
            compared.rows.assign(
                comparison=index,
                release_order=ordered["release_order"].iloc[0],
                from_partition_key=older["partition_key"],
                to_partition_key=newer["partition_key"],
                from_config_key=older["config_key"],
                to_config_key=newer["config_key"],
                from_release=older["model_release"],
                to_release=newer["model_release"],
                n_resamples=n_resamples,
                seed=seed,
                confidence=confidence,
            ),
        )


@dataclass(frozen=True)
class DriftInputs:
    configurations: pd.DataFrame
    withheld: dict[str, list[str]]


def read_drift_inputs(con: duckdb.DuckDBPyConnection) -> DriftInputs:
    """What :func:`compute_release_drift` needs besides the counts, from the dbt models and
    the gates table (the counts: :meth:`ConfigurationCounts.from_warehouse`)."""
    for model in ("configuration_identities", "family_split_counts"):
        if not table_exists(con, model):
            raise LookupError(
                f"dbt model {model!r} is not in the warehouse; build the metrics first"
            )
    configurations = con.sql(
        """
        WITH first_seen AS (
            SELECT t.partition_key, min(f.ingested_at) AS first_ingested_at
            FROM raw_trajectories t JOIN raw_files f ON f.file_hash = t.source_file_hash
            GROUP BY t.partition_key
        )
        SELECT c.partition_key, c.config_key, c.lineage_key, c.model_release,
               c.harness_version, c.suite, c.suite_version, s.first_ingested_at
        FROM configuration_identities c LEFT JOIN first_seen s USING (partition_key)
        ORDER BY c.partition_key
        """
    ).df()
    withheld = withheld_reasons(con, configurations["partition_key"].tolist())
    return DriftInputs(configurations, withheld)


def replace_release_drift(
    con: duckdb.DuckDBPyConnection,
    comparisons: pd.DataFrame,
    pair_digests: Mapping[str, str] | None = None,
) -> None:
    """Atomically replace the ``release_drift`` table with ``comparisons`` (assessment
    columns not yet filled are stored as NULL), with the pairs' digests when given (none
    stored means every pair is bootstrapped again next time)."""
    rows = _typed(comparisons)

    def replace() -> None:
        replace_rows(con, "release_drift", rows)
        record_digests(con, "release_drift", pair_digests or {})

    atomically(con, replace, what="release drift")


def read_release_drift(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The stored ``release_drift`` rows (a read-only connection is enough)."""
    return con.sql("SELECT * FROM release_drift").df()


def read_published_cis(con: duckdb.DuckDBPyConnection, metrics: Sequence[str]) -> pd.DataFrame:
    """The published estimate and interval of ``metrics`` for every configuration."""
    return con.sql(
        "SELECT partition_key, metric, estimate, ci_low, ci_high FROM metric_cis "
        "WHERE list_contains(?, metric)",
        params=[list(metrics)],
    ).df()


def _typed(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Column types DuckDB can bind even when the frame is empty (object → string)."""
    typed = comparisons.reindex(columns=[*DRIFT_COLUMNS, *ASSESSMENT_COLUMNS])
    floats = (
        "from_value", "to_value", "delta", "ci_low", "ci_high", "confidence", "standard_error",
        "p_value", "mde", "threshold", "p_adjusted", "mde_adjusted",
    )  # fmt: skip
    for column in typed.columns:
        if column in floats:
            typed[column] = pd.to_numeric(typed[column], errors="raise").astype("float64")
        elif column == "n_tests":
            typed[column] = pd.to_numeric(typed[column]).astype("Int64")
        elif column in (
            "comparison", "n_shared_families", "n_resamples", "seed", "degrees_of_freedom"
        ):  # fmt: skip
            typed[column] = typed[column].astype("int64")
        elif column == "excludes_zero":
            typed[column] = typed[column].astype(bool)
        else:
            typed[column] = typed[column].astype("string")
    return typed


def drift_summary_lines(
    comparisons: pd.DataFrame, metrics: Iterable[str] = DRIFT_METRICS
) -> list[str]:
    """One readable line per compared release pair: per metric the delta in points with its
    CI, the minimum detectable effect, and (once assessed) the decision with the raw and
    multiplicity-adjusted p-values."""
    lines = []
    wanted = list(metrics)
    for _, pair in comparisons.groupby(
        ["lineage_key", "suite", "suite_version", "comparison"], sort=True
    ):
        first = pair.iloc[0]
        cells = []
        for metric in wanted:
            row = pair[pair["metric"] == metric]
            if row.empty or pd.isna(row["delta"].iloc[0]):
                continue
            record = row.iloc[0]
            delta, low, high = (float(record[c]) for c in ("delta", "ci_low", "ci_high"))
            marker = "*" if bool(record["excludes_zero"]) else ""
            interval = f"[{points(low)}, {points(high)}]"
            cell = f"{METRIC_LABELS[metric]} {points(delta)}{marker} {interval}"
            if "mde" in record and pd.notna(record["mde"]):
                cell += f" MDE {abs(float(record['mde'])) * 100:.1f} pts"
            decision = record.get("decision")
            if isinstance(decision, str) and decision != "not watched":
                cell += f" → {decision}"
                if pd.notna(record.get("p_value")) and pd.notna(record.get("p_adjusted")):
                    cell += (
                        f" (p={float(record['p_value']):.3g}, "
                        f"{record['correction']} p={float(record['p_adjusted']):.3g})"
                    )
            cells.append(cell)
        lines.append(
            f"{display_name(first['lineage_key'])} on "
            f"{display_name(str(first['suite']) + '@' + str(first['suite_version']))}: "
            f"{display_name(first['from_release'])} → {display_name(first['to_release'])}: "
            + "; ".join(cells)
        )
    return lines


def points(value: float) -> str:
    """A rate difference in percentage points with its sign (−0.153 → "-15.3 pts")."""
    return f"{value * 100:+.1f} pts"
