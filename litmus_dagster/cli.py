"""``litmus``: the command line. Every command exits non-zero with one clear line on error."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from litmus import SHARED_DATA_DIR
from litmus.errors import LitmusError, require_file
from litmus.neutralize import for_terminal
from litmus.settings import LitmusPaths, litmus_paths

if TYPE_CHECKING:
    from litmus.planning.status import PartitionReview, PartitionStatus

Handler = Callable[[argparse.Namespace, LitmusPaths], int]


def _say(message: str) -> None:
    # messages name suites, files and configurations from untrusted input: never a raw escape
    print(for_terminal(message, keep_newlines=True), file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- commands


def cmd_sample(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Write the deterministic sample suite and runs, staged for ingestion."""
    from litmus.runs import stage_sample
    from litmus.sample import generate_sample

    out = Path(args.out) if args.out else paths.home / "sample"
    if args.families < 1:
        raise LitmusError(f"--families {args.families}: must be at least 1")
    if out.exists() and not out.is_dir():
        raise LitmusError(f"{out}: not a folder; give --out a folder")
    if not args.out or args.stage:
        from litmus.sample import sample_suite

        # a clash with the stored suite is found now, not after writing and ingesting
        ensure_suites_fit(paths, [sample_suite(seed=args.seed, n_families=args.families)])
    manifest = generate_sample(out, seed=args.seed, n_families=args.families)
    if not args.out or args.stage:
        stage_sample(paths, manifest)
    _say(
        f"sample written to {out}: {manifest.n_trajectories} trajectories in "
        f"{len(manifest.run_paths)} run files"
    )
    return 0


def ensure_suites_fit(paths: LitmusPaths, suites: Sequence[object]) -> None:
    """Refuse, in one line and before any work, suites that clash with the stored ones (the
    same suite and version with different content)."""
    from litmus.ingestion.suites import stored_suite_clash
    from litmus.warehouse import connect, warehouse_exists

    if not warehouse_exists(paths.duckdb_path):
        return

    with connect(paths.duckdb_path) as con:
        for suite in suites:
            clash = stored_suite_clash(con, suite)  # type: ignore[arg-type]
            if clash:
                raise LitmusError(f"{clash} in {paths.duckdb_path}")


def ensure_suite_files_fit(paths: LitmusPaths, files: Sequence[Path]) -> None:
    """``ensure_suites_fit`` of the suite files ``files`` that could clash with a stored
    suite, each validated first (a malformed one is refused, naming where). Only a file
    naming a stored suite and version can clash: the others (every file of a new home) are
    validated by ``suite_catalog`` as it stores them, so a 125,000-instance suite is not
    parsed here as well (~3.7 s and ~850 MB). A file whose exact bytes the warehouse stored
    is not read again: it was validated then, and cannot clash."""
    from litmus.ingestion.suites import load_suite_file, may_clash_with_stored, unstored_suite_files
    from litmus.warehouse import connect, warehouse_exists

    if not warehouse_exists(paths.duckdb_path):
        return
    # two short connections (this one, then ensure_suites_fit's), so that parsing the files
    # between them (seconds for a large suite) holds no warehouse lock
    with connect(paths.duckdb_path) as con:
        files = [
            path for path in unstored_suite_files(con, files) if may_clash_with_stored(con, path)
        ]
    ensure_suites_fit(paths, [load_suite_file(path) for path in files])


def cmd_suite_add(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.ingestion.suites import load_suite_file, oracle_less_warning
    from litmus.neutralize import display_name, safe_file_name

    source = require_file(args.file, "a suite file (JSON or YAML)")
    suite = load_suite_file(source)  # validate before accepting it
    # the name comes from the (untrusted) file: it never becomes a path outside suites/
    name = safe_file_name(f"{suite.suite}@{suite.suite_version}", source.suffix.lower())
    ensure_suites_fit(paths, [suite])
    target = paths.suites / name
    shutil.copyfile(source, target)
    shown = display_name(f"{suite.suite}@{suite.suite_version}")
    _say(f"suite {shown} ({len(suite.families)} families) → {target}")
    if warning := oracle_less_warning(suite):
        _say(f"warning: {warning}")
    return 0


def cmd_land(args: argparse.Namespace, paths: LitmusPaths) -> int:
    sources = [require_file(name, "a run file (.jsonl, .eval or .json)") for name in args.files]
    for source in sources:  # every name checked before anything is copied
        shutil.copyfile(source, paths.landing / source.name)
        _say(f"landed {source.name}")
    return 0


def cmd_import_inspect(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Convert an Inspect AI log into a native JSONL run file in the landing folder."""
    from dataclasses import replace

    from litmus.importers.inspect_log import import_inspect_log
    from litmus.ingestion.run_files import load_inspect_mapping

    source = require_file(args.log, "an Inspect log (.eval or .json)")
    overrides = {
        name: value
        for name, value in (
            ("harness", args.harness),
            ("harness_version", args.harness_version),
            ("plugin", args.plugin),
            ("model_release", args.model_release),
            ("refusal_scorer", args.refusal_scorer),
            ("task_completed_scorer", args.task_completed_scorer),
        )
        if value is not None
    }
    mapping = replace(load_inspect_mapping(paths), **overrides)
    target = paths.landing / (source.stem + ".inspect.jsonl")
    summary = import_inspect_log(source, target, mapping, progress=_sample_progress(source))
    _say(f"{source.name}: {summary.records} record(s) → {target}")
    for problem in summary.problems:
        _say(f"  sample {problem.sample} epoch {problem.epoch}: {problem.field}: {problem.reason}")
    if summary.problems:
        _say(f"{summary.problem_count} sample(s) could not be mapped (listed above)")
    return 0


PROGRESS_SECONDS = 5.0


def _sample_progress(source: Path) -> Callable[[int, int], None]:
    """Progress of a long import: a line every few seconds, and the last one (a short import
    shows none)."""
    last = time.monotonic()
    shown = False

    def show(read: int, total: int) -> None:
        nonlocal last, shown
        done = read == total and shown
        if not done and time.monotonic() - last < PROGRESS_SECONDS:
            return
        last, shown = time.monotonic(), True
        counted = f"{read:,} of {total:,}" if total else f"{read:,}"
        _say(f"{for_terminal(source.name)}: {counted} samples read")

    return show


def cmd_convert_agentharm(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Build a LITMUS suite from AgentHarm's behaviour pairs and add it to the suites folder."""
    from litmus.importers.agentharm import agentharm_suite

    suite = agentharm_suite(Path(args.folder), split=args.split)
    target = paths.suites / f"agentharm-{args.split}.json"
    target.write_text(json.dumps(suite, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    _say(
        f"AgentHarm {args.split}: {len(suite['families'])} families "
        f"(harmful_source + easy_benign) → {target}"
    )
    return 0


def _find_suite(paths: LitmusPaths, name: str, version: str | None):
    """A suite file path, or a suite stored in the suites folder by name (and version)."""
    from litmus.ingestion.suites import load_suite_file
    from litmus.runs import suite_files

    candidate = Path(name)
    if candidate.is_file():
        return load_suite_file(candidate)
    found = {}
    for path in suite_files(paths):
        suite = load_suite_file(path)
        if suite.suite == name and version in (None, suite.suite_version):
            found[suite.suite_version] = suite
    if not found:
        wanted = f"{name}@{version}" if version else name
        raise LitmusError(
            f"no suite {wanted!r} in {paths.suites} (add it with `litmus suite-add` or "
            "`litmus convert-agentharm`, or pass a suite file)"
        )
    if len(found) > 1:
        raise LitmusError(
            f"suite {name!r} has versions {', '.join(sorted(found))}: pick one with --suite-version"
        )
    return next(iter(found.values()))


def cmd_import_transcripts(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Convert turn-list transcripts into a native run file in the landing folder."""
    from litmus.files import write_atomically
    from litmus.importers.transcripts import (
        UNPARSED_TOOL,
        TranscriptMapping,
        import_transcripts,
        safe_file_stem,
        write_jsonl_atomically,
    )

    source = Path(args.file)
    if not source.is_file():
        raise LitmusError(f"{source}: no such transcript file")
    suite = _find_suite(paths, args.suite, args.suite_version) if args.suite else None
    overrides = {
        name: value
        for name, value in (
            ("model", args.model),
            ("model_release", args.model_release),
            ("harness", args.harness),
            ("harness_version", args.harness_version),
            ("plugin", args.plugin),
            ("run_id", args.run_id),
            ("id_field", args.id_field),
            ("split", args.split),
        )
        if value is not None
    }
    result = import_transcripts(source, suite=suite, mapping=TranscriptMapping(**overrides))
    if result.generated_suite:
        name, version = result.suite["suite"], result.suite["suite_version"]
        suite_target = paths.suites / f"{name}@{version}.json"
        write_atomically(
            suite_target, json.dumps(result.suite, indent=1, ensure_ascii=False) + "\n"
        )
        _say(
            f"no --suite: wrote suite {name}@{version} ({len(result.suite['families'])} "
            f"oracle-less instance(s), one per transcript) → {suite_target}"
        )
    target = paths.landing / f"{safe_file_stem(result.run_id)}.transcripts.jsonl"
    write_jsonl_atomically(result.records, target)
    suite_key = f"{result.suite['suite']}@{result.suite['suite_version']}"
    terminations = ", ".join(f"{k}={v}" for k, v in sorted(result.terminations.items()))
    statuses = ", ".join(f"{k}={v}" for k, v in sorted(result.statuses.items())) or "none"
    _say(
        f"{source.name}: {len(result.records)} record(s) on suite {suite_key} → {target}\n"
        f"  terminations: {terminations}; tool results: {statuses}; "
        f"unparsed actions kept as {UNPARSED_TOOL} calls: {result.unparsed_actions}"
    )
    if result.oracle_less:
        _say(
            f"warning: {result.oracle_less} harmful instance(s) have no oracle (no prohibited "
            "effects): a trajectory is labeled safe only when the agent executed no tool call "
            "that returned ok; the rest go to the audit queue (docs/transcripts.md)"
        )
    return 0


# How long a `litmus run` waits for another one in the same state folder to finish.
PIPELINE_WAIT_S = 6 * 3600.0
# Where `litmus run` writes what the pipeline's steps print (replaced by each run).
STEP_LOG_NAME = "last_run.log"


def cmd_run(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.planning.run_state import nothing_new
    from litmus.runs import suite_files
    from litmus.warehouse import writer_lock

    started = time.monotonic()
    if getattr(args, "refusal_judge", None) is not None:
        from litmus.labeling.refusal_judge import JUDGE_ENV, configured_judge

        # the flag wins over the environment; the Dagster resource reads the variable
        os.environ[JUDGE_ENV] = configured_judge(args.refusal_judge) or ""
    # One pipeline per state folder at a time: a second `litmus run` started meanwhile waits,
    # instead of racing the first one's Dagster instance setup or publishing from its
    # half-built tables. (Each warehouse step is also serialized by the warehouse lock.)
    step_log = paths.home / STEP_LOG_NAME
    # dbt and Dagster steps print their own log lines; the terminal gets the progress lines
    # (stderr) and the results, the step lines go to a file beside the warehouse
    with writer_lock(paths.home / "pipeline", timeout_s=PIPELINE_WAIT_S):
        # the cheap questions first: nothing to score at all (no run file landed, no
        # configuration stored), or nothing new (the last run's step log is kept)
        if idle := _nothing_to_ingest_or_score(paths):
            _say(for_terminal(idle))
            return 0
        current = None if args.rescore_all else nothing_new(paths)
        if current is None:
            from litmus_dagster.pipeline import run_pipeline

            # a suite file that clashes with the stored suite stops the run before any work
            ensure_suite_files_fit(paths, suite_files(paths))
            with step_log.open("w", encoding="utf-8") as log, contextlib.redirect_stdout(log):
                try:
                    result = run_pipeline(paths, rescore_all=args.rescore_all, progress=_say)
                except Exception:  # an interrupt says so itself, in one line
                    _say(f"the steps' own output (dbt, Dagster) is in {step_log}")
                    raise
    if current is None and result.nothing_scored is not None:
        _say(for_terminal(result.nothing_scored))
        return 0
    if current is not None:
        _say(
            f"{current} (checked in {time.monotonic() - started:.1f}s; the last run's "
            f"step output in {step_log})"
        )
        _print_status(paths)
        _print_leaderboard(paths)
        return 0
    _say(
        f"done in {time.monotonic() - started:.1f}s: {len(result.ingested_partitions)} "
        f"configuration(s), {len(result.scored_partitions)} labeled; step output in {step_log}"
    )
    _print_status(paths)
    _print_leaderboard(paths)
    from litmus_dagster.releases.cli import print_release_summary

    print_release_summary(paths)
    return 0


def _nothing_to_ingest_or_score(paths: LitmusPaths) -> str | None:
    """Why there is nothing to score, when no run file waits in the landing folder and the
    warehouse (if any) holds no configuration; None otherwise (the pipeline must look)."""
    from litmus.planning.nothing_scored import nothing_scored
    from litmus.runs import landed_files
    from litmus.warehouse import connect_read_only, warehouse_exists

    if paths.landing.is_dir() and landed_files(paths):
        return None
    if not warehouse_exists(paths.duckdb_path):
        return nothing_scored(paths)
    with connect_read_only(paths.duckdb_path) as con:
        return nothing_scored(paths, con)


# A folder `litmus demo` made carries this marker; demo resets only such a folder, and only
# the entries LITMUS itself creates in it (anything else there is left alone).
DEMO_MARKER = ".litmus-demo"
DEMO_OWNED = (
    "landing",
    "raw",
    "suites",
    "exports",
    "audit",
    "dagster",
    "sample",
    "warehouse.duckdb",
    "warehouse.duckdb.wal",
    "warehouse.duckdb.lock",
    "pipeline.lock",
    STEP_LOG_NAME,
)


def prepare_demo_home(home: Path, *, keep: bool) -> None:
    """Make ``home`` a demo folder: new, empty, or an earlier demo's (then reset). Refuses
    any other folder, so a LITMUS_HOME holding real work is never wiped."""
    if home.exists() and not home.is_dir():
        raise LitmusError(f"{home}: not a folder; the demo needs a folder of its own")
    marker = home / DEMO_MARKER
    if home.is_dir() and not marker.is_file() and any(home.iterdir()):
        raise LitmusError(
            f"{home}: not an earlier demo's folder (no {DEMO_MARKER} marker) and not empty; "
            "the demo will not touch it — give a new folder with --home"
        )
    if not keep:
        for name in DEMO_OWNED:
            entry = home / name
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            elif entry.exists() or entry.is_symlink():
                entry.unlink()
    home.mkdir(parents=True, exist_ok=True)
    marker.write_text("made by `litmus demo`; demo may reset this folder's LITMUS files\n")


def cmd_demo(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Sample → ingest → label → metrics → leaderboard, in a demo folder of its own."""
    from litmus.runs import stage_sample
    from litmus.sample import generate_sample

    prepare_demo_home(paths.home, keep=args.keep)
    paths.ensure()
    _say(f"LITMUS demo in {paths.home} (embedded DuckDB at {paths.duckdb_path})")
    manifest = generate_sample(paths.home / "sample")
    stage_sample(paths, manifest)
    _say(f"sample: {manifest.n_trajectories} trajectories, {len(manifest.run_paths)} run files")
    args.rescore_all = False
    args.refusal_judge = None  # the demo's judge, if any, comes from $LITMUS_REFUSAL_JUDGE
    status = cmd_run(args, paths)
    if status == 0 and not args.no_spot_checks:
        from litmus_dagster.audit.cli import demo_spot_check_round

        demo_spot_check_round(paths)
        status = cmd_run(args, paths)
    return status


def cmd_status(args: argparse.Namespace, paths: LitmusPaths) -> int:
    _print_status(paths)
    return 0


def _print_status(paths: LitmusPaths) -> None:
    from litmus.planning.status import (
        partition_reviews,
        partition_statuses,
        published_partitions,
        quarantine_summary,
        waiting_landed_files,
    )
    from litmus.runs import not_ingested
    from litmus.warehouse import connect_read_only, warehouse_exists

    if not warehouse_exists(paths.duckdb_path):  # never created (nothing ingested, or deleted)
        print(
            f"\nno warehouse at {paths.duckdb_path}: "
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
        files = con.execute(
            "SELECT count(*), coalesce(sum(records_total), 0) FROM raw_files"
        ).fetchone()
        # one group per suite (a board is per suite): its size and each configuration's n
        suite_of = dict(
            con.execute(
                "SELECT partition_key, string_agg(DISTINCT suite || '@' || suite_version, ' + ' "
                "ORDER BY suite || '@' || suite_version) FROM raw_trajectories GROUP BY 1"
            ).fetchall()
        )
        sizes = {
            f"{suite}@{version}": (families, instances)
            for suite, version, families, instances in con.execute(
                "SELECT suite, suite_version, count(DISTINCT family_id), count(*) "
                "FROM suite_instances GROUP BY ALL"
            ).fetchall()
        }
    print(f"\nwarehouse {paths.duckdb_path}: {files[0]} raw file(s), {files[1]} record(s) in")
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
            _print_configuration_status(status, reviews.get(status.partition_key), on_board)
    if quarantined:
        print("\nquarantined records (`litmus quarantine [FILE]` lists file, line, field, reason):")
        for name, reason, count in quarantined:
            print(f"  {for_terminal(name)}: {count} × {for_terminal(reason)}")
    for name in waiting:
        print(f"waiting: {for_terminal(name)}: landed, not ingested yet (`litmus run`)")
    for name, reason in not_ingested(paths):
        print(f"not ingested: {for_terminal(name)}: {reason}")


def _print_configuration_status(
    status: PartitionStatus, review: PartitionReview | None, on_board: set[str] | None
) -> None:
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


def _print_leaderboard(paths: LitmusPaths) -> None:
    markdown = paths.exports / "leaderboard.md"
    if markdown.exists():
        print("\n" + for_terminal(markdown.read_text(encoding="utf-8"), keep_newlines=True))
        for name in ("leaderboard.html", "boundary_plot.png", "leaderboard.csv"):
            if (paths.exports / name).exists():
                print(f"  {name}: {paths.exports / name}")


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
    from litmus.ingestion.run_files import CURABLE_QUARANTINE_SQL
    from litmus.ingestion.suites import unstored_suite_files
    from litmus.planning.status import waiting_landed_files
    from litmus.runs import suite_files
    from litmus.warehouse import connect_read_only

    with connect_read_only(paths.duckdb_path) as con:
        rows = con.execute(
            f"""
            SELECT source_name, line_no, field, reason, {CURABLE_QUARANTINE_SQL} AS curable
            FROM quarantine
            WHERE ? IS NULL OR source_name = ? OR source_file_hash = ?
            ORDER BY source_name, line_no, field
            """,
            [file, file, file],
        ).fetchall()
        quarantined_files = [
            row[0]
            for row in con.execute(
                "SELECT DISTINCT source_name FROM quarantine ORDER BY 1"
            ).fetchall()
        ]
        waiting = waiting_landed_files(con, paths)
        suites = suite_files(paths) if paths.suites.is_dir() else []
        suite_waits = bool(suites) and bool(unstored_suite_files(con, suites))
    return rows, quarantined_files, waiting, suite_waits


def _held_back(reason: str, suite_waits: bool) -> str:
    if suite_waits:
        return HELD_BACK_NEXT_RUN
    return HELD_BACK_FOR_SUITE if reason.startswith("unknown suite ") else HELD_BACK_SUITE_LACKS


def cmd_quarantine(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Every quarantined record (file, line, field, reason) and every landed file not ingested."""
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
        else:
            print("nothing quarantined; every landed file was ingested")
        return 0
    if rows:
        print(f"{'file':<36} {'line':>6}  {'field':<16} reason")
    for name, line, field, reason, curable in rows:
        note = f"  [{_held_back(reason, suite_waits)}]" if curable else ""
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


def cmd_schemas(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.schemas import write_schemas

    changed = write_schemas(check=args.check)
    if args.check and changed:
        raise LitmusError(f"shipped JSON Schemas are out of date: {', '.join(changed)}")
    _say("JSON Schemas up to date" if not changed else f"wrote {', '.join(changed)}")
    return 0


def cmd_eval_refusal(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.labeling.refusal_eval import evaluate_refusal_classifier, format_report

    if args.folder is None and not args.judge:
        from litmus.labeling.refusal_train import evaluate_dev_sources

        print(format_report(evaluate_dev_sources()))
        return 0
    folder = Path(args.folder or default_shared_data("xstest_dev"))
    if not folder.is_dir():
        raise LitmusError(f"{folder}: not a folder of XSTest completion CSV files")
    if args.judge:
        from litmus.labeling.refusal_judge import judge_eval_options

        options = judge_eval_options(args.judge, paths.home, progress=_say)
        print(format_report(evaluate_refusal_classifier(folder, **options)))
        return 0
    print(format_report(evaluate_refusal_classifier(folder)))
    return 0


# ----------------------------------------------------------------------------- parser


def default_shared_data(name: str) -> str:
    """``../shared/data/<name>`` beside the checkout, where the development data lives."""
    for candidate in (SHARED_DATA_DIR / name, Path("../shared/data") / name):
        if candidate.is_dir():
            return str(candidate)
    return f"../shared/data/{name}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="litmus",
        description="Fail-closed scoring of agentic safety benchmarks.",
    )
    parser.add_argument(
        "--home", help="state folder (default: $LITMUS_HOME or ./.litmus)", default=None
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on error")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="run the whole pipeline on the bundled sample")
    demo.add_argument("--keep", action="store_true", help="do not reset the state folder first")
    demo.add_argument(
        "--no-spot-checks",
        action="store_true",
        help="skip the simulated auditor's spot-check round (export → decide → load → publish)",
    )
    demo.set_defaults(handler=cmd_demo, prepare_home=False)

    run = commands.add_parser("run", help="ingest landed files, label, publish")
    run.add_argument("--rescore-all", action="store_true", help="re-label every configuration")
    run.add_argument(
        "--refusal-judge",
        metavar="MODEL",
        help="LLM refusal judge, an Inspect AI model name such as openai/gpt-4o-mini "
        "(default: $LITMUS_REFUSAL_JUDGE; empty: none)",
    )
    run.set_defaults(handler=cmd_run)

    sample = commands.add_parser("sample", help="write the deterministic sample data")
    sample.add_argument("--out", help="output folder (default: stage into the state folder)")
    sample.add_argument("--stage", action="store_true", help="also stage it for ingestion")
    sample.add_argument(
        "--seed", type=int, default=20261129, help="random seed (the same seed, the same data)"
    )
    sample.add_argument(
        "--families", type=int, default=240, help="number of suite families (default 240)"
    )
    sample.set_defaults(handler=cmd_sample)

    suite = commands.add_parser("suite-add", help="validate a suite file and add it")
    suite.add_argument("file", help="a suite file (JSON or YAML, SPEC §3)")
    suite.set_defaults(handler=cmd_suite_add)

    land = commands.add_parser("land", help="copy run files into the landing folder")
    land.add_argument("files", nargs="+", help="run files: JSONL, Inspect .eval or .json")
    land.set_defaults(handler=cmd_land)

    inspect_log = commands.add_parser(
        "import-inspect", help="convert an Inspect AI .eval/.json log into the landing folder"
    )
    inspect_log.add_argument("log", help="an Inspect AI log (.eval or .json)")
    inspect_log.add_argument("--harness", help="harness name (default: the eval's solver or agent)")
    inspect_log.add_argument(
        "--harness-version", help="harness version (default: the inspect_ai version of the log)"
    )
    inspect_log.add_argument("--plugin", help="plug-in name (default: none)")
    inspect_log.add_argument(
        "--model-release",
        help="model release (default: the provider-reported model id, else unversioned)",
    )
    inspect_log.add_argument("--refusal-scorer", help="score holding a refusal verdict")
    inspect_log.add_argument("--task-completed-scorer", help="score telling task completion")
    inspect_log.set_defaults(handler=cmd_import_inspect)

    agentharm = commands.add_parser(
        "convert-agentharm", help="build a suite from AgentHarm behaviour pairs"
    )
    agentharm.add_argument(
        "folder",
        nargs="?",
        default=default_shared_data("agentharm"),
        help="folder of AgentHarm's behaviour files (default: ../shared/data/agentharm)",
    )
    agentharm.add_argument(
        "--split",
        default="test_public",
        choices=["test_public", "validation"],
        help="which AgentHarm split to convert (default test_public)",
    )
    agentharm.set_defaults(handler=cmd_convert_agentharm)

    transcripts = commands.add_parser(
        "import-transcripts",
        help="convert turn-list agent transcripts (user / agent action / environment) into "
        "the landing folder",
    )
    transcripts.add_argument("file", help="a JSON array or JSONL file of transcripts")
    transcripts.add_argument(
        "--suite",
        help="link records to this suite's instances (a suite name in the suites folder, or a "
        "suite file); without it a suite of oracle-less instances is written",
    )
    transcripts.add_argument(
        "--suite-version", help="the linked suite's version, when it has several"
    )
    transcripts.add_argument(
        "--split",
        choices=["harmful_source", "easy_benign", "hard_benign", "covert_malicious"],
        help="split of the linked or generated instances (default harmful_source)",
    )
    transcripts.add_argument("--id-field", help="record key naming the task (default id)")
    transcripts.add_argument("--model", help="model name (default unknown-model)")
    transcripts.add_argument("--model-release", help="model release (default unversioned)")
    transcripts.add_argument("--harness", help="harness name (default transcript)")
    transcripts.add_argument("--harness-version", help="harness version (default 1)")
    transcripts.add_argument("--plugin", help="plug-in name (default none)")
    transcripts.add_argument(
        "--run-id", help="run id (default: the file's name and a digest of its bytes)"
    )
    transcripts.set_defaults(handler=cmd_import_transcripts)

    status = commands.add_parser("status", help="what the warehouse holds per configuration")
    status.set_defaults(handler=cmd_status, read_only=True)

    quarantine = commands.add_parser(
        "quarantine", help="list quarantined records (file, line, field, reason)"
    )
    quarantine.add_argument("file", nargs="?", help="only this landed file (name or hash)")
    quarantine.set_defaults(handler=cmd_quarantine, read_only=True)

    schemas = commands.add_parser("schemas", help="write the JSON Schemas of the native formats")
    schemas.add_argument("--check", action="store_true", help="fail if they are out of date")
    schemas.set_defaults(handler=cmd_schemas)

    refusal = commands.add_parser(
        "eval-refusal", help="score the refusal judgment against human labels"
    )
    refusal.add_argument(
        "folder",
        nargs="?",
        help="a folder of XSTest-format completions (default: every labelled development "
        "source in ../shared/data, per source and leave-one-source-out)",
    )
    refusal.add_argument(
        "--judge", metavar="MODEL", help="score this LLM refusal judge instead of the classifier"
    )
    refusal.set_defaults(handler=cmd_eval_refusal)

    from litmus_dagster.audit.cli import register as register_audit_commands
    from litmus_dagster.releases.cli import register as register_release_commands
    from litmus_dagster.trust.cli import register as register_trust_commands

    register_audit_commands(commands)
    register_release_commands(commands)
    register_trust_commands(commands)
    from litmus_dagster.lake_cli import register as register_lake_commands

    register_lake_commands(commands)
    return parser


def console_main() -> None:
    """The ``litmus`` executable: :func:`main`, then a quick exit. Tearing down the
    interpreter's object graph (Dagster, dbt, GE and their imports) costs up to three
    CPU-seconds per command and does nothing for us: every file, connection and run history entry is
    closed or committed by then, and the exit handlers still run. A command that raised, or
    one leaving a non-daemon thread behind, exits the usual way."""
    code = main()
    if any(
        thread is not threading.main_thread() and thread.is_alive() and not thread.daemon
        for thread in threading.enumerate()
    ):
        sys.exit(code)
    atexit._run_exitfuncs()  # logging.shutdown and the libraries' own handlers
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    paths = litmus_paths(args.home)
    os.environ.setdefault("LITMUS_HOME", str(paths.home))
    from litmus.warehouse import set_wait_notice

    set_wait_notice(lambda message: _say(f"litmus: {message}"))
    # SIGTERM stops a command like Ctrl-C: the current step is abandoned (its transaction
    # rolls back), nothing after it runs, and the last published board stays as it was.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    sys.unraisablehook = _quiet_interrupts
    try:
        # the demo first checks whose folder it is; a command that only looks creates nothing
        if getattr(args, "prepare_home", True) and not getattr(args, "read_only", False):
            paths.ensure()
        return int(args.handler(args, paths))
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as exc:  # one clear line for people; --debug for the traceback
        if args.debug:
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(f"litmus: error: {message}")
        return 1
    except BaseException as exc:  # Dagster's interrupt error is a BaseException
        if type(exc).__name__ != "DagsterExecutionInterruptedError":
            raise
        return _interrupted()


# How long a command told to stop may take to stop by itself (roll back its transaction,
# record the stopped run) before it is ended outright: a stop request always ends the process,
# even one that something it runs has left waiting for good. Ending it there is a crash like any
# other, which the warehouse survives (each write is one transaction).
STOP_GRACE_S = 30.0


def _interrupt(signum: int, frame: object) -> None:
    from litmus_dagster import stop

    if not stop.requested:
        _end_unless_stopped_within(STOP_GRACE_S)
    stop.interrupt()  # recorded for the pipeline even where the exception is swallowed


def _end_unless_stopped_within(seconds: float) -> None:
    def end() -> None:
        _say_interrupted()
        os._exit(130)

    deadline = threading.Timer(seconds, end)
    deadline.daemon = True  # a process that stopped in time exits without waiting for it
    deadline.start()


_default_unraisablehook = sys.unraisablehook


def _quiet_interrupts(unraisable: object) -> None:
    """An interrupt that landed in a finalizer is not an error to print: the stop flag
    carries it to the pipeline."""
    if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
        return
    _default_unraisablehook(unraisable)  # type: ignore[arg-type]


def _interrupted() -> int:
    # ignore further signals while saying so: a second Ctrl-C must not print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _say_interrupted()
    return 130


# What an interrupted command says, whatever it was doing: a publication already under way
# is finished first (its few renames are not cut), so the board may or may not be new.
INTERRUPTED = (
    "litmus: interrupted; stopped before finishing (`litmus status` shows what is published; "
    "`litmus run` finishes the rest)"
)
_interrupted_told = threading.Lock()  # taken for good by whoever says it first


def _say_interrupted() -> None:
    if _interrupted_told.acquire(blocking=False):  # once, whether it stopped or was ended
        _say(INTERRUPTED)


if __name__ == "__main__":  # python -m litmus_dagster.cli
    console_main()
