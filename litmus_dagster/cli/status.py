"""``litmus status``: what the warehouse holds per configuration, and the board."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from litmus.neutralize import for_terminal
from litmus.settings import LitmusPaths

if TYPE_CHECKING:
    from litmus.planning.status import PartitionReview, PartitionStatus


def cmd_status(args: argparse.Namespace, paths: LitmusPaths) -> int:
    print_status(paths)
    return 0


def print_status(paths: LitmusPaths) -> None:
    from litmus.planning.status import (
        partition_reviews,
        partition_statuses,
        partition_suites,
        published_partitions,
        quarantine_summary,
        raw_file_totals,
        suite_sizes,
        waiting_landed_files,
    )
    from litmus.runs import not_ingested
    from litmus.warehouse import connect_read_only, warehouse_exists

    if not warehouse_exists(paths.duckdb_path):  # never created (nothing ingested, or deleted)
        print(
            f"no warehouse at {paths.duckdb_path}: "
            "nothing has been ingested here (`litmus run` creates it)"
        )
        for name, reason in not_ingested(paths):
            print(f"not ingested: {for_terminal(name)}: {reason}")
        return
    on_board = published_partitions(paths.exports)
    with connect_read_only(paths.duckdb_path) as con:
        statuses = partition_statuses(con)
        reviews = partition_reviews(con)
        quarantined = quarantine_summary(con)
        waiting = waiting_landed_files(con, paths)
        files = raw_file_totals(con)
        # one group per suite (a board is per suite): its size and each configuration's n
        suite_of = partition_suites(con)
        sizes = suite_sizes(con)
    print(f"warehouse {paths.duckdb_path}: {files[0]} raw file(s), {files[1]} record(s) in")
    by_suite: dict[str, list] = {}
    for status in statuses:
        by_suite.setdefault(suite_of.get(status.partition_key, "suite unknown"), []).append(status)
    for suite_key in sorted(by_suite):
        size = sizes.get(suite_key)
        described = f"{size[0]} families, {size[1]} instances" if size else "size unknown"
        print(f"\nsuite {for_terminal(suite_key)} ({described})")
        print(
            f"  {'configuration':<52} {'rows':>6} {'labeled':>7} {'audited':>7} {'pending':>7}  "
            "publication"
        )
        for status in by_suite[suite_key]:
            print_configuration_status(status, reviews.get(status.partition_key), on_board)
    if quarantined:
        print("\nquarantined records (`litmus quarantine [FILE]` lists file, line, field, reason):")
        for name, reason, count in quarantined:
            print(f"  {for_terminal(name)}: {count} × {for_terminal(reason)}")
    for name in waiting:
        print(f"waiting: {for_terminal(name)}: landed, not ingested yet (`litmus run`)")
    for name, reason in not_ingested(paths):
        print(f"not ingested: {for_terminal(name)}: {reason}")


def print_configuration_status(
    status: PartitionStatus, review: PartitionReview | None, on_board: set[str] | None
) -> None:
    """One configuration's lines of ``litmus status``: its counts and publication, then its
    outcomes and the reasons rows wait for a person."""
    from litmus.neutralize import terminal_name
    from litmus.planning.status import publication_state

    if review is None:
        audited, pending, publication = "-", "-", "withheld: not labeled"
    else:
        audited, pending = str(review.audited), str(review.pending_audit)
        publication = publication_state(review, on_board)
    flag = "  (stale: re-score)" if status.stale else ""
    print(
        f"  {terminal_name(status.config_key):<52} {status.trajectories:>6} {status.labeled:>7} "
        f"{audited:>7} {pending:>7}  {publication}{flag}"
    )
    # the outcomes a leaderboard counts: verdicts applied once the audited rows are current
    if review is not None and review.audit_current and review.outcomes:
        outcomes, source = review.outcomes, "after audit"
    else:
        outcomes, source = status.outcomes, "rules only"
    if outcomes:
        listed = ", ".join(f"{k}={v}" for k, v in sorted(outcomes.items()))
        print(f"      outcomes ({source}): {listed}")
    # why the rows still waiting for a person need one (SPEC §5 needs_audit reasons)
    reasons = (
        review.pending_reasons
        if review is not None and review.audit_current
        else status.audit_reasons
    )
    if reasons:
        listed = ", ".join(f"{k}={v}" for k, v in reasons.items())
        print(f"      needs_audit reasons: {listed}")


def print_leaderboard(paths: LitmusPaths) -> None:
    markdown = paths.exports / "leaderboard.md"
    if markdown.exists():
        print("\n" + for_terminal(markdown.read_text(encoding="utf-8"), keep_newlines=True))
        for name in ("leaderboard.html", "boundary_plot.png", "leaderboard.csv"):
            if (paths.exports / name).exists():
                print(f"  {name}: {paths.exports / name}")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this family's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
    status = commands.add_parser("status", help="what the warehouse holds per configuration")
    status.set_defaults(handler=cmd_status, read_only=True)
