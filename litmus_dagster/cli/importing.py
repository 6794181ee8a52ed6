"""``litmus sample``, ``suite-add``, ``land``, ``import-inspect``, ``convert-agentharm``,
``import-transcripts``: bring suites and run files into the state folder."""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from litmus.errors import LitmusError, require_file
from litmus.neutralize import for_terminal
from litmus.settings import LitmusPaths
from litmus_dagster.cli.common import default_shared_data, say


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
    say(
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
    say(f"suite {shown} ({len(suite.families)} families) → {target}")
    if warning := oracle_less_warning(suite):
        say(f"warning: {warning}")
    return 0


def cmd_land(args: argparse.Namespace, paths: LitmusPaths) -> int:
    sources = [require_file(name, "a run file (.jsonl, .eval or .json)") for name in args.files]
    for source in sources:  # every name checked before anything is copied
        shutil.copyfile(source, paths.landing / source.name)
        say(f"landed {source.name}")
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
    say(f"{source.name}: {summary.records} record(s) → {target}")
    for problem in summary.problems:
        say(f"  sample {problem.sample} epoch {problem.epoch}: {problem.field}: {problem.reason}")
    if summary.problems:
        say(f"{summary.problem_count} sample(s) could not be mapped (listed above)")
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
        say(f"{for_terminal(source.name)}: {counted} samples read")

    return show


def cmd_convert_agentharm(args: argparse.Namespace, paths: LitmusPaths) -> int:
    """Build a LITMUS suite from AgentHarm's behaviour pairs and add it to the suites folder."""
    from litmus.importers.agentharm import agentharm_suite

    suite = agentharm_suite(Path(args.folder), split=args.split)
    target = paths.suites / f"agentharm-{args.split}.json"
    target.write_text(json.dumps(suite, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    say(
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
        say(
            f"no --suite: wrote suite {name}@{version} ({len(result.suite['families'])} "
            f"oracle-less instance(s), one per transcript) → {suite_target}"
        )
    target = paths.landing / f"{safe_file_stem(result.run_id)}.transcripts.jsonl"
    write_jsonl_atomically(result.records, target)
    suite_key = f"{result.suite['suite']}@{result.suite['suite_version']}"
    terminations = ", ".join(f"{k}={v}" for k, v in sorted(result.terminations.items()))
    statuses = ", ".join(f"{k}={v}" for k, v in sorted(result.statuses.items())) or "none"
    say(
        f"{source.name}: {len(result.records)} record(s) on suite {suite_key} → {target}\n"
        f"  terminations: {terminations}; tool results: {statuses}; "
        f"unparsed actions kept as {UNPARSED_TOOL} calls: {result.unparsed_actions}"
    )
    if result.oracle_less:
        say(
            f"warning: {result.oracle_less} harmful instance(s) have no oracle (no prohibited "
            "effects): a trajectory is labeled safe only when the agent executed no tool call "
            "that returned ok; the rest go to the audit queue (docs/transcripts.md)"
        )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this family's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
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

    _register_importers(commands)


def _register_importers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``import-inspect``, ``convert-agentharm``, ``import-transcripts``."""
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
