"""``litmus demo`` and ``litmus run``: the whole pipeline, in a demo folder or the state folder."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import time
from pathlib import Path

from litmus.errors import LitmusError
from litmus.neutralize import for_terminal
from litmus.settings import LitmusPaths
from litmus_dagster.cli.common import say
from litmus_dagster.cli.importing import ensure_suite_files_fit
from litmus_dagster.cli.status import print_leaderboard, print_status

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
            say(for_terminal(idle))
            return 0
        current = None if args.rescore_all else nothing_new(paths)
        if current is None:
            from litmus_dagster.pipeline import run_pipeline

            # a suite file that clashes with the stored suite stops the run before any work
            ensure_suite_files_fit(paths, suite_files(paths))
            with step_log.open("w", encoding="utf-8") as log, contextlib.redirect_stdout(log):
                try:
                    result = run_pipeline(paths, rescore_all=args.rescore_all, progress=say)
                except Exception:  # an interrupt says so itself, in one line
                    say(f"the steps' own output (dbt, Dagster) is in {step_log}")
                    raise
    if current is None and result.nothing_scored is not None:
        say(for_terminal(result.nothing_scored))
        return 0
    if current is not None:
        say(
            f"{current} (checked in {time.monotonic() - started:.1f}s; the last run's "
            f"step output in {step_log})"
        )
        print_status(paths)
        print_leaderboard(paths)
        return 0
    say(
        f"done in {time.monotonic() - started:.1f}s: {len(result.ingested_partitions)} "
        f"configuration(s), {len(result.scored_partitions)} labeled; step output in {step_log}"
    )
    print_status(paths)
    print_leaderboard(paths)
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
    say(f"LITMUS demo in {paths.home} (embedded DuckDB at {paths.duckdb_path})")
    manifest = generate_sample(paths.home / "sample")
    stage_sample(paths, manifest)
    say(f"sample: {manifest.n_trajectories} trajectories, {len(manifest.run_paths)} run files")
    args.rescore_all = False
    args.refusal_judge = None  # the demo's judge, if any, comes from $LITMUS_REFUSAL_JUDGE
    status = cmd_run(args, paths)
    if status == 0 and not args.no_spot_checks:
        from litmus_dagster.audit.cli import demo_spot_check_round

        demo_spot_check_round(paths)
        status = cmd_run(args, paths)
    return status


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this family's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
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
