"""``litmus audit …``: export the audit queue, load verdicts back, show a verdict history."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from litmus.errors import LitmusError, require_file
from litmus.settings import LitmusPaths


def _say(message: str) -> None:
    from litmus.neutralize import for_terminal  # messages quote untrusted names and files

    print(for_terminal(message, keep_newlines=True), file=sys.stderr, flush=True)


def _partition_keys(paths: LitmusPaths, names: list[str]) -> list[str]:
    """Configuration keys or partition keys → partition keys; unknown names are an error."""
    if not names:
        return []
    from litmus.keys import configuration_keys
    from litmus.warehouse import connect

    with connect(paths.duckdb_path) as con:
        known = configuration_keys(con)
    by_name = {key: key for key in known} | {config: key for key, config in known.items()}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise LitmusError(f"unknown configuration(s): {', '.join(unknown)}")
    return sorted({by_name[name] for name in names})


def cmd_export(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.audit.workflow import export_audit_queue
    from litmus.planning.nothing_scored import nothing_labeled
    from litmus.warehouse import connect

    nothing = nothing_labeled(paths)
    if nothing:  # and nothing is created: no warehouse, no empty queue file
        _say(f"nothing to audit: {nothing}")
        return 0
    out = Path(args.out) if args.out else None
    file_format = args.format or (
        "jsonl" if out is not None and out.suffix.lower() in (".jsonl", ".ndjson") else "csv"
    )
    out = out or paths.audit / f"audit_queue.{file_format}"
    keys = _partition_keys(paths, args.configuration or [])
    with connect(paths.duckdb_path) as con:
        count = export_audit_queue(con, out, file_format=file_format, partition_keys=keys)
    _say(f"audit queue: {count} trajectory(ies) waiting for a verdict → {out}")
    if count:
        _say(
            "fill in verdict, auditor and reason (optionally timestamp, override) for the rows "
            f"you decide, then: litmus audit load {out}"
        )
    print(out)
    return 0


def cmd_load(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.audit.workflow import AuditFileError, load_verdicts
    from litmus.warehouse import connect

    source = require_file(args.file, "a verdict file (CSV or JSONL)")
    try:
        with connect(paths.duckdb_path) as con:
            report = load_verdicts(con, source, dry_run=args.dry_run)
    except AuditFileError as error:
        # every problem on its own line, in line order, so that each can be fixed in turn
        _say(
            f"litmus: error: {source.name}: rejected, nothing loaded "
            f"({len(error.problems)} problem(s)):"
        )
        for problem in error.problems:
            _say(f"  {problem}")
        return 1
    if args.dry_run:
        _say(f"{source.name} is valid: {report.summary().replace('loaded', 'would load', 1)}")
        return 0
    _say(report.summary())
    if report.loaded:
        # the warehouse holds the load; the next run reports it to the Dagster instance
        _say("run `litmus run` to apply the verdicts, re-check the gates and publish")
    return 0


def cmd_simulate(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Decide the spot-checks of an exported queue as a simulated auditor who knows the
    sample generator's truth (demo and tests only: real spot-checks need a person)."""
    import csv

    from litmus.audit.spotcheck import simulated_auditor_verdicts
    from litmus.audit.workflow import EXPORT_COLUMNS
    from litmus.sample import DEFAULT_N_FAMILIES, DEFAULT_SEED, true_labels

    source = Path(args.queue)
    if not source.is_file():
        raise LitmusError(f"{source}: no such queue file (export one with litmus audit export)")
    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    truth = true_labels(
        args.sample_seed or DEFAULT_SEED, args.sample_families or DEFAULT_N_FAMILIES
    )
    try:
        filled, decided = simulated_auditor_verdicts(rows, truth, error_rate=args.error_rate)
    except LookupError as problem:
        raise LitmusError(str(problem)) from None
    out = Path(args.out)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(EXPORT_COLUMNS))
        writer.writeheader()
        writer.writerows(filled)
    _say(
        f"simulated auditor decided {decided} spot-check(s) of {source.name} "
        f"(error rate {args.error_rate:g}) → {out}; load it with: litmus audit load {out}"
    )
    print(out)
    return 0


DEMO_AUDITOR_ERROR_RATE = 0.02


def demo_spot_check_round(paths: LitmusPaths) -> None:
    """The demo's spot-check round trip: export the queue with this publication's spot-checks,
    let a simulated auditor who knows the sample's truth decide them (erring on 2%), and load
    the verdicts; the caller publishes again, which measures the labeling error."""
    queue = paths.audit / "audit_queue.csv"
    decided = paths.audit / "spot_checks_decided.csv"
    _say("spot-checks: exporting the audit queue with this publication's sample")
    cmd_export(argparse.Namespace(out=str(queue), format="csv", configuration=None), paths)
    cmd_simulate(
        argparse.Namespace(
            queue=str(queue),
            out=str(decided),
            error_rate=DEMO_AUDITOR_ERROR_RATE,
            sample_seed=None,
            sample_families=None,
        ),
        paths,
    )
    cmd_load(argparse.Namespace(file=str(decided), dry_run=False), paths)


def cmd_history(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.audit.workflow import verdict_history
    from litmus.neutralize import for_terminal, terminal_name
    from litmus.warehouse import connect_read_only

    with connect_read_only(paths.duckdb_path) as con:
        history = verdict_history(con, args.trajectory_id)
    if not history:
        raise LitmusError(f"no verdict was ever loaded for trajectory {args.trajectory_id!r}")
    for entry in history:
        print(
            f"{'*' if entry['decides'] else ' '} {entry['loaded_at']:%Y-%m-%d %H:%M:%S}  "
            f"{entry['verdict']:<12} {entry['kind']:<10} "
            f"by {terminal_name(entry['auditor'])} (rules said {entry['rule_label']}/"
            f"{entry['rule_outcome']}) from {for_terminal(entry['source_name'])} line "
            f"{entry['source_line']}: {for_terminal(entry['reason'] or '')}"
        )
    print(
        "* decides: an override outranks an audit verdict, which outranks a spot-check; the "
        "latest loaded of the same kind counts"
    )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``litmus audit export|load|history`` (each sets ``handler=fn(args, paths) -> int``)."""
    audit = commands.add_parser("audit", help="export the audit queue, load verdicts back")
    actions = audit.add_subparsers(dest="audit_command", required=True)

    export = actions.add_parser(
        "export", help="write the audit queue (needs_audit rows, then spot-checks) for auditors"
    )
    export.add_argument("--format", choices=("csv", "jsonl"), help="default: from --out, else csv")
    export.add_argument("--out", help="output file (default: <home>/audit/audit_queue.<format>)")
    export.add_argument(
        "--configuration",
        action="append",
        help="only this configuration (configuration or partition key; repeatable)",
    )
    export.set_defaults(handler=cmd_export, read_only=True)  # creates only the queue file

    load = actions.add_parser(
        "load", help="validate a filled-in verdict file and load it (all or nothing)"
    )
    load.add_argument("file", help="CSV or JSONL: trajectory_id, verdict, auditor, reason, …")
    load.add_argument("--dry-run", action="store_true", help="validate only; load nothing")
    load.set_defaults(handler=cmd_load)

    simulate = actions.add_parser(
        "simulate",
        help="demo only: decide the exported spot-checks as an auditor who knows the sample's "
        "truth",
    )
    simulate.add_argument("queue", help="a CSV written by litmus audit export")
    simulate.add_argument("--out", required=True, help="where to write the filled-in CSV")
    simulate.add_argument(
        "--error-rate", type=float, default=0.0, help="share of checks decided wrongly"
    )
    simulate.add_argument("--sample-seed", type=int, help="seed the sample was generated with")
    simulate.add_argument("--sample-families", type=int, help="families of the sample")
    simulate.set_defaults(handler=cmd_simulate)

    history = actions.add_parser("history", help="every verdict loaded for one trajectory")
    history.add_argument("trajectory_id", help="the trajectory whose verdicts to list")
    history.set_defaults(handler=cmd_history, read_only=True)
