"""`litmus run` killed with SIGKILL at every pipeline step in turn, then re-run, publishes
byte for byte what a run that was never killed publishes (SPEC §10; issue 14, items 1 and 4).

One clean run in one state folder is the baseline, built once per test run for every chain
(``shared_worlds``), by ``test_crash_loop_baseline`` first in the run (or, when a chain runs
without it, by the first chain to ask). The crash points are split into three chains, in
pipeline order, each in its own test module so that the two test workers run them side by side
(:data:`CHAINS`): ingestion and labeling, scoring to the staged receipt, and the publication
itself. Each chain scores the same files in its own state folder by a sequence of runs, each
killed (a real SIGKILL, sent by the process to itself at a named crash point, see
``litmus/faults.py``) at the chain's next point. The chains' runs are forked from a process
that has already imported the pipeline (:func:`litmus_run`); the baseline is the ``litmus``
executable itself. Each run starts from whatever the kill before
it left, and every state a kill leaves is recovered from by the chain's next run (the last
one's by an unkilled run). After every kill the published folder is checked: the board files
beside the receipt are exactly the ones it lists (together or not at all). A last, unkilled
run must then publish the same leaderboard CSV, Markdown, HTML and plot bytes as the baseline,
the same receipt and the same alerts.

The receipt fields that legitimately differ between two publications are handled here, one
by one: ``published_at`` (the time of publishing) is set aside, and so are
``code.git_commit`` and ``code.git_dirty`` (the checkout's HEAD is read at each
publication, and a commit made while the test runs moves it); on the HTML page, the
publication time and the times the release alerts were raised (the same clock readings,
printed for people) are masked, and the page's digest in the receipt is set aside for the
same reason; nothing else is — publisher,
the other code versions, raw files, fingerprints, gates, rows and the published files'
digests must be equal.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from shared_worlds import shared_world

from litmus.faults import CRASH_ENV, CRASH_SIGNAL_ENV
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.trust import publication
from litmus.warehouse import connect_read_only

LITMUS = Path(sys.executable).with_name("litmus")
FAMILIES = 8
RUN_FILES = 4  # both aurora releases (the drift pair), bastion, fumbler: cost grows per file
# (crash point, the n-th time it is reached) for each run of a chain, in pipeline order
CHAINS: dict[str, tuple[tuple[str, int], ...]] = {
    "ingest_and_label": (
        ("ingest.file_committed", 2),  # between ingested files: 2 of 4 committed
        ("ingest.files_done", 1),
        ("pipeline.ingested", 1),
        ("pipeline.configuration_scored", 2),
    ),
    "score_to_receipt": (
        ("pipeline.scored", 1),
        ("metrics.cis_computed", 1),
        ("leaderboard.staged", 1),
        ("receipt.staged", 1),  # inside the receipt step
    ),
    "publication": (
        ("publication.committed", 1),
        ("publication.file_moved", 2),  # while the next run rolls the publication forward
        ("pipeline.published", 1),
    ),
}
# what differs between two publications of the same inputs, by design: the time
VARYING_RECEIPT_FIELDS = ("published_at",)
# Clock readings the HTML page prints: when it was published, when each alert was raised.
VARYING_HTML_TIMES = re.compile(rb"(Published|raised) \d{4}-\d\d-\d\d \d\d:\d\d")
# the checkout's HEAD, read at each publication: a commit made while the test runs moves it
VARYING_CODE_FIELDS = ("git_commit", "git_dirty")


def stage(root: Path, name: str, suite: Path, runs: list[Path]) -> LitmusPaths:
    paths = litmus_paths(root / name).ensure()
    shutil.copyfile(suite, paths.suites / suite.name)
    for run_file in runs:
        shutil.copyfile(run_file, paths.landing / run_file.name)
    return paths


def litmus_run(
    paths: LitmusPaths,
    crash_at: str | None = None,
    *,
    forked: bool = True,
    interrupt: bool = False,
    argv: tuple[str, ...] = ("run",),
) -> subprocess.CompletedProcess:
    """``litmus run`` (or ``argv``) in its own process, killed at ``crash_at`` if given —
    or, with ``interrupt``, sent SIGINT there (Ctrl-C: it must stop by itself).

    ``forked`` (the chains' runs): the process is forked from one that has already imported
    what every run imports (:func:`_forked_litmus`); otherwise (the baseline) it is the
    ``litmus`` executable itself.
    """
    env = {**os.environ, "LITMUS_HOME": str(paths.home), "LITMUS_PUBLISHER": "crash-loop"}
    for name in (
        "LITMUS_DUCKDB_PATH",
        "LITMUS_SIGNING_KEY",
        "LITMUS_ALERT_WEBHOOK_URL",
        CRASH_ENV,
        CRASH_SIGNAL_ENV,
    ):
        env.pop(name, None)
    if crash_at:
        env[CRASH_ENV] = crash_at
    if interrupt:
        env[CRASH_SIGNAL_ENV] = "INT"
    if forked:
        return _forked_litmus(list(argv), env, paths.home.parent)
    return subprocess.run(
        [str(LITMUS), *argv], env=env, capture_output=True, text=True, timeout=1800, check=False
    )


# What every `litmus run` imports before its first step: Dagster and the code location,
# dbt-core with the DuckDB adapter, Great Expectations. Importing them is about a third of a
# small run's CPU (docs/performance.md, "The fixed cost of one `litmus run`"), and the chains
# start fifteen such runs. multiprocessing's fork server imports them once per test worker;
# each run is then a fresh fork of it: its own process and pid, the command's own entry point
# (``console_main``), its own environment, and a real SIGKILL at the crash point. No file,
# connection or thread is open in the fork server (it only imports).
_PRELOADED = [
    "litmus_dagster.cli",
    "litmus_dagster.definitions",
    "dbt.cli.main",
    "dbt.adapters.duckdb",
    "great_expectations",
]


def _forked_litmus(
    argv: list[str], env: dict[str, str], scratch: Path
) -> subprocess.CompletedProcess:
    import multiprocessing
    import tempfile

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOADED)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        out, err = Path(folder, "stdout"), Path(folder, "stderr")
        process = context.Process(target=_litmus_in_child, args=(argv, env, out, err))
        process.start()
        process.join(timeout=1800)
        if process.is_alive():
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(["litmus", *argv], 1800)
        return subprocess.CompletedProcess(
            ["litmus", *argv],
            process.exitcode,
            out.read_text(encoding="utf-8", errors="replace"),
            err.read_text(encoding="utf-8", errors="replace"),
        )


def _litmus_in_child(argv: list[str], env: dict[str, str], out: Path, err: Path) -> None:
    from litmus_dagster.cli import console_main

    os.environ.clear()
    os.environ.update(env)
    for stream, path in ((1, out), (2, err)):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(descriptor, stream)
        os.close(descriptor)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.argv = [str(LITMUS), *argv]
    console_main()


def published(paths: LitmusPaths) -> dict[str, Any]:
    """The publication as bytes and facts, with the fields that may differ set aside."""
    exports = paths.exports
    receipt = json.loads((exports / publication.RECEIPT_NAME).read_text(encoding="utf-8"))
    for name in VARYING_RECEIPT_FIELDS:
        receipt.pop(name)
    for name in VARYING_CODE_FIELDS:
        receipt["code"].pop(name, None)
    # the page prints clock readings (masked below), so its digest differs; its masked bytes
    # are compared with the other files
    receipt["published_files"].pop("leaderboard.html", None)
    with connect_read_only(paths.duckdb_path) as con:  # the lake when LITMUS_WAREHOUSE names one
        alerts = con.execute(
            "SELECT fingerprint, lineage, from_release, to_release FROM alerts ORDER BY 1"
        ).fetchall()
    return {
        "files": {
            name: VARYING_HTML_TIMES.sub(rb"\1 <time>", (exports / name).read_bytes())
            if name.endswith(".html")
            else (exports / name).read_bytes()
            for name in publication.BOARD_FILES
        },
        "receipt": receipt,
        "alerts": alerts,
    }


def assert_board_matches_its_receipt(paths: LitmusPaths, after: str) -> None:
    """Together or not at all: unless a committed publication is still being moved into
    place (its journal says so, and the next run finishes it), the board files beside the
    receipt are exactly the ones it lists, byte for byte."""
    exports = paths.exports
    if (exports / publication.JOURNAL_NAME).exists():
        return
    receipt_path = exports / publication.RECEIPT_NAME
    if not receipt_path.exists():
        assert not any((exports / name).exists() for name in publication.BOARD_FILES), after
        return
    receipt = json.loads(receipt_path.read_text(encoding="utf-8"))
    assert publication.file_digests(exports) == receipt["published_files"], (
        f"after a kill at {after}, the board beside the receipt is not the one it lists"
    )


def sample_inputs(root: Path) -> tuple[Path, list[Path]]:
    """The suite and the run files every state folder scores (the sample is deterministic)."""
    manifest = generate_sample(root / "sample", n_families=FAMILIES)
    return manifest.suite_path, sorted(manifest.run_paths.values())[:RUN_FILES]


def newer_run_files(root: Path, folder: Path) -> list[Path]:
    """Three run files newer than :func:`sample_inputs`' (written by it into ``root``): a
    newer release of its third configuration (so a new pair's release drift and drift plot
    are computed), a second run of its first configuration (both in ``folder``), and one of
    a configuration of its own."""
    runs = sorted((root / "sample" / "runs").glob("*.jsonl"))
    folder.mkdir(parents=True, exist_ok=True)

    def rewritten(source: Path, name: str, change: Callable[[dict], dict]) -> Path:
        records = map(json.loads, source.read_text(encoding="utf-8").splitlines())
        target = folder / name
        target.write_text("".join(json.dumps(change(r)) + "\n" for r in records), "utf-8")
        return target

    newer_release = rewritten(
        runs[2],
        f"release_{runs[2].name}",
        lambda record: {
            **record,
            "run_id": f"{record['run_id']}-release",
            "config": {**record["config"], "model_release": "2026-12-01"},
        },
    )
    again = rewritten(
        runs[0], f"again_{runs[0].name}", lambda r: {**r, "run_id": f"{r['run_id']}-again"}
    )
    return [newer_release, again, runs[RUN_FILES]]


def _build_clean_publication(folder: Path) -> None:
    clean = stage(folder, "clean", *sample_inputs(folder))
    done = litmus_run(clean, forked=False)  # the baseline: the `litmus` executable itself
    assert done.returncode == 0, done.stderr[-3000:]
    (folder / "published.pickle").write_bytes(pickle.dumps(published(clean)))


def clean_publication(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What a run that was never killed publishes: built by the first chain to ask."""
    folder = shared_world(tmp_path_factory, "crash-loop-clean", _build_clean_publication)
    return pickle.loads((folder / "published.pickle").read_bytes())


def clean_home(tmp_path_factory: pytest.TempPathFactory) -> LitmusPaths:
    """The state folder of that run (read-only: shared by every test of the run)."""
    folder = shared_world(tmp_path_factory, "crash-loop-clean", _build_clean_publication)
    return litmus_paths(folder / "clean")


def assert_is_a_real_call_site(point: str) -> None:
    """A crash point named in CRASH_POINTS but never reached would make the loop test lie."""
    project = Path(__file__).resolve().parents[1]
    sources = [
        path.read_text(encoding="utf-8")
        for folder in ("litmus", "litmus_dagster")
        for path in (project / folder).rglob("*.py")
    ]
    assert sum(source.count(f'crash_point("{point}")') for source in sources) == 1


def points_of(chain: str) -> list[str]:
    return [point for point, _ in CHAINS[chain]]


def kill_at_each_point_then_rerun(
    chain: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The chain's killed runs, the unkilled rerun, and its publication compared with the
    clean run's (asked for only now: in a whole run ``test_crash_loop_baseline`` has built it
    by then; without it, the chains' runs overlap its building)."""
    killed = stage(tmp_path, "killed", *sample_inputs(tmp_path))
    for point, nth in CHAINS[chain]:
        crash_at = f"{point}#{nth}"
        run = litmus_run(killed, crash_at)
        assert run.returncode == -signal.SIGKILL, (
            f"the run was not killed at {crash_at} (exit {run.returncode}): {run.stderr[-2000:]}"
        )
        assert_board_matches_its_receipt(killed, crash_at)

    rerun = litmus_run(killed)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{RUN_FILES} configuration(s), " in rerun.stderr
    actual = published(killed)
    expected = clean_publication(tmp_path_factory)
    for name, data in expected["files"].items():
        assert actual["files"][name] == data, f"{name} differs from the clean run's"
    assert actual["receipt"] == expected["receipt"]
    assert actual["alerts"] == expected["alerts"]
    assert not (killed.exports / publication.STAGING_NAME).exists()


# Ctrl-C (SIGINT) at points of each phase, in pipeline order: ingestion, labeling, the
# publication's renames (which an interrupt waits for); the staged board is interrupted after
# a publication (NEWER_FILE_INTERRUPT_POINTS). Fewer than the kill chains: each point is one
# more whole run.
INTERRUPT_POINTS: tuple[tuple[str, int], ...] = (
    ("ingest.file_committed", 2),
    ("pipeline.configuration_scored", 2),
    ("publication.file_moved", 1),
)


def assert_stopped_in_one_line(run: subprocess.CompletedProcess, after: str) -> None:
    """Exit 130, no traceback, and one line saying so after the progress lines."""
    from litmus_dagster.cli import INTERRUPTED

    assert run.returncode == 130, f"{after}: exit {run.returncode}: {run.stderr[-2000:]}"
    lines = run.stderr.splitlines()
    assert "Traceback" not in run.stderr + run.stdout, f"{after}: {run.stderr[-3000:]}"
    assert lines[-1] == INTERRUPTED, f"{after}: {lines[-5:]}"
    progress = lines[:-1]
    assert all(line.startswith(("[", " ")) for line in progress), f"{after}: {progress}"


def assert_status_board_and_receipt_agree(paths: LitmusPaths, after: str) -> list[str]:
    """What ``litmus status`` calls published is exactly what the published board shows,
    and ``litmus verify`` finds the untouched receipt matching the warehouse; returns its
    notes."""
    from litmus.planning.status import partition_reviews, publication_state, published_partitions
    from litmus.trust.receipts import load_receipt, verify_receipt
    from litmus.warehouse import connect_read_only

    on_board = published_partitions(paths.exports)
    receipt_path = paths.exports / publication.RECEIPT_NAME
    with connect_read_only(paths.duckdb_path) as con:
        said_published = {
            key
            for key, review in partition_reviews(con).items()
            if publication_state(review, on_board).startswith("published")
        }
        verification = (
            verify_receipt(load_receipt(receipt_path), con, paths)
            if receipt_path.exists()
            else None
        )
    assert said_published == (on_board or set()), after
    if verification is None:
        return []
    assert verification.ok, f"{after}: {verification.mismatches}"
    return verification.notes


def assert_status_says_not_scored_yet(paths: LitmusPaths, after: str) -> None:
    """``litmus status`` after a run stopped between labeling and the metrics: a configuration
    labeled and gated is "not scored yet", not a failed rates gate."""
    status = litmus_run(paths, argv=("status",))
    assert status.returncode == 0, f"{after}: {status.stderr[-2000:]}"
    assert any(line.endswith("  withheld: not scored yet") for line in status.stdout.splitlines())
    assert "rates_in_unit_interval" not in status.stdout, f"{after}: {status.stdout}"


def interrupt_at_each_point_then_rerun(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Ctrl-C at each of :data:`INTERRUPT_POINTS` in turn, each run starting from what the
    one before left: every run stops in one line with exit 130, and ``status``, the board and
    ``verify`` agree after each; an uninterrupted run then publishes what a clean run does,
    and a re-score of everything cut short leaves them agreeing too."""
    interrupted = stage(tmp_path, "interrupted", *sample_inputs(tmp_path))
    for point, nth in INTERRUPT_POINTS:
        at = f"{point}#{nth}"
        assert_stopped_in_one_line(litmus_run(interrupted, at, interrupt=True), at)
        assert_board_matches_its_receipt(interrupted, at)
        assert_status_board_and_receipt_agree(interrupted, at)
        if point == "pipeline.configuration_scored":
            assert_status_says_not_scored_yet(interrupted, at)

    rerun = litmus_run(interrupted)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    actual, expected = published(interrupted), clean_publication(tmp_path_factory)
    assert actual["files"] == expected["files"]
    assert actual["receipt"] == expected["receipt"]

    interrupt_newer_files_in_each_phase(
        interrupted, newer_run_files(tmp_path, tmp_path / "newer"), tmp_path
    )

    at = "re-score of everything, at pipeline.configuration_scored#2"
    rescore = litmus_run(
        interrupted,
        "pipeline.configuration_scored#2",
        interrupt=True,
        argv=("run", "--rescore-all"),
    )
    assert_stopped_in_one_line(rescore, at)
    assert_status_board_and_receipt_agree(interrupted, at)


# After a publication, newly landed run files and Ctrl-C in each phase of the run that would
# publish them: ingestion, dbt, the staged board; then one more file lands and the next run,
# cut short once it labeled it, finds the board staged by the one before; then the staged
# receipt (beside the drift plots of the newer release pair) and the publication itself
# (whose renames an interrupt waits for). ``None``: the last newer file lands.
NEWER_FILE_INTERRUPT_POINTS: tuple[tuple[str, int] | None, ...] = (
    ("ingest.files_done", 1),
    ("metrics.cis_computed", 1),
    ("leaderboard.staged", 1),
    None,
    ("pipeline.configuration_scored", 1),
    ("receipt.staged", 1),
    ("publication.file_moved", 1),
)


def newer_note(landed: int) -> str:
    return f"{landed} newer unpublished run(s), from {landed} raw file(s)"


def interrupt_newer_files_in_each_phase(
    paths: LitmusPaths, newer: list[Path], scratch: Path
) -> None:
    """``paths`` holds a publication; ``newer`` are landed (all but the last at once, the
    last where :data:`NEWER_FILE_INTERRUPT_POINTS` says), and each run is cut short at the
    next of its points. Until the publication, ``verify`` finds the untouched receipt
    matching, with one note for the newer runs, and an edit of a row the receipt covers is
    still a mismatch; after it, the new receipt covers the newer runs."""
    receipt = (paths.exports / publication.RECEIPT_NAME).read_bytes()
    landed = newer[:-1]
    for path in landed:
        shutil.copyfile(path, paths.landing / path.name)
    for step in NEWER_FILE_INTERRUPT_POINTS:
        if step is None:
            landed.append(newer[-1])
            shutil.copyfile(newer[-1], paths.landing / newer[-1].name)
            continue
        point, nth = step
        at = f"{point}#{nth} after a publication, {len(landed)} newer file(s) landed"
        assert_stopped_in_one_line(litmus_run(paths, f"{point}#{nth}", interrupt=True), at)
        assert_board_matches_its_receipt(paths, at)
        notes = assert_status_board_and_receipt_agree(paths, at)
        published_now = (paths.exports / publication.RECEIPT_NAME).read_bytes() != receipt
        assert (newer_note(len(landed)) in " ".join(notes)) != published_now, f"{at}: {notes}"
        if point == "receipt.staged":  # ingested, labeled, scored and staged: the most ahead
            assert_covered_edit_is_caught(paths, scratch / "edited", at)
    assert published_now, "the interrupted publication was not finished"
    assert any(paths.exports.glob("drift_bastion*.png")), "no drift plot of the newer release"


def assert_covered_edit_is_caught(paths: LitmusPaths, copy: Path, after: str) -> None:
    """In a copy of ``paths``: one label of the configuration the newer run grew edited (a
    trajectory the receipt covers), and a metric row of another; verify reports both."""
    from litmus.trust.receipts import load_receipt, verify_receipt
    from litmus.warehouse import connect

    shutil.copytree(paths.home, copy)
    edited = litmus_paths(copy)
    receipt = load_receipt(edited.exports / publication.RECEIPT_NAME)
    keys = [entry["partition_key"] for entry in receipt["configurations"]]
    with connect(edited.duckdb_path) as con:
        (grown,) = con.execute(
            "SELECT DISTINCT partition_key FROM raw_trajectories WHERE run_id LIKE '%-again'"
        ).fetchone()
        con.execute(
            "UPDATE audited_trajectories SET outcome = 'unsafe_realized' WHERE trajectory_id = "
            "(SELECT min(trajectory_id) FROM audited_trajectories WHERE partition_key = ?)",
            [grown],
        )
        con.execute(
            "UPDATE configuration_metrics SET utility = 0.5 + utility / 4 WHERE partition_key = ?",
            [next(key for key in reversed(keys) if key != grown)],
        )
        mismatches = verify_receipt(receipt, con, edited).mismatches
    text = " ".join(mismatches)
    assert "audited labels differ" in text, f"{after}: {mismatches}"
    assert "when recomputed from the metric tables" in text, f"{after}: {mismatches}"
    shutil.rmtree(copy)
