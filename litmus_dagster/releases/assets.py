"""``release_drift`` and its regression check (wiring around litmus.releases.drift /
litmus.releases.alerts)."""

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pandas as pd

import litmus.releases.drift
import litmus.stats
from litmus.gates.publication_decision import withheld_reasons
from litmus.metrics.leaderboard import png_data_uri
from litmus.neutralize import display_name, for_markdown
from litmus.releases.alerts import (
    assess_comparisons,
    find_regressions,
    raise_and_deliver,
    record_new_alerts,
)
from litmus.releases.drift import (
    DRIFT_METRICS,
    DRIFT_VERSION,
    compute_release_drift,
    drift_summary_lines,
    read_drift_inputs,
    read_published_cis,
    read_release_drift,
    replace_release_drift,
    stored_drift_pairs,
)
from litmus.releases.drift_plot import write_drift_plots
from litmus.releases.plugin_deltas import (
    assess_plugin_deltas,
    compute_plugin_deltas,
    plugin_delta_lines,
    read_configurations,
    replace_plugin_deltas,
    stored_plugin_pairs,
)
from litmus.reuse import ConfigurationCounts
from litmus.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from litmus.trust import publication
from litmus_dagster.metrics.assets import (
    DBT_PROJECT_DIR,
    FAMILY_SPLIT_COUNTS,
    leaderboard,
)
from litmus_dagster.partitions import WAREHOUSE_POOL
from litmus_dagster.releases.resources import AlertSinks, RegressionPolicy
from litmus_dagster.resources import LitmusWarehouse

RELEASES_GROUP = "releases"
CONFIGURATION_IDENTITIES = dg.AssetKey(["configuration_identities"])


def metric_definitions_version() -> str:
    """A digest of everything that defines the published numbers: the dbt models and macros,
    the bootstrap and the drift comparison. Part of ``release_drift``'s code version, so a
    change to any of them marks the published metrics stale (and the publish automation
    re-runs them)."""
    sources = sorted(
        [
            *DBT_PROJECT_DIR.glob("models/**/*.sql"),
            *DBT_PROJECT_DIR.glob("macros/**/*.sql"),
            Path(litmus.stats.__file__),
            Path(litmus.releases.drift.__file__),
        ]
    )
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(path.parents[1]).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


RELEASE_DRIFT_CODE_VERSION = f"drift-{DRIFT_VERSION}+metrics-{metric_definitions_version()}"


class ReleaseDriftConfig(dg.Config):
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE


@dg.asset(
    deps=[FAMILY_SPLIT_COUNTS, CONFIGURATION_IDENTITIES, leaderboard],
    group_name=RELEASES_GROUP,
    code_version=RELEASE_DRIFT_CODE_VERSION,
    pool=WAREHOUSE_POOL,
    kinds={"python", "duckdb"},
    description=(
        "Each published release of a lineage (model × harness × plug-in) against the previous "
        "one on the same suite: paired family-bootstrap deltas and CIs of CM safety, HB "
        "utility, Safety, Utility and boundary score; a drift plot per lineage."
    ),
)
def release_drift(
    context: dg.AssetExecutionContext,
    config: ReleaseDriftConfig,
    warehouse: LitmusWarehouse,
    regression_policy: RegressionPolicy,
) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:
        inputs = read_drift_inputs(con)
        reusable = stored_drift_pairs(con)  # pairs whose two configurations did not change
        published_cis = read_published_cis(con, DRIFT_METRICS)
        # only the counts of pairs bootstrapped again are read (litmus.reuse)
        result = compute_release_drift(
            inputs.configurations,
            ConfigurationCounts.from_warehouse(con),
            withheld=inputs.withheld,
            n_resamples=config.n_resamples,
            seed=config.seed,
            confidence=config.confidence,
            reusable=reusable,
        )
    # The decisions (regression / underpowered / no regression, raw and adjusted p-values)
    # are stored with the deltas, so the table shows what the check decided.
    policy = {
        "threshold": regression_policy.resolved_threshold(),
        "metrics": regression_policy.metrics,
        "correction": regression_policy.resolved_correction(),
    }
    assessed = assess_comparisons(result.comparisons, **policy)
    # Regressions are recorded here, with the deltas, so that the receipt step (downstream of
    # this asset) publishes the board page with every alert raised up to now; the check
    # below reports them and delivers them to the sinks.
    alerts = find_regressions(assessed, **policy)
    with warehouse.get_connection() as con:
        replace_release_drift(con, assessed, result.pair_digests)
        record_new_alerts(con, alerts, datetime.now(UTC))
        # drawn again only for lineages whose inputs changed (litmus.releases.drift_plot)
        # staged: published with the board and its receipt (leaderboard_receipt)
        exports = warehouse.paths.exports
        drift_plots = write_drift_plots(
            con,
            exports,
            publication.staging_dir(exports),
            result.releases,
            result.comparisons,
            published_cis,
        )
    for reason in result.skipped:
        context.log.info(f"not compared: {reason}")
    plots = drift_plots.written

    summary = drift_summary_lines(assessed)
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_comparisons": dg.MetadataValue.int(
            int(
                result.comparisons[["from_partition_key", "to_partition_key"]]
                .drop_duplicates()
                .shape[0]
            )
        ),
        "lineages_compared": dg.MetadataValue.json(sorted(plots)),
        "summary": dg.MetadataValue.md(
            "\n".join(f"- {for_markdown(line)}" for line in summary)
            or "no lineage has two published releases"
        ),
        "not_compared": dg.MetadataValue.json(result.skipped),
        "bootstrapped_pairs": dg.MetadataValue.json(result.recomputed),
        "drift_plots_drawn": dg.MetadataValue.json(drift_plots.rendered),
        "deltas": dg.MetadataValue.md(_markdown(assessed)),
    }
    for lineage, (path, png) in sorted(plots.items()):
        metadata[f"drift_plot {lineage}"] = dg.MetadataValue.md(
            f"![release drift of {for_markdown(lineage)}]({png_data_uri(png)})"
        )
        metadata[f"drift_plot_path {lineage}"] = dg.MetadataValue.path(os.fspath(path))
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(
    # The same publication decisions the leaderboard reads (withheld configurations are not
    # compared); the leaderboard shows these deltas, so it runs after this asset.
    deps=[
        FAMILY_SPLIT_COUNTS,
        CONFIGURATION_IDENTITIES,
        "metric_cis",
        "metric_rate_gates",
        "labeling_agreement",
    ],
    group_name=RELEASES_GROUP,
    code_version=RELEASE_DRIFT_CODE_VERSION,
    pool=WAREHOUSE_POOL,
    kinds={"python", "duckdb"},
    description=(
        "Configurations that differ only in plug-in (same model, release, harness and suite): "
        "paired family-bootstrap deltas of CM safety, HB utility, Safety, Utility and boundary "
        "score against the baseline plug-in, with the minimum detectable effect and the "
        "multiplicity-adjusted decision; a forest plot. Shown on the leaderboard."
    ),
)
def plugin_deltas(
    context: dg.AssetExecutionContext,
    config: ReleaseDriftConfig,
    warehouse: LitmusWarehouse,
    regression_policy: RegressionPolicy,
) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:
        configurations = read_configurations(con)
        withheld = withheld_reasons(con, configurations["partition_key"].tolist())
        reusable = stored_plugin_pairs(con)  # pairs whose two configurations did not change
        pair_digests: dict[str, str] = {}
        # only the counts of pairs bootstrapped again are read (litmus.reuse)
        deltas, skipped = compute_plugin_deltas(
            configurations,
            ConfigurationCounts.from_warehouse(con),
            withheld=withheld,
            n_resamples=config.n_resamples,
            seed=config.seed,
            confidence=config.confidence,
            reusable=reusable,
            pair_digests=pair_digests,
        )
    deltas = assess_plugin_deltas(
        deltas,
        threshold=regression_policy.resolved_threshold(),
        correction=regression_policy.resolved_correction(),
    )
    with warehouse.get_connection() as con:
        replace_plugin_deltas(con, deltas, pair_digests)
    for reason in skipped:
        context.log.info(f"plug-ins not compared: {reason}")
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_compared": dg.MetadataValue.int(
            int(deltas[["partition_key"]].drop_duplicates().shape[0])
        ),
        "summary": dg.MetadataValue.md(
            "\n".join(f"- {for_markdown(line)}" for line in plugin_delta_lines(deltas))
            or "no two published configurations differ only in plug-in"
        ),
        "not_compared": dg.MetadataValue.json(skipped),
        # its forest plot is drawn and staged with the board (the leaderboard asset)
    }
    return dg.MaterializeResult(metadata=metadata)


def _markdown(comparisons: pd.DataFrame) -> str:
    if comparisons.empty:
        return "no comparisons"
    lines = [
        "| lineage | suite | from → to | metric | delta | 95% CI | MDE (80% power) | p | "
        "adjusted p | decision |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def number(value: object, spec: str) -> str:
        return "n/a" if pd.isna(value) else format(float(value), spec)

    for row in comparisons.itertuples(index=False):
        interval = "n/a" if pd.isna(row.ci_low) else f"[{row.ci_low:+.3f}, {row.ci_high:+.3f}]"
        lines.append(
            f"| {for_markdown(display_name(row.lineage_key))} | "
            f"{for_markdown(display_name(f'{row.suite}@{row.suite_version}'))} | "
            f"{for_markdown(display_name(row.from_release))} → "
            f"{for_markdown(display_name(row.to_release))} | {row.metric} | "
            f"{number(row.delta, '+.3f')} | {interval} | {number(row.mde, '.3f')} | "
            f"{number(row.p_value, '.3g')} | {number(row.p_adjusted, '.3g')} "
            f"({row.correction}) | {row.decision} |"
        )
    return "\n".join(lines)


@dg.asset_check(
    asset=release_drift,
    name="no_significant_regression",
    pool=WAREHOUSE_POOL,
    description=(
        "Fails when a watched metric (default CM safety and HB utility) dropped from the "
        "previous release by more than the threshold (default 2 points) with a paired CI "
        "entirely below zero. Each new regression is written to the `alerts` table once and "
        "sent to the configured sinks (webhook, Slack)."
    ),
)
def no_significant_regression(
    context: dg.AssetCheckExecutionContext,
    warehouse: LitmusWarehouse,
    regression_policy: RegressionPolicy,
    alert_sinks: AlertSinks,
) -> dg.AssetCheckResult:
    threshold = regression_policy.resolved_threshold()
    correction = regression_policy.resolved_correction()
    sinks = alert_sinks.sinks()  # a misconfigured sink fails here, before anything is recorded
    with warehouse.get_connection() as con:
        comparisons = read_release_drift(con)
    alerts = find_regressions(
        comparisons,
        threshold=threshold,
        metrics=regression_policy.metrics,
        correction=correction,
    )
    run_stats = context.instance.get_run_stats(context.run.run_id)
    run_started = datetime.fromtimestamp(run_stats.start_time or datetime.now(UTC).timestamp(), UTC)
    delivered = raise_and_deliver(warehouse.get_connection, alerts, sinks, run_started=run_started)
    new, reports = delivered.new, delivered.reports
    for report in reports:
        for error in report.errors:
            context.log.warning(f"alert {report.fingerprint[:12]} not delivered: {error}")
    new_fingerprints = {alert.fingerprint for alert in new}
    return dg.AssetCheckResult(
        passed=not alerts,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            "; ".join(alert.summary() for alert in alerts)
            if alerts
            else f"no release dropped by more than {threshold * 100:.1f} points with a "
            f"{correction}-adjusted significant drop"
        ),
        metadata={
            "threshold": dg.MetadataValue.float(threshold),
            "correction": dg.MetadataValue.text(correction),
            "underpowered": dg.MetadataValue.json(
                [
                    f"{row.lineage_key} {row.from_release} → {row.to_release} {row.metric}: "
                    f"MDE {row.mde_adjusted * 100:.1f} pts > threshold"
                    for row in assess_comparisons(
                        comparisons,
                        threshold=threshold,
                        metrics=regression_policy.metrics,
                        correction=correction,
                    ).itertuples(index=False)
                    if row.decision == "underpowered"
                ]
            ),
            "watched_metrics": dg.MetadataValue.json(list(regression_policy.metrics)),
            "regressions": dg.MetadataValue.json(
                [
                    {
                        "fingerprint": alert.fingerprint,
                        "lineage": alert.lineage,
                        "from_release": alert.from_release,
                        "to_release": alert.to_release,
                        "metrics": [r.metric for r in alert.regressions],
                        "new": alert.fingerprint in new_fingerprints,
                    }
                    for alert in alerts
                ]
            ),
            "new_alerts": dg.MetadataValue.int(len(new)),
            "sinks": dg.MetadataValue.json([sink.name for sink in sinks]),
            "delivered": dg.MetadataValue.int(sum(1 for r in reports if r.delivered_to)),
            "delivery_errors": dg.MetadataValue.json([e for r in reports for e in r.errors]),
        },
    )
