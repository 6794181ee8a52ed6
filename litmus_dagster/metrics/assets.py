"""Metrics wiring: the dbt project as Dagster assets, then bootstrap CIs and the leaderboard.

Lineage: audited_trajectories and suite_catalog (upstream, written by the labeling and
ingestion assets)
→ dbt models (counts, configuration/category/control metrics) → metric_cis, gates, labeling
agreement, plug-in deltas → the board's dbt mart (leaderboard_rows) → leaderboard.
"""

import fcntl
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pandas as pd
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets

from litmus import PROJECT_DIR
from litmus.faults import crash_point
from litmus.metrics.leaderboard import Leaderboard, leaderboard_from_warehouse, png_data_uri
from litmus.metrics.plots import board_plot_png, boundary_plot_png
from litmus.neutralize import for_markdown, visible
from litmus.releases.plugin_deltas import (
    PLUGIN_DELTA_PLOT,
    plugin_delta_plot_png,
    read_plugin_deltas,
)
from litmus.reuse import (
    metric_cis_reusing_unchanged,
    private_families,
    public_private_gaps_reusing_unchanged,
    record_digests,
)
from litmus.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    PUBLIC_PRIVATE_COLUMNS,
)
from litmus.trust import publication
from litmus.trust.receipts import RECEIPT_FILE_NAME
from litmus.warehouse import arrow_rows, atomically, replace_rows
from litmus_dagster.metrics.dbt_in_process import (
    dbt_build_events,
    dbt_profile_environment,
    newest_source_change,
    parse_profile_path,
)
from litmus_dagster.partitions import WAREHOUSE_POOL
from litmus_dagster.resources import LitmusWarehouse

DBT_PROJECT_DIR = PROJECT_DIR / "dbt_project"
METRICS_GROUP = "metrics"
# Beside the manifest: the profile path it was parsed against (manifest_is_stale).
PARSE_PROFILE_RECORD = "parse_profile_path.txt"


def dbt_executable() -> str:
    """The dbt CLI installed beside this interpreter (a venv used without activation, as
    ``./dev.sh`` and ``dagster dev`` do), else the one on PATH."""
    beside_python = Path(sys.executable).with_name("dbt")
    if beside_python.exists():
        return os.fspath(beside_python)
    return shutil.which("dbt") or "dbt"


def manifest_is_stale(project: DbtProject) -> bool:
    """True when the manifest is missing (a clean clone), older than a project file, or parsed
    against another profile path than the in-process builds parse against (its partial-parse
    state would serve none of them)."""
    record = project.project_dir / project.target_path / PARSE_PROFILE_RECORD
    if not project.manifest_path.exists() or not record.exists():
        return True
    if record.read_text(encoding="utf-8") != os.fspath(parse_profile_path(project.project_dir)):
        return True
    return newest_source_change(project.project_dir) > project.manifest_path.stat().st_mtime_ns


def parse_if_stale(project: DbtProject) -> None:
    """``dbt parse`` when the manifest is missing or stale. Processes importing the code
    location at the same time (one per run step) take turns; the first one parses."""
    lock_path = project.project_dir / project.target_path / ".parse.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if manifest_is_stale(project):
            DbtCliResource(project_dir=project, dbt_executable=dbt_executable()).cli(
                ["parse", "--quiet"], target_path=project.target_path
            ).wait()
            record = project.project_dir / project.target_path / PARSE_PROFILE_RECORD
            record.write_text(os.fspath(parse_profile_path(project.project_dir)), encoding="utf-8")


def prepared_dbt_project(project_dir: Path = DBT_PROJECT_DIR) -> DbtProject:
    """The dbt project with a loadable, current manifest.

    Everywhere (``dagster dev``, CI from a clean clone, a test run, a deployed code server
    without a pre-built manifest) the project is parsed here, with the venv's dbt, when the
    manifest is missing or older than the project files.
    """
    project = DbtProject(project_dir=project_dir)
    # parsed against the fixed path the in-process builds parse against too, so that its
    # partial-parse state serves them (dbt_in_process.parsed_project)
    with dbt_profile_environment(parse_profile_path(project.project_dir)):
        # not project.prepare_if_dev(): under `dagster dev` it runs `dbt parse` with the
        # executable "dbt" looked up on PATH, which a venv used without activation lacks;
        # parse_if_stale re-parses whenever a project file changed, with the venv's dbt.
        parse_if_stale(project)
    return project


# The Dagster asset that writes each dbt source table.
SOURCE_ASSETS = {"audited_trajectories": "audited_trajectories", "suite_instances": "suite_catalog"}


class LitmusDbtTranslator(DagsterDbtTranslator):
    """dbt sources are the upstream Dagster assets that write them; models keep their names."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        if dbt_resource_props["resource_type"] == "source":
            name = dbt_resource_props["name"]
            return dg.AssetKey([SOURCE_ASSETS.get(name, name)])
        return super().get_asset_key(dbt_resource_props)

    def get_description(self, dbt_resource_props: Mapping[str, Any]) -> str:
        """The model's own description from its schema.yml (never the raw SQL dump)."""
        own = (dbt_resource_props.get("description") or "").strip()
        kind = dbt_resource_props.get("resource_type", "model")
        return own or f"dbt {kind} {dbt_resource_props.get('name', '')} (no description)"

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        if dbt_resource_props["resource_type"] == "source":
            return super().get_group_name(dbt_resource_props)
        return METRICS_GROUP


DBT_PROJECT = prepared_dbt_project()


def _dbt_build_assets(name: str, description: str, **selection: str) -> dg.AssetsDefinition:
    """The dbt models of ``selection`` (``select=``/``exclude=``) and their tests as one Dagster
    multi-asset whose step runs ``dbt build`` over them in this process (``dbt_in_process``:
    the events dagster-dbt yields, without a dbt subprocess); a failing test fails the step."""

    def build(
        context: dg.AssetExecutionContext, dbt: DbtCliResource, warehouse: LitmusWarehouse
    ) -> Iterator[Any]:
        # dbt opens the DuckDB file itself: hold the warehouse lock for it (dbt_build_events
        # points its profile at the very file the resource uses).
        with warehouse.exclusive():
            # run artifacts and logs go to the state folder, never into the checkout (which may
            # be read-only, and must not fill up with one folder per build)
            build_artifacts = warehouse.paths.home / "dbt" / "build"
            yield from dbt_build_events(dbt, context, warehouse.duckdb_path, build_artifacts)

    build.__doc__ = description
    return dbt_assets(
        manifest=DBT_PROJECT.manifest_path,
        project=DBT_PROJECT,
        dagster_dbt_translator=LitmusDbtTranslator(),
        name=name,
        pool=WAREHOUSE_POOL,
        **selection,
    )(build)


# The board's mart (models/marts) reads the intervals, gate verdicts, labeling agreement and
# plug-in deltas, which are computed from the metric models: it is built after them, by a
# second dbt asset, so the asset graph has no cycle and its tests see the board's inputs.
BOARD_MART_SELECTION = "path:models/marts"
litmus_dbt_metrics = _dbt_build_assets(
    "litmus_dbt_metrics",
    "``dbt build``: every metric model and its tests.",
    exclude=BOARD_MART_SELECTION,
)
litmus_dbt_board = _dbt_build_assets(
    "litmus_dbt_board",
    "``dbt build`` of the board's mart (``leaderboard_rows``) and its tests.",
    select=BOARD_MART_SELECTION,
)


FAMILY_SPLIT_COUNTS = dg.AssetKey(["family_split_counts"])
FAMILY_REGISTER_COUNTS = dg.AssetKey(["family_register_counts"])
CONFIGURATION_METRICS = dg.AssetKey(["configuration_metrics"])
CONTROL_METRICS = dg.AssetKey(["control_metrics"])
LEADERBOARD_ROWS = dg.AssetKey(["leaderboard_rows"])


class MetricCIConfig(dg.Config):
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE


@dg.asset(
    deps=[FAMILY_SPLIT_COUNTS, FAMILY_REGISTER_COUNTS],
    group_name=METRICS_GROUP,
    pool=WAREHOUSE_POOL,
    kinds={"python", "duckdb"},
    description=(
        "95% CIs of every rate: Wilson intervals on the family-cluster effective sample size "
        "from a stratified family bootstrap (docs/statistics.md)."
    ),
)
def metric_cis(config: MetricCIConfig, warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:
        # configurations whose counts did not change keep their stored rows, and only the
        # others' counts are read (litmus.reuse)
        cis, digests, recomputed = metric_cis_reusing_unchanged(
            con,
            n_resamples=config.n_resamples,
            seed=config.seed,
            confidence=config.confidence,
        )

        def replace() -> None:
            replace_rows(con, "metric_cis", arrow_rows(cis))
            record_digests(con, "metric_cis", digests)

        atomically(con, replace, what="metric intervals")
    crash_point("metrics.cis_computed")
    return dg.MaterializeResult(
        metadata={
            "n_configurations": dg.MetadataValue.int(int(cis["partition_key"].nunique())),
            "recomputed": dg.MetadataValue.json(recomputed),
            "n_resamples": dg.MetadataValue.int(config.n_resamples),
            "seed": dg.MetadataValue.int(config.seed),
            "confidence": dg.MetadataValue.float(config.confidence),
        }
    )


@dg.asset(
    name="public_private_gaps",
    deps=[FAMILY_SPLIT_COUNTS, dg.AssetKey(["configuration_identities"]), "suite_catalog"],
    group_name=METRICS_GROUP,
    pool=WAREHOUSE_POOL,
    kinds={"python", "duckdb"},
    description=(
        "For configurations whose suite marks families private: the public − private gap of "
        "every headline metric with its interval, flagging one that does markedly better on "
        "the public families (docs/statistics.md)."
    ),
)
def public_private_gap_table(
    config: MetricCIConfig, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:
        private = private_families(con)
        # configurations whose counts and private families did not change keep their rows
        gaps, digests, _ = (
            public_private_gaps_reusing_unchanged(
                con,
                private,
                n_resamples=config.n_resamples,
                seed=config.seed,
                confidence=config.confidence,
            )
            if not private.empty
            else (pd.DataFrame(columns=list(PUBLIC_PRIVATE_COLUMNS)), {}, [])
        )

        def replace() -> None:
            replace_rows(con, "public_private_gaps", arrow_rows(gaps))
            record_digests(con, "public_private_gaps", digests)

        atomically(con, replace, what="public-private gaps")
    flagged = gaps.loc[gaps["flagged"].astype(bool), "partition_key"].unique().tolist()
    return dg.MaterializeResult(
        metadata={
            "configurations": dg.MetadataValue.int(int(gaps["partition_key"].nunique())),
            "flagged": dg.MetadataValue.json(sorted(flagged)),
        }
    )


@dg.asset(
    # metric_rate_gates: the rates gate records its verdicts before the leaderboard reads them
    # labeling_agreement: the measured labeling error can withhold a configuration
    deps=[
        LEADERBOARD_ROWS,  # the board's mart, read with the publication decision
        metric_cis,
        CONFIGURATION_METRICS,
        CONTROL_METRICS,
        "metric_rate_gates",
        "publishable_configuration",  # the configurations their blocking gates cleared
        "labeling_agreement",
        public_private_gap_table,
        "plugin_deltas",  # the board shows the plug-in deltas (litmus_dagster.releases)
    ],
    group_name=METRICS_GROUP,
    pool=WAREHOUSE_POOL,
    kinds={"python", "duckdb"},
    description=(
        "Configurations ranked by boundary score with CIs, naive rank and rank shift, the "
        "reference controls, and withheld configurations with their reasons; exported as "
        "CSV/Markdown/HTML with the boundary plot."
    ),
)
def leaderboard(warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:
        board = leaderboard_from_warehouse(con)
    if not (board.rows["row_kind"] == "configuration").any():
        # no configuration scored yet (only suites, or every landed record quarantined): there
        # is no board to publish, and the last one (if any) stays as it was
        return dg.MaterializeResult(metadata={"published": False, "reason": NOTHING_SCORED})
    # staged: the files, the plug-in delta plot and the table's rows are published together
    # with their receipt (leaderboard_receipt)
    exports = warehouse.paths.exports
    staging = publication.begin(exports, warehouse.get_connection)
    staged, plots = publish_board(board, staging)
    with warehouse.get_connection() as con:
        deltas = read_plugin_deltas(con)
    if not deltas.empty:
        plugin_plot = plugin_delta_plot_png(deltas)
        (staging / PLUGIN_DELTA_PLOT).write_bytes(plugin_plot)
        staged["plugin_deltas"] = staging / PLUGIN_DELTA_PLOT
    publication.stage_table(staging, board.to_arrow())
    written = {kind: exports / path.name for kind, path in staged.items()}
    crash_point("leaderboard.staged")
    shown = board.shown_names()  # names in the UI by litmus.neutralize's rule for names
    by_suite = {
        visible(suite_key): {
            "published": int((rows["status"] == "published").sum()),
            "withheld": int((rows["status"] == "withheld").sum()),
            "ranked": [shown[name] for name in rows.loc[rows["rank"].notna(), "name"]],
        }
        for suite_key, rows in board.boards()
    }
    metadata: dict[str, Any] = {
        "leaderboard": dg.MetadataValue.md(board.to_markdown()),
        "html": dg.MetadataValue.path(os.fspath(written["html"])),
        "csv": dg.MetadataValue.path(os.fspath(written["csv"])),
        "n_published": dg.MetadataValue.int(len(board.published)),
        "withheld": dg.MetadataValue.json(
            {key: [visible(r) for r in reasons] for key, reasons in board.withheld_reasons.items()}
        ),
        "boards_by_suite": dg.MetadataValue.json(by_suite),
    }
    for suite_key, png in plots.items():
        metadata[f"boundary_plot {suite_key}"] = dg.MetadataValue.md(
            f"![boundary plot of {for_markdown(suite_key)}]({png_data_uri(png)})"
        )
    if "png" in written:
        metadata["png"] = dg.MetadataValue.path(os.fspath(written["png"]))
    if not deltas.empty:
        metadata["plugin_delta_plot"] = dg.MetadataValue.md(
            f"![plug-in deltas]({png_data_uri(plugin_plot)})"
        )
        metadata["plugin_delta_plot_path"] = dg.MetadataValue.path(
            os.fspath(written["plugin_deltas"])
        )
    return dg.MaterializeResult(metadata=metadata)


NOTHING_SCORED = "no configuration has trajectories yet: nothing to publish"


def publish_board(board: Leaderboard, exports: Path) -> tuple[dict[str, Path], dict[str, bytes]]:
    """Render one boundary plot per suite board and write the board's data files (its pages
    are rendered after drift and its alerts: :func:`render_board_pages`)."""
    plots = {}
    for suite_key, rows in board.boards():
        configurations = rows[rows["row_kind"] == "configuration"]
        published = configurations[configurations["status"] == "published"]
        plots[suite_key] = board_plot_png(
            published,
            rows[rows["row_kind"] == "control"],
            suite_key=suite_key,
            ranked_by_safety=board.ranks_by_safety(rows),
            withheld=configurations.loc[configurations["status"] == "withheld", "name"]
            .astype(str)
            .tolist(),
        )
    if not plots:  # nothing published yet: still the empty plot with the canonical controls
        plots[""] = boundary_plot_png(board.published, board.controls)
    written = board.write_data(exports, plots)
    written |= {
        "markdown": exports / "leaderboard.md",
        "html": exports / "leaderboard.html",
    }
    return written, plots


def render_board_pages(con: duckdb.DuckDBPyConnection, staging: Path, staged: Leaderboard) -> None:
    """The Markdown and HTML of the ``staged`` board (its staged table's rows:
    :meth:`Leaderboard.from_arrow`), rendered into ``staging`` once with the release alerts
    raised up to now (this run's drift too)."""
    staged.write_pages(
        staging,
        published_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        alerts=current_alert_lines(con),
        receipt_href=RECEIPT_FILE_NAME,
    )


def current_alert_lines(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The release regression alerts raised so far, newest first, as one line each."""
    from litmus.releases.alerts import read_alerts, regressions_text

    alerts = read_alerts(con)
    return [
        f"{row.lineage} {row.from_release} → {row.to_release} ({row.suite}@{row.suite_version}): "
        f"{regressions_text(row.regressions)}, raised {row.raised_at:%Y-%m-%d %H:%M}"
        for row in alerts.itertuples(index=False)
    ]
