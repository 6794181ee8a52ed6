"""The published leaderboard: configurations ranked by boundary score, with CIs and controls.

The rows are the dbt mart ``leaderboard_rows`` (dbt_project/models/marts): it joins the metric
tables, the bootstrap intervals, the labeling agreement, the public − private gaps and the
plug-in deltas, and ranks each suite's published configurations in SQL. What the domain decides
in Python goes in as :class:`BoardInputs`: the publication decision (partition_key → reasons
for withholding), fingerprints, coverage, precision flags and suite sizes. A withheld
configuration is listed with its reasons and nothing else — no rate, interval or rank of it is
published (SPEC §7). This module reads the mart and renders it (CSV, and Markdown and HTML from
the Jinja templates in ``templates/``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import numpy as np
import pandas as pd
import pyarrow as pa

from litmus.audit.spotcheck import SIMULATED_NOTE
from litmus.files import write_atomically
from litmus.fingerprint import configuration_fingerprints
from litmus.formats import BENIGN_SPLITS
from litmus.gates.publication_decision import NOT_GATED_REASON as NOT_GATED_REASON
from litmus.gates.publication_decision import withheld_reasons
from litmus.metric_catalogue import catalogue
from litmus.metrics.board_shape import (
    typed_board_rows,
)
from litmus.neutralize import display_names, for_csv_cell, for_markdown, visible
from litmus.stats import HEADLINE_METRICS, RATE_METRICS
from litmus.warehouse import arrow_rows

PUBLISHED_RATES: tuple[str, ...] = RATE_METRICS
PLUGIN_DELTA_METRICS: tuple[str, ...] = HEADLINE_METRICS
_CATALOGUE = catalogue()


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
    # (suite, suite_version) of each suite board the mart ranks by Safety (no boundary score)
    safety_ranked: frozenset[tuple[str, str]] = frozenset()

    def ranks_by_safety(self, rows: pd.DataFrame) -> bool:
        """Whether the board of ``rows`` (one of :meth:`boards`) ranks by Safety, as the mart
        ``leaderboard_rows`` decided."""
        if rows.empty:
            return False
        suite, version = rows["suite"].iloc[0], rows["suite_version"].iloc[0]
        return _present(suite) and _present(version) and (suite, version) in self.safety_ranked

    def to_arrow(self) -> pa.Table:
        """The rows as the ``leaderboard`` table stores them; the schema's metadata carries
        what else the pages show, so that :meth:`from_arrow` gives back this board."""
        rows = arrow_rows(self.rows)
        board = {
            "withheld_reasons": {key: list(r) for key, r in self.withheld_reasons.items()},
            "required_coverage": self.required_coverage,
            "runnable_splits": {key: list(s) for key, s in self.runnable_splits.items()},
            "safety_ranked": sorted(list(pair) for pair in self.safety_ranked),
        }
        metadata = {**(rows.schema.metadata or {}), _ARROW_BOARD_KEY: json.dumps(board)}
        return rows.replace_schema_metadata(metadata)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> Leaderboard:
        """The board :meth:`to_arrow` gave ``table`` of."""
        board = json.loads((table.schema.metadata or {})[_ARROW_BOARD_KEY])
        return cls(
            rows=typed_board_rows(table.to_pandas()),
            withheld_reasons=board["withheld_reasons"],
            required_coverage=float(board["required_coverage"]),
            runnable_splits={key: tuple(s) for key, s in board["runnable_splits"].items()},
            safety_ranked=frozenset((suite, version) for suite, version in board["safety_ranked"]),
        )

    def boards(self) -> list[tuple[str, pd.DataFrame]]:
        """One board per suite: (``suite@version``, its rows), in the rows' board order (the
        largest suite first); rows of no known suite last."""
        boards = []
        known = self.rows["suite"].notna() & self.rows["suite_version"].notna()
        suites = self.rows.loc[known, ["suite", "suite_version"]].drop_duplicates()
        for suite, version in suites.itertuples(index=False):
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


_ARROW_BOARD_KEY = b"litmus.board"


@dataclass(frozen=True)
class BoardInputs:
    """What the board mart (``leaderboard_rows``) takes besides the warehouse's metric tables:
    what the domain decides or computes in Python. Keys are partition keys."""

    # the publication decision: every withheld configuration → its reasons
    withheld: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # each configuration's low-precision rates (ranked after the precise ones)
    low_precision: Mapping[str, set[str]] = field(default_factory=dict)
    fingerprints: Mapping[str, str] = field(default_factory=dict)
    # (runnable suite instances covered, runnable suite instances)
    coverage: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # the suite of a configuration that has no metrics (listed only when withheld)
    suite_of: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # (suite, version) → (families, instances) as its configurations run it
    suite_sizes: Mapping[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    # (suite, version) → the splits it declares runnable (only suites that declare them)
    runnable_splits: Mapping[tuple[str, str], Sequence[str]] = field(default_factory=dict)
    required_coverage: float = 1.0
    # the configurations on the board (:meth:`within`); None: every one the warehouse holds
    scope: frozenset[str] | None = None

    @classmethod
    def from_warehouse(
        cls,
        con: duckdb.DuckDBPyConnection,
        *,
        required_coverage: float | None = None,
        partition_keys: Collection[str] | None = None,
    ) -> BoardInputs:
        from litmus.gates.publication_gates import (
            RUNNABLE_INSTANCES_SQL,
            coverage_by_partition,
            low_precision_rates,
        )
        from litmus.gates.publication_gates import required_coverage as configured_coverage

        keys = [
            key for (key,) in con.sql("SELECT partition_key FROM configuration_metrics").fetchall()
        ]
        flags = low_precision_rates(con)
        if flags is None:  # never evaluated: unknown precision ranks after known (fail closed)
            flags = {key: set(PUBLISHED_RATES) for key in keys}
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
        inputs = cls(
            withheld=withheld_from_gates(con, keys),
            low_precision=flags,
            fingerprints=configuration_fingerprints(con),
            coverage=coverage_by_partition(con),
            suite_of=suite_of,
            suite_sizes=suite_sizes,
            runnable_splits=runnable_splits,
            required_coverage=(
                configured_coverage() if required_coverage is None else required_coverage
            ),
        )
        return inputs if partition_keys is None else inputs.within(partition_keys)

    def within(self, partition_keys: Collection[str]) -> BoardInputs:
        """These inputs for the board of only ``partition_keys``: the one place the board's
        scope is applied (the mart gets it as ``litmus_board_scope`` for its metric tables)."""
        scope = frozenset(partition_keys)

        def kept(by_key: Mapping[str, Any]) -> dict[str, Any]:
            return {key: value for key, value in by_key.items() if key in scope}

        return replace(
            self,
            withheld=kept(self.withheld),
            low_precision=kept(self.low_precision),
            fingerprints=kept(self.fingerprints),
            coverage=kept(self.coverage),
            suite_of=kept(self.suite_of),
            scope=scope,
        )

    def configurations(self) -> pa.Table:
        """One row per configuration the inputs know (the variable ``litmus_board_inputs``)."""
        keys = sorted(
            set(self.withheld) | set(self.low_precision) | set(self.fingerprints)
            | set(self.coverage) | set(self.suite_of)
        )  # fmt: skip
        suites = [self.suite_of.get(key, (None, None)) for key in keys]
        return pa.table(
            {
                "partition_key": pa.array(keys, pa.string()),
                "suite": pa.array([suite for suite, _ in suites], pa.string()),
                "suite_version": pa.array([version for _, version in suites], pa.string()),
                "withheld_reasons": pa.array(
                    [list(self.withheld[k]) if k in self.withheld else None for k in keys],
                    pa.list_(pa.string()),
                ),
                "fingerprint": pa.array([self.fingerprints.get(k) for k in keys], pa.string()),
                "instances_covered": pa.array(
                    [self.coverage[k][0] if k in self.coverage else None for k in keys], pa.int64()
                ),
                "low_precision": pa.array(
                    [sorted(self.low_precision.get(k, set())) for k in keys],
                    pa.list_(pa.string()),
                ),
            }
        )

    def suites(self) -> pa.Table:
        """One row per suite with its size (the variable ``litmus_board_suite_sizes``)."""
        sizes = sorted(self.suite_sizes.items())
        return pa.table(
            {
                "suite": pa.array([suite for (suite, _), _ in sizes], pa.string()),
                "suite_version": pa.array([version for (_, version), _ in sizes], pa.string()),
                "suite_families": pa.array([n for _, (n, _) in sizes], pa.int64()),
                "suite_instances": pa.array([n for _, (_, n) in sizes], pa.int64()),
            }
        )


# The mart reads the inputs from these connection variables (unset: all published, precise).
_SET_BOARD_VARIABLES = (
    "SET VARIABLE litmus_board_inputs = (SELECT list(struct_pack(partition_key, suite, "
    "suite_version, withheld_reasons, fingerprint, instances_covered, low_precision)) "
    "FROM _litmus_board_inputs)",
    "SET VARIABLE litmus_board_suite_sizes = (SELECT list(struct_pack(suite, suite_version, "
    "suite_families, suite_instances)) FROM _litmus_board_suite_sizes)",
)
_RESET_BOARD_VARIABLES = (
    "RESET VARIABLE litmus_board_inputs",
    "RESET VARIABLE litmus_board_suite_sizes",
    "RESET VARIABLE litmus_board_scope",
)
BOARD_ROWS_SQL = "SELECT * EXCLUDE (board_order) FROM leaderboard_rows ORDER BY board_order"


def board_from_mart(con: duckdb.DuckDBPyConnection, inputs: BoardInputs) -> Leaderboard:
    """The board of the dbt mart ``leaderboard_rows`` (dbt_project/models/marts) with
    ``inputs``: its rows in board order, typed by the board's shape. Reads only."""
    con.register("_litmus_board_inputs", inputs.configurations())
    con.register("_litmus_board_suite_sizes", inputs.suites())
    try:
        for statement in _SET_BOARD_VARIABLES:
            con.execute(statement)
        if inputs.scope is not None:
            con.execute("SET VARIABLE litmus_board_scope = ?::VARCHAR[]", [sorted(inputs.scope)])
        mart = con.sql(BOARD_ROWS_SQL).df()
    finally:
        for statement in _RESET_BOARD_VARIABLES:
            con.execute(statement)
        con.unregister("_litmus_board_inputs")
        con.unregister("_litmus_board_suite_sizes")
    by_safety = mart.loc[
        mart["ranking_metric"].eq("safety") & mart["suite"].notna() & mart["suite_version"].notna(),
        ["suite", "suite_version"],
    ]
    return Leaderboard(
        rows=typed_board_rows(mart),
        withheld_reasons={key: list(reasons) for key, reasons in inputs.withheld.items()},
        required_coverage=float(inputs.required_coverage),
        runnable_splits={
            f"{suite}@{version}": tuple(splits)
            for (suite, version), splits in inputs.runnable_splits.items()
        },
        safety_ranked=frozenset(by_safety.itertuples(index=False, name=None)),
    )


def leaderboard_from_warehouse(
    con: duckdb.DuckDBPyConnection,
    *,
    required_coverage: float | None = None,
    partition_keys: Collection[str] | None = None,
) -> Leaderboard:
    """The leaderboard as published: the board mart over the warehouse's metric tables, with
    the publication decision, fingerprints and coverage as they are now.

    The ``leaderboard`` asset publishes this and ``litmus verify`` recomputes it, so the two
    can never drift apart. ``partition_keys``: the board of only these configurations (verify
    recomputes the one a receipt covers while newer configurations wait to be published).
    """
    inputs = BoardInputs.from_warehouse(
        con, required_coverage=required_coverage, partition_keys=partition_keys
    )
    return board_from_mart(con, inputs)


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


def _ranking_note(rows: pd.DataFrame, *, by_safety: bool) -> str:
    """Said after a board's heading when it ranks by something other than the boundary, or
    leaves columns it cannot fill out of its headline."""
    note = f" — {SAFETY_RANKED_NOTE}" if by_safety else ""
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


def _plot_alt(suite_key: str, *, by_safety: bool) -> str:
    """What the board's plot shows (litmus_dagster's publish_board picks it the same way)."""
    if by_safety:
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
        by_safety = board.ranks_by_safety(rows)
        details = _detail_rows(rows)
        headline = _headline(rows)
        if markdown:
            heading = for_markdown(said) + _ranking_note(rows, by_safety=by_safety)
            tables = (
                _markdown_table(headline, rows, shown),
                _markdown_table(DETAIL_HEADERS, details, shown),
            )
        else:
            heading = visible(said) + _ranking_note(rows, by_safety=by_safety)
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
                "plot_alt": _plot_alt(suite_key, by_safety=by_safety),
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
