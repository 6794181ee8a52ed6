"""The lake commands: ``litmus lake-import`` (docs/operations.md, "Moving a team to the lake")
and ``litmus lake-maintain`` (the same function as the ``maintain_lake`` job).

The handler imports what it uses, so building the parser (for every command) stays cheap.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from litmus.settings import LitmusPaths
from litmus_dagster.cli.common import say


def cmd_lake_import(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.lake_import import import_embedded_warehouse

    source = Path(args.source) if args.source else paths.duckdb_path
    report = import_embedded_warehouse(source, progress=say)
    total = sum(report.rows.values())
    say(
        f"copied {total:,} rows in {len(report.rows)} tables from {source} into the lake"
        + (f"; left for the next run's dbt build: {', '.join(report.not_copied)}"
           if report.not_copied else "")
    )
    return 0


def cmd_lake_maintain(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from datetime import timedelta

    from litmus.errors import LitmusError
    from litmus.lake_maintenance import maintain_warehouse

    if args.keep_days < 0:
        raise LitmusError(f"--keep-days {args.keep_days}: a number of days, 0 or more")
    report = maintain_warehouse(keep=timedelta(days=args.keep_days), progress=say)
    if report is None:
        raise LitmusError(
            "LITMUS_WAREHOUSE names no lake: the embedded warehouse needs no maintenance "
            "(docs/operations.md)"
        )
    say(report.summary())
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lake_import = commands.add_parser(
        "lake-import",
        help="copy the embedded warehouse into the new lake LITMUS_WAREHOUSE names",
    )
    lake_import.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="the embedded warehouse file (default: the home's warehouse.duckdb, or "
        "LITMUS_DUCKDB_PATH)",
    )
    lake_import.set_defaults(handler=cmd_lake_import)

    maintain = commands.add_parser(
        "lake-maintain",
        help="compact the lake and delete old snapshots and unreferenced files (waits for "
        "every writer; writers wait for it)",
    )
    maintain.add_argument(
        "--keep-days",
        type=float,
        default=7.0,
        help="keep snapshots, and files nothing refers to, this many days (default 7)",
    )
    maintain.set_defaults(handler=cmd_lake_maintain)
