"""Command-line subcommands of this domain, registered into ``litmus``."""

from __future__ import annotations

import argparse
import sys

from litmus.settings import LitmusPaths


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this domain's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
    rescore = commands.add_parser(
        "rescore",
        help="re-label exactly the stale configurations (labeler, classifier or suite changed)",
    )
    rescore.add_argument("--all", action="store_true", help="re-label every configuration")
    rescore.add_argument(
        "--dry-run", action="store_true", help="only list the stale configurations and why"
    )
    rescore.set_defaults(handler=cmd_rescore, read_only=True)  # a dry run creates nothing

    alerts = commands.add_parser("alerts", help="release drift and the regression alerts raised")
    alerts.set_defaults(handler=cmd_alerts, read_only=True)


def cmd_rescore(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.planning.nothing_scored import nothing_labeled

    nothing = nothing_labeled(paths)
    if nothing:
        _say(f"nothing to re-score: {nothing}")
        return 0
    if args.dry_run:  # read-only, and without loading Dagster, dbt or the pipeline
        from litmus.planning.plan import describe_rescore, plan_from_warehouse
        from litmus.warehouse import connect_read_only

        with connect_read_only(paths.duckdb_path) as con:
            plan = plan_from_warehouse(con, everything=args.all)
        for line in describe_rescore(plan):
            _say(line)
        return 0
    from litmus_dagster.releases.rescore import rescore

    paths.ensure()

    result = rescore(paths, everything=args.all, dry_run=args.dry_run, progress=_say)
    if result.published:
        _say(f"re-labeled {len(result.rescored)} configuration(s) and published")
        print_release_summary(paths)
    return 0


def cmd_alerts(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.planning.nothing_scored import nothing_labeled

    nothing = nothing_labeled(paths)
    if nothing:
        print(f"no release drift or alert: {nothing}")
        return 0
    print_release_summary(paths, separated=False)
    return 0


def print_release_summary(paths: LitmusPaths, *, separated: bool = True) -> None:
    """Release drift per lineage, where the drift plots are, and the alerts table.

    ``litmus run`` / ``litmus demo`` call this after the leaderboard (``separated``: a blank
    line before it).
    """

    from litmus.neutralize import for_terminal, terminal_name
    from litmus.releases.alerts import read_alerts, regressions_text
    from litmus.releases.drift import drift_summary_lines, read_release_drift
    from litmus.releases.plugin_deltas import PLUGIN_DELTA_PLOT, read_plugin_deltas
    from litmus.warehouse import connect_read_only

    with connect_read_only(paths.duckdb_path) as con:
        drift = read_release_drift(con)
        alerts = read_alerts(con)
        plugins = read_plugin_deltas(con)
    print(
        ("\n" if separated else "")
        + "release drift (paired family bootstrap, 95% CI; * = CI excludes 0; MDE = smallest "
        "drop detectable with 80% power; decisions after the multiple-comparison correction):"
    )
    lines = drift_summary_lines(drift) if not drift.empty else []
    for line in lines or ["  no lineage has two published releases yet"]:
        print(f"  {for_terminal(line)}")
    for plot in sorted(paths.exports.glob("drift_*.png")):
        print(f"  drift plot: {plot}")
    if not plugins.empty:
        from litmus.releases.plugin_deltas import plugin_delta_lines

        print(
            "\nplug-in deltas (plug-in − baseline, paired family bootstrap, 95% CI; * = CI "
            "excludes 0; MDE at 80% power; decisions after the multiple-comparison correction):"
        )
        for line in plugin_delta_lines(plugins):
            print(f"  {for_terminal(line)}")
        plot = paths.exports / PLUGIN_DELTA_PLOT
        if plot.exists():
            print(f"  plug-in delta plot: {plot}")
    print(f"\nregression alerts ({len(alerts)}):")
    if alerts.empty:
        print("  none")
    for alert in alerts.itertuples(index=False):
        metrics = regressions_text(alert.regressions)
        sinks = alert.notified_sinks if isinstance(alert.notified_sinks, list | tuple) else []
        error = alert.delivery_error if isinstance(alert.delivery_error, str) else None
        if len(sinks):
            delivered = f"sent to {', '.join(sinks)}"
        elif error:
            delivered = f"not sent: {for_terminal(error)}"
        else:
            delivered = "not sent: no alert sink configured"
        print(
            f"  {alert.raised_at:%Y-%m-%d %H:%M} {terminal_name(alert.lineage)} "
            f"{terminal_name(alert.from_release)} → {terminal_name(alert.to_release)} on "
            f"{terminal_name(alert.suite)}@{terminal_name(alert.suite_version)}: {metrics} "
            f"(threshold {alert.threshold * 100:.1f} pts; {delivered})"
        )


def _say(message: str) -> None:
    from litmus.neutralize import for_terminal  # messages quote untrusted names and files

    print(for_terminal(message, keep_newlines=True), file=sys.stderr, flush=True)
