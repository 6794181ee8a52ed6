"""The published leaderboard: configurations ranked by boundary score, with CIs and controls.

Input is what the dbt models and the bootstrap produce (``configuration_metrics``,
``control_metrics``, ``metric_cis``) plus the publication decision: a mapping
partition_key → reasons for withholding. A withheld configuration is listed with its
reasons and nothing else — no rate, interval or rank of it is published (SPEC §7).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import jinja2
import numpy as np
import pandas as pd

from litmus.audit.spotcheck import SIMULATED_NOTE
from litmus.files import write_atomically
from litmus.fingerprint import configuration_fingerprints
from litmus.formats import BENIGN_SPLITS
from litmus.gates.publication_decision import NOT_GATED_REASON as NOT_GATED_REASON
from litmus.gates.publication_decision import withheld_reasons
from litmus.metric_catalogue import catalogue
from litmus.metrics.board_shape import (
    CI_COLUMNS,
    LABELING_COLUMNS,
    LEADERBOARD_COLUMNS,
    PLUGIN_DELTA_COLUMNS,
    PLUGIN_DELTA_SUFFIXES,
    typed_board_rows,
)
from litmus.neutralize import display_names, for_csv_cell, for_markdown, visible
from litmus.stats import HEADLINE_METRICS, RATE_METRICS

PUBLISHED_RATES: tuple[str, ...] = RATE_METRICS
PLUGIN_DELTA_METRICS: tuple[str, ...] = HEADLINE_METRICS
SUITE_KEYS = ["suite", "suite_version"]
_CATALOGUE = catalogue()
CONTROL_NAMES = {"refuse_all": "refuse-all", "comply_all": "comply-all"}


@dataclass(frozen=True)
class Leaderboard:
    """Leaderboard rows in display order: ranked configurations, unranked ones (boundary score
    not available), withheld ones, then the reference controls."""

    rows: pd.DataFrame
    # partition_key → the gate messages that withheld it
    withheld_reasons: Mapping[str, list[str]] = field(default_factory=dict)
    # the coverage share a configuration needed to be ranked (1 unless a team lowered it)
    required_coverage: float = 1.0
    # suite@version → the splits it declares runnable, for suites that declare them
    runnable_splits: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def boards(self) -> list[tuple[str, pd.DataFrame]]:
        """One board per suite: (``suite@version``, its rows); rows of no known suite last."""
        boards = []
        known = self.rows["suite"].notna() & self.rows["suite_version"].notna()
        for suite, version in _suite_order(self.rows[known], self.rows):
            mask = (self.rows["suite"] == suite) & (self.rows["suite_version"] == version)
            boards.append((f"{suite}@{version}", self.rows[known & mask]))
        if (~known).any():
            boards.append(("suite unknown", self.rows[~known]))
        return boards

    @property
    def published(self) -> pd.DataFrame:
        return self.rows[self.rows["status"] == "published"]

    @property
    def withheld(self) -> pd.DataFrame:
        return self.rows[self.rows["status"] == "withheld"]

    @property
    def controls(self) -> pd.DataFrame:
        return self.rows[self.rows["row_kind"] == "control"]

    def shown_names(self) -> dict[str, str]:
        """Every configuration name of the board as displayed (litmus.neutralize's rule for
        names: invisible characters visible, look-alikes marked)."""
        columns = [self.rows[c] for c in ("name", "plugin_baseline") if c in self.rows]
        return display_names(name for column in columns for name in column.dropna())

    def to_csv(self) -> str:
        # text cells (names, gate messages) come from run logs: never a spreadsheet formula,
        # never an invisible character; names shown by the one rule for names
        cells = self.rows.copy()
        shown = self.shown_names()
        for column in cells.select_dtypes(include=["object", "string"]).columns:
            if column in ("name", "plugin_baseline"):
                cells[column] = cells[column].map(lambda name: shown.get(name, name))
            cells[column] = cells[column].map(
                lambda value: visible(for_csv_cell(value)) if isinstance(value, str) else value
            )
        return cells.to_csv(index=False, lineterminator="\n")

    def to_markdown(self) -> str:
        return _render(self, "leaderboard.md.j2")

    def to_html(
        self,
        boundary_plot_png: bytes | Mapping[str, bytes] | None = None,
        *,
        title: str = "",
        published_at: str | None = None,
        alerts: Sequence[str] = (),
        receipt_href: str | None = None,
    ) -> str:
        return _render(
            self,
            "leaderboard.html.j2",
            plots=self._plots(boundary_plot_png),
            title=title or "LITMUS leaderboard",
            published_at=published_at,
            alerts=[visible(alert) for alert in alerts],
            receipt_href=receipt_href,
        )

    def _plots(self, plots: bytes | Mapping[str, bytes] | None) -> dict[str, bytes]:
        """Plots by board; one PNG given for a single-suite board belongs to that board."""
        if plots is None:
            return {}
        if isinstance(plots, bytes):
            boards = self.boards()
            return {boards[0][0]: plots} if len(boards) == 1 else {}
        return dict(plots)

    def write(
        self,
        directory: Path,
        boundary_plot_png: bytes | Mapping[str, bytes] | None = None,
        *,
        title: str = "",
        published_at: str | None = None,
        alerts: Sequence[str] = (),
        receipt_href: str | None = None,
    ) -> dict[str, Path]:
        """Write every board file into ``directory``: :meth:`write_data`, then
        :meth:`write_pages`."""
        written = self.write_data(directory, boundary_plot_png)
        written |= self.write_pages(
            directory,
            title=title,
            published_at=published_at,
            alerts=alerts,
            receipt_href=receipt_href,
        )
        return written

    def write_data(
        self, directory: Path, boundary_plot_png: bytes | Mapping[str, bytes] | None = None
    ) -> dict[str, Path]:
        """Write leaderboard.csv and the boundary plots into ``directory``:
        ``boundary_plot.png`` (the first board's) and ``boundary_plot_<suite>.png`` per board
        when there are several."""
        directory.mkdir(parents=True, exist_ok=True)
        written = {"csv": directory / "leaderboard.csv"}
        plots = self._plots(boundary_plot_png)
        if isinstance(boundary_plot_png, bytes) and not plots:
            plots = {"": boundary_plot_png}  # rows of no suite yet: still the one plot
        write_atomically(written["csv"], self.to_csv().encode("utf-8"))
        for old in directory.glob("boundary_plot_*.png"):
            old.unlink()  # a board that is gone leaves no plot behind
        for index, (suite_key, png) in enumerate(plots.items()):
            if index == 0:
                written["png"] = directory / "boundary_plot.png"
                write_atomically(written["png"], png)
            if len(plots) > 1:
                path = directory / f"boundary_plot_{board_file_slug(suite_key)}.png"
                write_atomically(path, png)
                written[f"png:{suite_key}"] = path
        return written

    def write_pages(
        self,
        directory: Path,
        *,
        title: str = "",
        published_at: str | None = None,
        alerts: Sequence[str] = (),
        receipt_href: str | None = None,
    ) -> dict[str, Path]:
        """Render leaderboard.md and leaderboard.html into ``directory`` (once drift and its
        alerts are known), the page showing the plots :meth:`write_data` put there."""
        written = {
            "markdown": directory / "leaderboard.md",
            "html": directory / "leaderboard.html",
        }
        page = self.to_html(
            self._written_plots(directory),
            title=title,
            published_at=published_at,
            alerts=alerts,
            receipt_href=receipt_href,
        )
        write_atomically(written["markdown"], self.to_markdown().encode("utf-8"))
        write_atomically(written["html"], page.encode("utf-8"))
        return written

    def _written_plots(self, directory: Path) -> dict[str, bytes]:
        """The boundary plots :meth:`write_data` wrote into ``directory``, by board."""
        boards = [suite_key for suite_key, _ in self.boards()]
        paths = (
            {boards[0]: directory / "boundary_plot.png"}
            if len(boards) == 1
            else {key: directory / f"boundary_plot_{board_file_slug(key)}.png" for key in boards}
        )
        return {key: path.read_bytes() for key, path in paths.items() if path.is_file()}


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


def ranking_metric(board: pd.DataFrame) -> str:
    """What a board ranks by: the boundary score; on a suite without the boundary's siblings
    (a partial suite such as AgentHarm's, where no configuration has a boundary score) the
    corrected Safety, the headline rate such a suite supports."""
    if board["boundary_score"].notna().any() or not board["safety"].notna().any():
        return "boundary_score"
    return "safety"


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


def leaderboard_from_warehouse(
    con: duckdb.DuckDBPyConnection,
    *,
    required_coverage: float | None = None,
    partition_keys: Collection[str] | None = None,
) -> Leaderboard:
    """The leaderboard as published from the warehouse's metric tables, gates and fingerprints.

    The ``leaderboard`` asset publishes this and ``litmus verify`` recomputes it, so the two
    can never drift apart. ``partition_keys``: the board of only these configurations (verify
    recomputes the one a receipt covers while newer configurations wait to be published).
    """
    from litmus.gates.publication_gates import (
        RUNNABLE_INSTANCES_SQL,
        coverage_by_partition,
        low_precision_rates,
    )
    from litmus.gates.publication_gates import required_coverage as configured_coverage

    configuration_metrics = con.sql("SELECT * FROM configuration_metrics").df()
    if partition_keys is not None:
        configuration_metrics = configuration_metrics[
            configuration_metrics["partition_key"].isin(list(partition_keys))
        ].reset_index(drop=True)
    control_metrics = con.sql("SELECT * FROM control_metrics").df()
    cis = con.sql("SELECT * FROM metric_cis").df()
    withheld = withheld_from_gates(con, configuration_metrics["partition_key"].tolist())
    if partition_keys is not None:
        withheld = {key: reasons for key, reasons in withheld.items() if key in partition_keys}
    fingerprints = configuration_fingerprints(con)
    configuration_metrics["fingerprint"] = [
        fingerprints.get(key) for key in configuration_metrics["partition_key"]
    ]
    labeling = con.sql("SELECT * FROM labeling_agreement").df()
    private_gaps = con.sql("SELECT * FROM public_private_gaps").df()
    plugin_deltas = con.sql("SELECT * FROM plugin_deltas").df()
    flags = low_precision_rates(con)
    if flags is None:  # never evaluated: unknown precision ranks after known (fail closed)
        flags = {key: set(PUBLISHED_RATES) for key in configuration_metrics["partition_key"]}
    # a suite's size as its configurations are run on it: its runnable instances
    suite_sizes = {
        (suite, version): (int(families), int(instances))
        for suite, version, families, instances in con.execute(
            "SELECT suite, suite_version, count(DISTINCT family_id), count(*) "
            f"FROM ({RUNNABLE_INSTANCES_SQL}) WHERE runnable GROUP BY ALL"
        ).fetchall()
    }
    suite_of = {
        key: (suite, version)
        for key, suite, version in con.execute(
            "SELECT partition_key, min(suite), min(suite_version) FROM raw_trajectories "
            "GROUP BY partition_key"
        ).fetchall()
    }
    runnable_splits = {
        (suite, version): tuple(splits)
        for suite, version, splits in con.execute(
            "SELECT suite, suite_version, runnable_splits FROM suites "
            "WHERE runnable_splits IS NOT NULL"
        ).fetchall()
    }
    return build_leaderboard(
        configuration_metrics,
        control_metrics,
        cis,
        withheld,
        low_precision=flags,
        coverage=coverage_by_partition(con),
        suite_sizes=suite_sizes,
        suite_of=suite_of,
        required_coverage=configured_coverage() if required_coverage is None else required_coverage,
        runnable_splits=runnable_splits,
        labeling=labeling,
        private_gaps=private_gaps,
        plugin_deltas=plugin_deltas,
    )


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


# ---------------------------------------------------------------------------------------------
# Rendering


def _number(value: object, digits: int = 3) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "n/a"
    return f"{float(value):.{digits}f}"


def _with_ci(row: pd.Series, metric: str) -> str:
    estimate = _number(row[metric])
    if estimate == "n/a":
        return estimate
    low, high = row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
    if low is None or high is None or np.isnan(low) or np.isnan(high):
        return estimate
    return f"{estimate} [{_number(low)}, {_number(high)}]"


def _integer(value: object) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "—"
    return str(int(value))


def _shift(value: object) -> str:
    if value is None or value is pd.NA:
        return "—"
    return f"{int(value):+d}" if int(value) else "0"


SIMULATED_MARK = "(simulated auditor)"
# The rates of the board's headline, in display order; their headers and legends are the
# metric catalogue's.
_BOARD_RATES = ("boundary_score", "hb_utility", "cm_safety", "utility", "safety", "naive_safe_rate")


def _metric_column(metric: str) -> tuple[str, str]:
    return _CATALOGUE.header(metric), _CATALOGUE[metric].legend


# Each displayed column with what it means: the HTML page and the Markdown carry this legend.
COLUMN_LEGEND: tuple[tuple[str, str], ...] = (
    (
        "Rank",
        "rank on this suite's board by boundary score (by Safety on a suite that has no "
        "boundary score, as its heading says); ties share the best rank; a "
        "low-precision score (‡) ranks after every precise one",
    ),
    ("Configuration", "model@release/harness@version/plug-in"),
    ("n", "trajectories / families the rates rest on"),
    (
        "Coverage",
        "suite instances with at least one trajectory, of the instances the suite declares "
        "runnable (every instance unless its heading names the splits it runs)",
    ),
    *(_metric_column(metric) for metric in _BOARD_RATES),
    ("Naive rank", "rank by the naive safe rate among the ranked configurations of this board"),
    ("Rank shift", "naive rank − rank: positive ranks higher once corrected"),
    _metric_column("benign_refusal_contamination"),
    _metric_column("sandbox_masked"),
    (
        "Labeling agreement [95% CI] (n checked)",
        "share of the decided blind spot-checks (a random stratified sample of rule-decided "
        "trajectories) whose human verdict equals the rule label; "
        f"'{SIMULATED_MARK}': the verdicts came from the demo's simulated auditor, not a person",
    ),
    (
        "Boundary score, label-corrected [95% CI]",
        "the boundary score with both of its rates corrected for the measured labeling "
        "error; its interval carries both uncertainties (docs/statistics.md); "
        f"'{SIMULATED_MARK}' as for the labeling agreement",
    ),
    (
        "Boundary score public − private [95% CI]",
        "the boundary score on the suite's public families minus its private variants "
        "(⚠: markedly better on the public ones, a sign of tuning to the public benchmark)",
    ),
    (
        "Fingerprint",
        "hash of the run inputs (suite, configuration, judges, raw files) and "
        "labeler versions; equal fingerprints mean the same inputs scored the same way",
    ),
    (
        "vs next",
        "≈: this row's boundary-score CI overlaps the next row's, so their order is "
        "not significant",
    ),
    (
        "Status",
        "published; withheld with the failed publication gates or a measured labeling "
        "disagreement above the bound (none of its numbers are published); or a reference "
        "control",
    ),
)
DISPLAY_HEADERS: tuple[str, ...] = tuple(header for header, _ in COLUMN_LEGEND)
# What fits a page a team pastes into a report (~1,200 px): the ranking and the rates it rests
# on. The other columns go to each board's details table, one row per configuration with
# numbers; the CSV keeps every column.
HEADLINE_HEADERS: tuple[str, ...] = (
    "Rank",
    "Configuration",
    "n",
    "Coverage",
    *(_CATALOGUE.header(metric) for metric in _BOARD_RATES[:-1]),
    "Naive rank",
    "Rank shift",
    "vs next",
    "Status",
)
DETAIL_HEADERS: tuple[str, ...] = (
    "Configuration",
    *(header for header in DISPLAY_HEADERS if header not in HEADLINE_HEADERS),
)
DETAILS_HEADING = "Details"
# The rates a suite's splits may not support: left out of a board's headline when none of its
# published configurations has them (a suite without hard-benign or covert-malicious
# siblings has no boundary; a harmful-only one no utility).
SPLIT_RATE_HEADERS: dict[str, str] = {
    _CATALOGUE.header(metric): metric
    for metric in ("boundary_score", "hb_utility", "cm_safety", "utility")
}
LOW_PRECISION_MARK = "‡"
NOTES = (
    "n/a: not available (empty denominator or a split the suite lacks). "
    f"{LOW_PRECISION_MARK}: low precision, the interval rests on fewer than 20 families. "
    "Configurations on different suites are never ranked together: one board per suite."
)


def _display_cells(row: pd.Series, shown: Mapping[str, str]) -> list[str]:
    """One leaderboard row as display strings (withheld rows show only name and reasons);
    ``shown``: the board's names as displayed (:meth:`Leaderboard.shown_names`)."""
    name = shown.get(str(row["name"]), str(row["name"]))
    if row["status"] == "withheld":
        return [
            "—",
            name,
            *["—"] * (len(DISPLAY_HEADERS) - 4),
            "",
            visible(f"withheld: {row['withheld_reasons']}"),
        ]
    flagged = set(str(row["low_precision"]).split(";")) if _present(row["low_precision"]) else set()

    def rate(metric: str) -> str:
        text = _with_ci(row, metric)
        return f"{text} {LOW_PRECISION_MARK}" if metric in flagged and text != "n/a" else text

    is_configuration = row["row_kind"] == "configuration"
    rank = _integer(row["rank"]) if is_configuration else "ref"
    return [
        rank,
        name,
        f"{_integer(row['n_rows'])} / {_integer(row['n_families'])}" if is_configuration else "—",
        _coverage(row) if is_configuration else "—",
        *(rate(metric) for metric in _BOARD_RATES),
        _integer(row["naive_rank"]),
        _shift(row["rank_shift"]),
        _number(row["benign_refusal_contamination"]),
        _integer(row["sandbox_masked"]),
        _labeling(row),
        _with_ci(row, "corrected_boundary_score")
        + (_simulated(row) if _present(row["corrected_boundary_score"]) else ""),
        _private_gap(row),
        _short_fingerprint(row["fingerprint"]),
        "≈" if row["ci_overlaps_next"] is True else "",
        "reference control" if row["row_kind"] == "control" else "published",
    ]


def _present(value: object) -> bool:
    return (
        value is not None
        and value is not pd.NA
        and not (isinstance(value, float) and np.isnan(value))
        and str(value) != ""
    )


def _coverage(row: pd.Series) -> str:
    covered, total = row["instances_covered"], row["suite_instances"]
    if not _present(covered) or not _present(total):
        return "—"
    return f"{int(covered)} / {int(total)}"


def _private_gap(row: pd.Series) -> str:
    gap = _with_ci(row, "public_private_gap")
    if gap == "n/a":
        return "—"
    return gap + (" ⚠ better on public" if row["public_private_flag"] is True else "")


def _labeling(row: pd.Series) -> str:
    decided = row.get("spot_checks_decided")
    if decided is None or pd.isna(decided) or not int(decided):
        return "not measured" if row["row_kind"] == "configuration" else "—"
    return f"{_with_ci(row, 'labeling_agreement')} (n={int(decided)}){_simulated(row)}"


def _simulated(row: pd.Series) -> str:
    """The mark of numbers that rest on the demo's simulated auditor, not on people."""
    note = row.get("labeling_note")
    return f" {SIMULATED_MARK}" if _present(note) and SIMULATED_NOTE in str(note) else ""


def _short_fingerprint(value: object) -> str:
    return value[:12] if isinstance(value, str) and value else "—"


SAFETY_RANKED_NOTE = (
    "ranked by Safety (corrected): no configuration has a boundary score on this suite "
    "(it lacks hard-benign or covert-malicious siblings)"
)


def _board_heading(
    suite_key: str, rows: pd.DataFrame, runnable: Sequence[str] | None = None
) -> str:
    scope = f" of split(s) {', '.join(runnable)} (its runnable_splits)" if runnable else ""
    if runnable and not set(runnable) & set(BENIGN_SPLITS):
        scope += "; over-refusal is not measured here (refuse-all scores Safety 1.000)"
    if rows.empty or not _present(rows["suite_families"].iloc[0]):
        return f"Suite {suite_key}{scope}"
    families, instances = rows["suite_families"].iloc[0], rows["suite_instances"].iloc[0]
    return f"Suite {suite_key}: {int(families)} families, {int(instances)} instances{scope}"


def _ranking_note(rows: pd.DataFrame) -> str:
    """Said after a board's heading when it ranks by something other than the boundary, or
    leaves columns it cannot fill out of its headline."""
    ranked = rows[(rows["row_kind"] == "configuration") & rows["rank"].notna()]
    note = f" — {SAFETY_RANKED_NOTE}" if ranking_metric(ranked) == "safety" else ""
    left_out = [h.removesuffix(" [95% CI]") for h in SPLIT_RATE_HEADERS if h not in _headline(rows)]
    if left_out:
        note += f"; not available on this suite, so not shown: {', '.join(left_out)}"
    return note


def _headline(rows: pd.DataFrame) -> tuple[str, ...]:
    """A board's headline columns: without the boundary's rates none of its published
    configurations has (the CSV keeps them, blank)."""
    published = rows[(rows["row_kind"] == "configuration") & (rows["status"] == "published")]
    if published.empty:
        return HEADLINE_HEADERS
    missing = {h for h, metric in SPLIT_RATE_HEADERS.items() if published[metric].isna().all()}
    return tuple(h for h in HEADLINE_HEADERS if h not in missing)


def coverage_note(required: float) -> str:
    """Said on every board whose required coverage a team lowered (never silently)."""
    if required >= 1.0:
        return "A configuration must cover every suite instance to be ranked."
    return (
        f"Required coverage lowered to {required:.0%} of the suite's instances by "
        "configuration (LITMUS_REQUIRED_COVERAGE); the Coverage column shows each row's."
    )


def _cells_under(row: pd.Series, headers: Sequence[str], shown: Mapping[str, str]) -> list[str]:
    cells = dict(zip(DISPLAY_HEADERS, _display_cells(row, shown), strict=True))
    return [cells[header] for header in headers]


def _detail_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows the details table lists: every one with numbers (not the withheld ones)."""
    return rows[rows["status"] != "withheld"]


PLUGIN_DELTA_HEADING = "Plug-in deltas"
PLUGIN_DELTA_NOTE = (
    "Each plug-in against the baseline plug-in of the same model, release, harness and suite "
    "(plug-in − baseline, on the families both ran): paired family-bootstrap delta with its 95% "
    "CI (* when it excludes 0), the minimum detectable effect at 80% power, and the decision "
    "after the multiple-comparison correction over every plug-in delta of this publication "
    "(better / worse: a change larger than the threshold, significant after correction; "
    "underpowered: the MDE exceeds the threshold; docs/statistics.md)."
)


def _plugin_delta_cell(row: pd.Series, metric: str) -> str:
    from litmus.releases.drift import points  # litmus.releases.drift imports this module

    delta = row[f"plugin_delta_{metric}"]
    if not _present(delta):
        return "n/a"
    low, high = row[f"plugin_delta_{metric}_ci_low"], row[f"plugin_delta_{metric}_ci_high"]
    marker = "*" if _present(low) and (low > 0 or high < 0) else ""
    text = f"{points(delta)}{marker}"
    if _present(low) and _present(high):
        text += f" [{points(low)}, {points(high)}]"
    if _present(row[f"plugin_delta_{metric}_mde"]):
        text += f" MDE {float(row[f'plugin_delta_{metric}_mde']) * 100:.1f} pts"
    decision = row[f"plugin_delta_{metric}_decision"]
    return text + (f" → {decision}" if _present(decision) else "")


def _plugin_delta_display(rows: pd.DataFrame, shown: Mapping[str, str]) -> list[list[str]]:
    """The board's plug-in deltas, one display row per compared plug-in configuration."""
    compared = rows[
        (rows["row_kind"] == "configuration")
        & (rows["status"] == "published")
        & rows["plugin_baseline"].notna()
    ]
    return [
        [shown.get(row["name"], row["name"]), shown.get(row["plugin_baseline"], "")]
        + [_plugin_delta_cell(row, metric) for metric in PLUGIN_DELTA_METRICS]
        for _, row in compared.iterrows()  # a handful of display rows, not a data path
    ]


def _plugin_delta_headers() -> list[str]:
    from litmus.releases.drift import METRIC_LABELS  # litmus.releases.drift imports this module

    return ["Configuration", "Baseline", *(METRIC_LABELS[m] for m in PLUGIN_DELTA_METRICS)]


# ---------------------------------------------------------------------------------------------
# Templates: one for the Markdown file, one for the HTML page, fed the same display cells.

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("litmus.metrics", "templates"),
    autoescape=jinja2.select_autoescape(["html.j2"], default=False),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_TEXT_HEADERS = ("Configuration", "Status")
_ESTIMATE_WITH_CI = re.compile(r"^(?P<estimate>[^\[]+?) \[(?P<ci>[^\]]+)\](?P<mark> ‡)?$")


def _markdown_cell(header: str, text: str) -> str:
    """A cell for the Markdown table: names and gate messages by the one Markdown rule, the
    other cells (numbers and marks) with their pipes escaped."""
    if header in _TEXT_HEADERS:
        return for_markdown(text)
    return text.replace("|", "\\|").replace("\n", " ")


def _html_cell(text: str) -> dict[str, str | None]:
    """A cell's text for the page: an interval goes on its own line under its estimate, so
    the table stays narrow without breaking inside a number or a name."""
    found = _ESTIMATE_WITH_CI.match(text)
    if not found:
        return {"estimate": text, "ci": None}
    return {"estimate": found["estimate"] + (found["mark"] or ""), "ci": found["ci"]}


def _markdown_table(headers: Sequence[str], rows: pd.DataFrame, shown: Mapping[str, str]) -> dict:
    return {
        "headers": list(headers),
        "rows": [
            [
                _markdown_cell(h, text)
                for h, text in zip(headers, _cells_under(row, headers, shown), strict=True)
            ]
            for _, row in rows.iterrows()  # a handful of display rows, not a data path
        ],
    }


def _html_rows_table(
    headers: Sequence[str], rows: pd.DataFrame, css_class: str, shown: Mapping[str, str]
) -> dict:
    meanings = dict(COLUMN_LEGEND)
    body = []
    for _, row in rows.iterrows():  # display rows only
        cells = _cells_under(row, headers, shown)
        css = "withheld" if row["status"] == "withheld" else str(row["row_kind"])
        if row["status"] == "withheld":  # the reason where it is read, across the number columns
            body.append(
                {
                    "withheld": True,
                    "css": css,
                    "name": cells[1],
                    "reason": cells[-1],
                    "colspan": len(cells) - 2,
                }
            )
            continue
        body.append(
            {
                "withheld": False,
                "css": css,
                "cells": [
                    (
                        "name" if h == "Configuration" else "status" if h == "Status" else "",
                        _html_cell(text),
                    )
                    for h, text in zip(headers, cells, strict=True)
                ],
            }
        )
    return {
        "css": css_class,
        "headers": [
            {"text": h, "css": "name" if h in _TEXT_HEADERS else "", "meaning": meanings[h]}
            for h in headers
        ],
        "rows": body,
    }


def _plugin_delta_table(rows: pd.DataFrame, shown: Mapping[str, str], markdown: bool) -> dict:
    display = _plugin_delta_display(rows, shown)
    if not display:
        return {}
    if markdown:
        cells = [
            [
                for_markdown(text) if i < 2 else text.replace("|", "\\|")
                for i, text in enumerate(line)
            ]
            for line in display
        ]
    else:
        cells = [[_html_cell(text) for text in line] for line in display]
    return {"headers": _plugin_delta_headers(), "rows": cells}


def _plot_alt(suite_key: str, rows: pd.DataFrame) -> str:
    """What the board's plot shows (litmus_dagster's publish_board picks it the same way)."""
    published = rows[(rows["row_kind"] == "configuration") & (rows["status"] == "published")]
    if not published.empty and ranking_metric(published) == "safety":
        return f"Safety of each configuration on {visible(suite_key)}, beside its naive safe rate"
    return (
        f"decision boundary of {visible(suite_key)}: hard-benign utility vs covert-malicious safety"
    )


def _board_views(board: Leaderboard, *, markdown: bool, plots: Mapping[str, bytes]) -> list:
    """Each suite board as the templates show it: heading, headline and details tables,
    plug-in deltas and (HTML) its plot."""
    shown = board.shown_names()
    views = []
    for suite_key, rows in board.boards() or [("no configurations", board.rows)]:
        said = _board_heading(suite_key, rows, board.runnable_splits.get(suite_key))
        details = _detail_rows(rows)
        headline = _headline(rows)
        if markdown:
            heading = for_markdown(said) + _ranking_note(rows)
            tables = (
                _markdown_table(headline, rows, shown),
                _markdown_table(DETAIL_HEADERS, details, shown),
            )
        else:
            heading = visible(said) + _ranking_note(rows)
            tables = (
                _html_rows_table(headline, rows, "headline", shown),
                _html_rows_table(DETAIL_HEADERS, details, "details", shown),
            )
        png = plots.get(suite_key)
        views.append(
            {
                "heading": heading,
                "suite": visible(suite_key),
                "headline": tables[0],
                "details": tables[1] if not details.empty else None,
                "plugin_deltas": _plugin_delta_table(rows, shown, markdown),
                "plot": png_data_uri(png) if png is not None else None,
                "plot_alt": _plot_alt(suite_key, rows),
            }
        )
    return views


def _render(
    board: Leaderboard,
    template: str,
    *,
    plots: Mapping[str, bytes] | None = None,
    **page: object,
) -> str:
    markdown = template.endswith(".md.j2")
    legend = [(header, meaning) for header, meaning in COLUMN_LEGEND]
    return _TEMPLATES.get_template(template).render(
        boards=_board_views(board, markdown=markdown, plots=plots or {}),
        details_heading=DETAILS_HEADING,
        plugin_delta_heading=PLUGIN_DELTA_HEADING,
        plugin_delta_note=PLUGIN_DELTA_NOTE,
        notes=f"{coverage_note(board.required_coverage)} {NOTES}",
        legend=legend,
        **page,
    )


def board_file_slug(suite_key: str) -> str:
    """A file-name part for a board: the suite key in a safe alphabet plus a short hash, so
    two suites never share a file and no suite text reaches a path unchanged."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", suite_key).strip("._")[:60] or "suite"
    return f"{safe}-{hashlib.sha256(suite_key.encode()).hexdigest()[:8]}"


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def withheld_from_gates(
    con: duckdb.DuckDBPyConnection, partition_keys: Sequence[str] = ()
) -> dict[str, list[str]]:
    """Reasons to withhold each configuration, as the publication relation decides them
    (``litmus.gates.publication_decision``): failed or unevaluated gates, no gate verdict at all
    (fail closed), audited rows out of date, a labeling disagreement over its bound."""
    return withheld_reasons(con, partition_keys)
