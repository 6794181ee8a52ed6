"""The lake command: ``litmus lake-import`` (docs/operations.md, "Moving a team to the lake").

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
