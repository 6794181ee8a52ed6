"""``litmus``: the command line. Every command exits non-zero with one clear line on error."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from litmus.errors import LitmusError
from litmus.settings import LitmusPaths, litmus_paths

Handler = Callable[[argparse.Namespace, LitmusPaths], int]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- commands


def cmd_sample(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Write the deterministic sample suite and runs, staged for ingestion."""
    from litmus.sample import generate_sample
    from litmus_dagster.pipeline import stage_sample

    out = Path(args.out) if args.out else paths.home / "sample"
    manifest = generate_sample(out, seed=args.seed, n_families=args.families)
    if not args.out or args.stage:
        stage_sample(paths, manifest)
    _say(
        f"sample written to {out}: {manifest.n_trajectories} trajectories in "
        f"{len(manifest.run_paths)} run files"
    )
    return 0


def cmd_suite_add(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.suite import load_suite_file

    source = Path(args.file)
    suite = load_suite_file(source)  # validate before accepting it
    target = paths.suites / f"{suite.suite}@{suite.suite_version}{source.suffix.lower()}"
    shutil.copyfile(source, target)
    _say(f"suite {suite.suite}@{suite.suite_version} ({len(suite.families)} families) → {target}")
    return 0


def cmd_land(args: argparse.Namespace, paths: LitmusPaths) -> int:
    for name in args.files:
        source = Path(name)
        if not source.is_file():
            raise LitmusError(f"{source}: no such file")
        shutil.copyfile(source, paths.landing / source.name)
        _say(f"landed {source.name}")
    return 0


def cmd_import_inspect(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Convert an Inspect AI log into a native JSONL run file in the landing folder."""
    from dataclasses import replace

    from litmus.importers.inspect_log import import_inspect_log
    from litmus.ingest import load_inspect_mapping

    source = Path(args.log)
    if not source.is_file():
        raise LitmusError(f"{source}: no such Inspect log")
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
    summary = import_inspect_log(source, target, mapping)
    _say(f"{source.name}: {summary.records} record(s) → {target}")
    for problem in summary.problems:
        _say(f"  sample {problem.sample} epoch {problem.epoch}: {problem.field}: {problem.reason}")
    if summary.problems:
        _say(f"{summary.problem_count} sample(s) could not be mapped (listed above)")
    return 0


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


# How long a `litmus run` waits for another one in the same state folder to finish.
PIPELINE_WAIT_S = 6 * 3600.0
# Where `litmus run` writes what the pipeline's steps print (replaced by each run).
STEP_LOG_NAME = "last_run.log"


def cmd_run(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.warehouse import writer_lock
    from litmus_dagster.pipeline import run_pipeline

    started = time.monotonic()
    if args.refusal_judge is not None:
        from litmus.refusal_judge import JUDGE_ENV, configured_judge

        # the flag wins over the environment; the Dagster resource reads the variable
        os.environ[JUDGE_ENV] = configured_judge(args.refusal_judge) or ""
    # One pipeline per state folder at a time: a second `litmus run` started meanwhile waits,
    # instead of racing the first one's Dagster instance setup or publishing from its
    # half-built tables. (Each warehouse step is also serialized by the warehouse lock.)
    step_log = paths.home / STEP_LOG_NAME
    # dbt and Dagster steps print their own log lines; the terminal gets the progress lines
    # (stderr) and the results, the step lines go to a file beside the warehouse
    with (
        writer_lock(paths.home / "pipeline", timeout_s=PIPELINE_WAIT_S),
        step_log.open("w", encoding="utf-8") as log,
        contextlib.redirect_stdout(log),
    ):
        try:
            result = run_pipeline(paths, rescore_all=args.rescore_all, progress=_say)
        except BaseException:
            _say(f"the steps' own output (dbt, Dagster) is in {step_log}")
            raise
    _say(
        f"done in {time.monotonic() - started:.1f}s: {len(result.ingested_partitions)} "
        f"configuration(s), {len(result.scored_partitions)} labeled; step output in {step_log}"
    )
    _print_status(paths)
    _print_leaderboard(paths)
    from litmus_dagster.releases.cli import print_release_summary

    print_release_summary(paths)
    return 0


def cmd_demo(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Sample → ingest → label → metrics → leaderboard, in a fresh project-local home."""
    from litmus.sample import generate_sample
    from litmus_dagster.pipeline import stage_sample

    if paths.home.exists() and not args.keep:
        shutil.rmtree(paths.home)
    paths.ensure()
    _say(f"LITMUS demo in {paths.home} (embedded DuckDB at {paths.duckdb_path})")
    manifest = generate_sample(paths.home / "sample")
    stage_sample(paths, manifest)
    _say(f"sample: {manifest.n_trajectories} trajectories, {len(manifest.run_paths)} run files")
    args.rescore_all = False
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
    from litmus.status import partition_reviews, partition_statuses, quarantine_summary
    from litmus.warehouse import connect

    with connect(paths.duckdb_path) as con:
        statuses = partition_statuses(con)
        reviews = partition_reviews(con)
        quarantined = quarantine_summary(con)
        files = con.execute(
            "SELECT count(*), coalesce(sum(records_total), 0) FROM raw_files"
        ).fetchone()
    print(f"\nwarehouse {paths.duckdb_path}: {files[0]} raw file(s), {files[1]} record(s) in")
    print(
        f"{'configuration':<52} {'rows':>6} {'labeled':>7} {'audited':>7} {'pending':>7}  "
        "publication"
    )
    for status in statuses:
        review = reviews.get(status.partition_key)
        if review is None:
            audited, pending, publication = "-", "-", "withheld: not labeled"
        else:
            audited, pending = str(review.audited), str(review.pending_audit)
            publication = review.publication
        flag = "  (stale: re-score)" if status.stale else ""
        print(
            f"{status.config_key:<52} {status.trajectories:>6} {status.labeled:>7} "
            f"{audited:>7} {pending:>7}  {publication}{flag}"
        )
        # the outcomes a leaderboard counts: verdicts applied once the audited rows are current
        if review is not None and review.audit_current and review.outcomes:
            outcomes, source = review.outcomes, "after audit"
        else:
            outcomes, source = status.outcomes, "rules only"
        if outcomes:
            listed = ", ".join(f"{k}={v}" for k, v in sorted(outcomes.items()))
            print(f"    outcomes ({source}): {listed}")
    if quarantined:
        print("\nquarantined records:")
        for name, reason, count in quarantined:
            print(f"  {name}: {count} × {reason}")


def _print_leaderboard(paths: LitmusPaths) -> None:
    markdown = paths.exports / "leaderboard.md"
    if markdown.exists():
        print("\n" + markdown.read_text())
        for name in ("leaderboard.html", "boundary_plot.png", "leaderboard.csv"):
            if (paths.exports / name).exists():
                print(f"  {name}: {paths.exports / name}")


def cmd_schemas(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.schemas import write_schemas

    changed = write_schemas(check=args.check)
    if args.check and changed:
        raise LitmusError(f"shipped JSON Schemas are out of date: {', '.join(changed)}")
    _say("JSON Schemas up to date" if not changed else f"wrote {', '.join(changed)}")
    return 0


def cmd_eval_refusal(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.refusal_eval import evaluate_refusal_classifier, format_report

    folder = Path(args.folder)
    if not folder.is_dir():
        raise LitmusError(f"{folder}: not a folder of XSTest completion CSV files")
    if args.judge:
        from litmus.refusal_judge import judge_eval_options

        options = judge_eval_options(args.judge, paths.home, progress=_say)
        print(format_report(evaluate_refusal_classifier(folder, **options)))
        return 0
    print(format_report(evaluate_refusal_classifier(folder)))
    return 0


# ----------------------------------------------------------------------------- parser


def default_shared_data(name: str) -> str:
    """``../shared/data/<name>`` beside the checkout, where the development data lives."""
    here = Path(__file__).resolve().parents[2]
    for candidate in (here / "shared" / "data" / name, Path("../shared/data") / name):
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
    demo.set_defaults(handler=cmd_demo)

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
    sample.add_argument("--seed", type=int, default=20261129)
    sample.add_argument("--families", type=int, default=240)
    sample.set_defaults(handler=cmd_sample)

    suite = commands.add_parser("suite-add", help="validate a suite file and add it")
    suite.add_argument("file")
    suite.set_defaults(handler=cmd_suite_add)

    land = commands.add_parser("land", help="copy run files into the landing folder")
    land.add_argument("files", nargs="+")
    land.set_defaults(handler=cmd_land)

    inspect_log = commands.add_parser(
        "import-inspect", help="convert an Inspect AI .eval/.json log into the landing folder"
    )
    inspect_log.add_argument("log")
    inspect_log.add_argument("--harness")
    inspect_log.add_argument("--harness-version")
    inspect_log.add_argument("--plugin")
    inspect_log.add_argument("--model-release")
    inspect_log.add_argument("--refusal-scorer", help="score holding a refusal verdict")
    inspect_log.add_argument("--task-completed-scorer", help="score telling task completion")
    inspect_log.set_defaults(handler=cmd_import_inspect)

    agentharm = commands.add_parser(
        "convert-agentharm", help="build a suite from AgentHarm behaviour pairs"
    )
    agentharm.add_argument("folder", nargs="?", default=default_shared_data("agentharm"))
    agentharm.add_argument("--split", default="test_public", choices=["test_public", "validation"])
    agentharm.set_defaults(handler=cmd_convert_agentharm)

    status = commands.add_parser("status", help="what the warehouse holds per configuration")
    status.set_defaults(handler=cmd_status)

    schemas = commands.add_parser("schemas", help="write the JSON Schemas of the native formats")
    schemas.add_argument("--check", action="store_true", help="fail if they are out of date")
    schemas.set_defaults(handler=cmd_schemas)

    refusal = commands.add_parser(
        "eval-refusal", help="score the refusal classifier against XSTest human labels"
    )
    refusal.add_argument("folder", nargs="?", default=default_shared_data("xstest_dev"))
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    paths = litmus_paths(args.home).ensure()
    os.environ.setdefault("LITMUS_HOME", str(paths.home))
    try:
        return int(args.handler(args, paths))
    except KeyboardInterrupt:
        _say("litmus: interrupted")
        return 130
    except Exception as exc:  # one clear line for people; --debug for the traceback
        if args.debug:
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(f"litmus: error: {message}")
        return 1


if __name__ == "__main__":  # python -m litmus_dagster.cli
    sys.exit(main())
