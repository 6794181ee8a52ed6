"""The board's readable reference: the join and per-suite ranking in pandas.

The product builds the board in the dbt mart ``leaderboard_rows``
(dbt_project/models/marts/leaderboard_rows.sql); this is the oracle it is proven against
(tests/test_board_mart.py), on the shared worlds and on generated ties, NaN and withheld cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb
import numpy as np
import pandas as pd

from litmus.metrics.board_shape import (
    CI_COLUMNS,
    LABELING_COLUMNS,
    LEADERBOARD_COLUMNS,
    PLUGIN_DELTA_COLUMNS,
    PLUGIN_DELTA_SUFFIXES,
    typed_board_rows,
)
from litmus.metrics.leaderboard import (
    PLUGIN_DELTA_METRICS,
    PUBLISHED_RATES,
    BoardInputs,
    Leaderboard,
    _present,
)

SUITE_KEYS = ["suite", "suite_version"]
CONTROL_NAMES = {"refuse_all": "refuse-all", "comply_all": "comply-all"}


def ranking_metric(board: pd.DataFrame) -> str:
    """What a board ranks by: the boundary score; on a suite without the boundary's siblings
    (a partial suite such as AgentHarm's, where no configuration has a boundary score) the
    corrected Safety, the headline rate such a suite supports."""
    if board["boundary_score"].notna().any() or not board["safety"].notna().any():
        return "boundary_score"
    return "safety"


def reference_board(con: duckdb.DuckDBPyConnection, inputs: BoardInputs) -> Leaderboard:
    """The board of the warehouse behind ``con`` with ``inputs``, joined and ranked here."""
    configuration_metrics = con.sql("SELECT * FROM configuration_metrics").df()
    configuration_metrics["fingerprint"] = [
        inputs.fingerprints.get(key) for key in configuration_metrics["partition_key"]
    ]
    return build_leaderboard(
        configuration_metrics,
        con.sql("SELECT * FROM control_metrics").df(),
        con.sql("SELECT * FROM metric_cis").df(),
        inputs.withheld,
        low_precision=inputs.low_precision,
        coverage=inputs.coverage,
        suite_sizes=inputs.suite_sizes,
        suite_of=inputs.suite_of,
        required_coverage=inputs.required_coverage,
        runnable_splits=inputs.runnable_splits,
        labeling=con.sql("SELECT * FROM labeling_agreement").df(),
        private_gaps=con.sql("SELECT * FROM public_private_gaps").df(),
        plugin_deltas=con.sql("SELECT * FROM plugin_deltas").df(),
    )


def competition_rank(scores: pd.Series, *, descending: bool = True) -> pd.Series:
    """Standard competition ranking ("1224"): ties share the best rank; NaN stays unranked."""
    return scores.rank(method="min", ascending=not descending).astype("Int64")


def _ci_columns(metric_cis: pd.DataFrame | None) -> pd.DataFrame:
    """metric_cis (long) → one row per partition_key with `<metric>_ci_low/_ci_high`."""
    if metric_cis is None or metric_cis.empty:
        return pd.DataFrame(columns=["partition_key", *CI_COLUMNS]).set_index("partition_key")
    wanted = metric_cis[metric_cis["metric"].isin(PUBLISHED_RATES)]
    wide = wanted.pivot(index="partition_key", columns="metric", values=["ci_low", "ci_high"])
    wide.columns = [f"{metric}_{bound}" for bound, metric in wide.columns]
    return wide.reindex(columns=list(CI_COLUMNS)).astype("float64")


def _mark_ci_overlaps(ranked: pd.DataFrame, metric: str = "boundary_score") -> pd.DataFrame:
    """For rows in rank order, flag a CI of the ranking metric that overlaps the next row's
    (or a missing CI: then the order is not shown to be significant either)."""
    low = ranked[f"{metric}_ci_low"].to_numpy(dtype=float)
    high = ranked[f"{metric}_ci_high"].to_numpy(dtype=float)
    overlaps_next = np.zeros(len(ranked), dtype=bool)
    if len(ranked) > 1:
        a_low, a_high, b_low, b_high = low[:-1], high[:-1], low[1:], high[1:]
        unknown = np.isnan(a_low) | np.isnan(a_high) | np.isnan(b_low) | np.isnan(b_high)
        overlaps_next[:-1] = unknown | ((a_low <= b_high) & (b_low <= a_high))
    overlaps_previous = np.concatenate([[False], overlaps_next[:-1]])
    return ranked.assign(
        ci_overlaps_next=overlaps_next, rank_not_significant=overlaps_next | overlaps_previous
    )


def tiered_rank(scores: pd.Series, low_precision: pd.Series) -> pd.Series:
    """Competition rank where a low-precision score never ranks above a precise one: the
    precise scores take the first ranks, the flagged ones follow (SPEC §7 6)."""
    ranks = pd.Series(pd.NA, index=scores.index, dtype="Int64")
    known = scores.notna()
    precise = known & ~low_precision
    flagged = known & low_precision
    if precise.any():
        ranks[precise] = competition_rank(scores[precise])
    if flagged.any():
        ranks[flagged] = int(precise.sum()) + competition_rank(scores[flagged])
    return ranks


def _suite_order(frame: pd.DataFrame, sized: pd.DataFrame | None = None) -> list[tuple[str, str]]:
    """The suites of ``frame``; with ``sized`` (rows carrying suite_families), the largest
    suite first, so the main board leads."""
    keys = {
        (str(suite), str(version))
        for suite, version in zip(frame["suite"], frame["suite_version"], strict=True)
        if isinstance(suite, str) and isinstance(version, str)
    }
    if sized is None or "suite_families" not in sized:
        return sorted(keys)
    families: dict[tuple[str, str], int] = {}
    for suite, version, count in zip(
        sized["suite"], sized["suite_version"], sized["suite_families"], strict=True
    ):
        if _present(count):
            families[(str(suite), str(version))] = int(count)
    return sorted(keys, key=lambda key: (-families.get(key, 0), key))


def build_leaderboard(
    configuration_metrics: pd.DataFrame,
    control_metrics: pd.DataFrame,
    metric_cis: pd.DataFrame | None = None,
    withheld: Mapping[str, Sequence[str]] | None = None,
    *,
    low_precision: Mapping[str, set[str]] | None = None,
    coverage: Mapping[str, tuple[int, int]] | None = None,
    suite_sizes: Mapping[tuple[str, str], tuple[int, int]] | None = None,
    suite_of: Mapping[str, tuple[str, str]] | None = None,
    required_coverage: float = 1.0,
    runnable_splits: Mapping[tuple[str, str], Sequence[str]] | None = None,
    labeling: pd.DataFrame | None = None,
    private_gaps: pd.DataFrame | None = None,
    plugin_deltas: pd.DataFrame | None = None,
) -> Leaderboard:
    """Rank the publishable configurations of each suite and list the withheld ones and the
    controls, one board per (suite, suite version).

    ``withheld`` maps partition_key → reasons (the publication gates' messages). Ranks (boundary
    score and naive safe rate, competition ranking) are computed among the published
    configurations of the same suite only; a rate in ``low_precision[partition_key]`` ranks
    after every precise one. ``rank_shift`` = naive_rank − rank (positive: ranks higher once
    corrected). ``coverage``: partition_key → (instances covered, suite instances);
    ``suite_sizes``: (suite, version) → (families, instances); ``suite_of``: the suite of a
    withheld configuration that has no metrics; ``runnable_splits``: (suite, version) → the
    splits a suite declares runnable (only suites that declare them), said in its heading.
    """
    withheld = {key: list(reasons) for key, reasons in (withheld or {}).items()}
    low_precision = low_precision or {}
    metrics = _configuration_metrics(
        configuration_metrics, metric_cis, low_precision, coverage or {}, labeling, private_gaps
    )
    is_withheld = metrics["partition_key"].isin(list(withheld))
    published = metrics[~is_withheld].assign(
        row_kind="configuration",
        status="published",
        name=lambda frame: frame["config_key"],
        withheld_reasons=None,
    )
    published = published.join(_plugin_delta_columns(plugin_deltas, published), how="left")
    ranked_parts, unranked_parts = _ranked_per_suite(published, low_precision)
    withheld_rows = _withheld_rows(metrics, withheld, suite_of or {})
    control_rows = _control_rows(control_metrics, metrics)
    parts = [
        frame
        for frame in (*ranked_parts, *unranked_parts, withheld_rows, control_rows)
        if not frame.empty
    ]
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    rows = _in_board_order(rows.reindex(columns=list(LEADERBOARD_COLUMNS)), suite_sizes or {})
    rows = typed_board_rows(rows)
    return Leaderboard(
        rows=rows,
        withheld_reasons=withheld,
        required_coverage=float(required_coverage),
        runnable_splits={
            f"{suite}@{version}": tuple(splits)
            for (suite, version), splits in (runnable_splits or {}).items()
        },
        safety_ranked=frozenset(
            suite_key
            for suite_key, group in published.groupby(SUITE_KEYS, sort=True)
            if ranking_metric(group) == "safety"
        ),
    )


def _configuration_metrics(
    configuration_metrics: pd.DataFrame,
    metric_cis: pd.DataFrame | None,
    low_precision: Mapping[str, set[str]],
    coverage: Mapping[str, tuple[int, int]],
    labeling: pd.DataFrame | None,
    private_gaps: pd.DataFrame | None,
) -> pd.DataFrame:
    """Each configuration's metrics (indexed by partition_key) joined with its CIs, coverage,
    low-precision rates, labeling agreement and public − private gap."""
    metrics = configuration_metrics.copy()
    if "n_families" not in metrics:
        metrics["n_families"] = pd.NA
    metrics = metrics.set_index("partition_key", drop=False)
    metrics = metrics.join(_ci_columns(metric_cis), how="left")
    for column in CI_COLUMNS:
        if column not in metrics:
            metrics[column] = np.nan
    metrics["instances_covered"] = [coverage.get(key, (pd.NA, pd.NA))[0] for key in metrics.index]
    metrics["low_precision"] = [
        ";".join(rate for rate in PUBLISHED_RATES if rate in low_precision.get(key, set())) or None
        for key in metrics.index
    ]
    if labeling is not None and not labeling.empty:
        wanted = [c for c in (*LABELING_COLUMNS, "labeling_note") if c in labeling.columns]
        metrics = metrics.join(labeling.set_index("partition_key")[wanted], how="left")
    if private_gaps is not None and not private_gaps.empty:
        boundary = private_gaps[private_gaps["metric"] == "boundary_score"].set_index(
            "partition_key"
        )
        metrics = metrics.join(
            pd.DataFrame(
                {
                    "public_private_gap": boundary["gap"],
                    "public_private_gap_ci_low": boundary["ci_low"],
                    "public_private_gap_ci_high": boundary["ci_high"],
                    "public_private_flag": boundary["flagged"].astype(bool),
                }
            ),
            how="left",
        )
    return metrics


def _ranked_per_suite(
    published: pd.DataFrame, low_precision: Mapping[str, set[str]]
) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """Per suite, the published configurations ranked (with naive rank, shift and CI-overlap
    markers) and the unranked ones (no ranking metric), each in display order."""
    ranked_parts, unranked_parts = [], []
    for _, group in published.groupby(SUITE_KEYS, sort=True, dropna=False):
        group = group.copy()
        flags = [low_precision.get(key, set()) for key in group["partition_key"]]
        metric = ranking_metric(group)
        group["rank"] = tiered_rank(
            group[metric], pd.Series([metric in f for f in flags], index=group.index)
        )
        # the naive ranking among the same rows, so that every rank has its naive rank
        group["naive_rank"] = tiered_rank(
            group["naive_safe_rate"].where(group["rank"].notna()),
            pd.Series(["naive_safe_rate" in f for f in flags], index=group.index),
        )
        group["rank_shift"] = group["naive_rank"] - group["rank"]
        ranked = group[group["rank"].notna()].sort_values(["rank", "name"], kind="stable")
        ranked_parts.append(_mark_ci_overlaps(ranked, metric))
        unranked_parts.append(
            group[group["rank"].isna()]
            .sort_values("name", kind="stable")
            .assign(ci_overlaps_next=False, rank_not_significant=False)
        )
    return ranked_parts, unranked_parts


def _in_board_order(
    rows: pd.DataFrame, suite_sizes: Mapping[tuple[str, str], tuple[int, int]]
) -> pd.DataFrame:
    """``rows`` with their suite's size, one board per suite: its rows together, in the order
    ranked, unranked, withheld, controls (kept from ``rows``)."""
    rows = rows.copy()  # one block per dtype
    sizes = [
        suite_sizes.get((suite, version), (pd.NA, pd.NA))
        for suite, version in zip(rows["suite"], rows["suite_version"], strict=True)
    ]
    rows["suite_families"] = [families for families, _ in sizes]
    rows["suite_instances"] = [instances for _, instances in sizes]
    order = {key: index for index, key in enumerate(_suite_order(rows, rows))}
    rows["_board"] = [
        order.get((suite, version), len(order))
        for suite, version in zip(rows["suite"], rows["suite_version"], strict=True)
    ]
    rows = rows.sort_values("_board", kind="stable").drop(columns=["_board"])
    return rows.reset_index(drop=True)


def _plugin_delta_columns(deltas: pd.DataFrame | None, published: pd.DataFrame) -> pd.DataFrame:
    """``PLUGIN_DELTA_COLUMNS`` per plug-in configuration (index partition_key), for pairs
    whose both configurations are published on this board (a withheld one has no numbers)."""
    columns = pd.DataFrame(columns=list(PLUGIN_DELTA_COLUMNS), index=pd.Index([], name=None))
    if deltas is None or deltas.empty:
        return columns
    names = published["name"]
    pairs = deltas[
        deltas["partition_key"].isin(names.index)
        & deltas["baseline_partition_key"].isin(names.index)
        & deltas["metric"].isin(list(PLUGIN_DELTA_METRICS))
    ]
    if pairs.empty:
        return columns
    # a table stored before decisions were recorded has no decision: shown as none
    pairs = pairs.assign(**{c: None for c in ("mde", "decision") if c not in pairs.columns})
    wide = pairs.pivot(
        index="partition_key",
        columns="metric",
        values=["delta", "ci_low", "ci_high", "mde", "decision"],
    )
    baseline = pairs.drop_duplicates("partition_key").set_index("partition_key")
    out: dict[str, pd.Series] = {
        "plugin_baseline": baseline["baseline_partition_key"].map(names).reindex(wide.index)
    }
    for metric in PLUGIN_DELTA_METRICS:
        for suffix, value in zip(PLUGIN_DELTA_SUFFIXES, ("delta", "ci_low", "ci_high", "mde",
                                                          "decision"), strict=True):  # fmt: skip
            out[f"plugin_delta_{metric}{suffix}"] = (
                wide[(value, metric)]
                if (value, metric) in wide.columns
                else pd.Series(None, index=wide.index, dtype=object)
            )
    return pd.DataFrame(out)[list(PLUGIN_DELTA_COLUMNS)]


def _withheld_rows(
    metrics: pd.DataFrame,
    withheld: Mapping[str, list[str]],
    suite_of: Mapping[str, tuple[str, str]],
) -> pd.DataFrame:
    records = []
    for partition_key in sorted(withheld):
        known = metrics.loc[partition_key] if partition_key in metrics.index else None
        suite, version = suite_of.get(partition_key, (None, None))
        records.append(
            {
                "row_kind": "configuration",
                "status": "withheld",
                "name": known["config_key"] if known is not None else partition_key,
                "partition_key": partition_key,
                "suite": known["suite"] if known is not None else suite,
                "suite_version": known["suite_version"] if known is not None else version,
                "withheld_reasons": "; ".join(withheld[partition_key])
                or "withheld by a publication gate",
            }
        )
    # Every published column stays blank: nothing of a withheld configuration is published.
    return pd.DataFrame.from_records(records, columns=list(LEADERBOARD_COLUMNS))


def _control_rows(control_metrics: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """The controls of the suites the configurations ran (all suites when there are none)."""
    if control_metrics.empty:
        return pd.DataFrame(columns=list(LEADERBOARD_COLUMNS))
    controls = control_metrics.copy()
    if not metrics.empty:
        used = set(zip(metrics["suite"], metrics["suite_version"], strict=True))
        keep = [
            (suite, version) in used
            for suite, version in zip(controls["suite"], controls["suite_version"], strict=True)
        ]
        controls = controls[keep]
    controls = controls.assign(
        control_order=controls["control"].map({"refuse_all": 0, "comply_all": 1})
    ).sort_values(["suite", "suite_version", "control_order"], kind="stable")
    return controls.assign(
        row_kind="control",
        status="reference",
        name=[
            f"{CONTROL_NAMES.get(control, control)} ({suite}@{version})"
            for control, suite, version in zip(
                controls["control"], controls["suite"], controls["suite_version"], strict=True
            )
        ],
        partition_key=None,
        withheld_reasons=None,
    ).drop(columns=["control_order"])
