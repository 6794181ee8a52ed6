"""``litmus quarantine``: every quarantined record and every landed file not ingested."""

from __future__ import annotations

import argparse
from pathlib import Path

from litmus.errors import LitmusError
from litmus.neutralize import for_terminal
from litmus.planning.nothing_scored import LAND_HINT
from litmus.settings import LitmusPaths

# What a record held back for a suite is waiting for, by whether a suite file waits to be loaded
# and whether its reason is an unknown suite (else its suite is loaded but lacks the version or
# instance it names).
HELD_BACK_NEXT_RUN = "held back: retried by the next `litmus run`, which loads the suite added"
HELD_BACK_FOR_SUITE = "held back: retried once its suite is loaded (`litmus suite-add FILE`)"
HELD_BACK_SUITE_LACKS = (
    "held back: its suite is loaded but lacks this version or instance; retried whenever a "
    "suite is loaded"
)


def _quarantined(
    paths: LitmusPaths, file: str | None
) -> tuple[list[tuple], list[str], list[str], bool]:
    """(quarantined rows of ``file`` or of every file, names of files with quarantined rows,
    landed files waiting to be ingested, whether a suite file waits to be loaded)."""
    from litmus.ingestion.suites import unstored_suite_files
    from litmus.planning.status import (
        quarantined_file_names,
        quarantined_records,
        waiting_landed_files,
    )
    from litmus.runs import suite_files
    from litmus.warehouse import connect_read_only

    with connect_read_only(paths.duckdb_path) as con:
        rows = quarantined_records(con, file)
        quarantined_files = quarantined_file_names(con)
        waiting = waiting_landed_files(con, paths)
        suites = suite_files(paths) if paths.suites.is_dir() else []
        suite_waits = bool(suites) and bool(unstored_suite_files(con, suites))
    return rows, quarantined_files, waiting, suite_waits


def _ingested_files(paths: LitmusPaths) -> int:
    from litmus.planning.status import raw_file_totals
    from litmus.warehouse import connect_read_only, warehouse_exists

    if not warehouse_exists(paths.duckdb_path):
        return 0
    with connect_read_only(paths.duckdb_path) as con:
        return raw_file_totals(con)[0]


def _held_back(code: str, suite_waits: bool) -> str:
    from litmus.ingestion.run_files import ReasonCode

    if suite_waits:
        return HELD_BACK_NEXT_RUN
    return HELD_BACK_FOR_SUITE if code == ReasonCode.UNKNOWN_SUITE else HELD_BACK_SUITE_LACKS


def cmd_quarantine(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Every quarantined record (file, line, field, reason) and every landed file not ingested."""
    from litmus.ingestion.run_files import CURABLE_REASON_CODES
    from litmus.runs import landed_files, not_ingested
    from litmus.warehouse import warehouse_exists

    rows: list[tuple] = []
    quarantined_files: list[str] = []
    suite_waits = False
    if warehouse_exists(paths.duckdb_path):  # else only the landing folder speaks
        rows, quarantined_files, waiting, suite_waits = _quarantined(paths, args.file)
    else:
        waiting = [
            path.relative_to(paths.landing).as_posix()
            for path in (landed_files(paths) if paths.landing.is_dir() else [])
        ]
    ignored = [
        (name, reason)
        for name, reason in not_ingested(paths)
        if args.file is None or Path(name).name == args.file or name == args.file
    ]
    if args.file is not None and not rows and not ignored:
        listed = ", ".join(for_terminal(name) for name in quarantined_files[:20])
        raise LitmusError(
            f"{for_terminal(args.file)}: no quarantined record and not a landed file"
            + (f" (files with quarantined records: {listed})" if listed else "")
        )
    if args.file is not None:
        waiting = [name for name in waiting if Path(name).name == args.file or name == args.file]
    if not rows and not ignored:
        if waiting:
            listed = ", ".join(for_terminal(name) for name in waiting[:5])
            more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
            print(
                f"nothing quarantined yet; {len(waiting)} landed file(s) wait to be ingested "
                f"by `litmus run`: {listed}{more}"
            )
        elif _ingested_files(paths):
            print("nothing quarantined; every landed file was ingested")
        else:
            print(f"nothing quarantined: no run file has landed here yet; {LAND_HINT}")
        return 0
    if rows:
        print(f"{'file':<36} {'line':>6}  {'field':<16} reason")
    for name, line, field, reason, code in rows:
        note = f"  [{_held_back(code, suite_waits)}]" if code in CURABLE_REASON_CODES else ""
        print(
            f"{for_terminal(name):<36} {line:>6}  {for_terminal(field):<16} "
            f"{for_terminal(reason)}{note}"
        )
    for name, reason in ignored:
        print(f"not ingested: {for_terminal(name)}: {reason}")
    if rows:
        for name in waiting:
            print(f"waiting: {for_terminal(name)}: landed, not ingested yet (`litmus run`)")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this family's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
    quarantine = commands.add_parser(
        "quarantine", help="list quarantined records (file, line, field, reason)"
    )
    quarantine.add_argument("file", nargs="?", help="only this landed file (name or hash)")
    quarantine.set_defaults(handler=cmd_quarantine, read_only=True)
