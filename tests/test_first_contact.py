"""A newcomer's first runs: an empty home, a home holding only a suite, a landing whose every
record is quarantined. Each ends in exit 0 with one line saying nothing was scored and what
to do next, on the command line and on the landing sensor's path (issue 43)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from conftest import ONE_FAMILY_SUITE, SHARED_DATA, litmus, record, write_jsonl
from litmus.gates.publication_gates import (
    evaluate_precision_flags,
    evaluate_rate_gates,
    record_rate_gates,
)
from litmus.settings import LitmusPaths
from litmus.warehouse import connect, execute_many, transaction
from litmus_dagster.cli import HELD_BACK_FOR_SUITE, HELD_BACK_NEXT_RUN
from litmus_dagster.definitions import defs
from litmus_dagster.executor import first_step_error
from litmus_dagster.jobs import publish_job
from litmus_dagster.releases.sensors import landing_sensor
from litmus_dagster.resources import LitmusWarehouse

NOTHING = "nothing was scored: "


def output_lines(result) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]


def land_orphans(landing: Path) -> Path:
    """A run file whose suite is loaded nowhere: every record is held back in quarantine."""
    return write_jsonl(
        landing / "orphans.jsonl",
        [record("fam-1/hs", suite="nowhere"), record("fam-1/eb", suite="nowhere")],
    )


def test_run_on_an_empty_home_is_one_line_and_exit_0(tmp_path: Path) -> None:
    result = litmus(tmp_path / "home", "run")
    assert result.returncode == 0, result.stderr
    [line] = output_lines(result)
    assert line.startswith(NOTHING) and "litmus land" in line and "litmus sample" in line
    assert not (tmp_path / "home" / "exports" / "leaderboard.html").exists()


def test_run_on_a_suite_only_home_is_one_line_and_exit_0(tmp_path: Path) -> None:
    home = tmp_path / "home"
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(ONE_FAMILY_SUITE))
    assert litmus(home, "suite-add", str(suite)).returncode == 0
    result = litmus(home, "run")
    assert result.returncode == 0, result.stderr
    [line] = output_lines(result)
    assert line.startswith(NOTHING) and "no run file landed" in line and "litmus land" in line


@pytest.mark.skipif(not (SHARED_DATA / "agentharm").is_dir(), reason="no AgentHarm data")
def test_run_right_after_convert_agentharm_is_one_line_and_exit_0(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert litmus(home, "convert-agentharm", str(SHARED_DATA / "agentharm")).returncode == 0
    result = litmus(home, "run")
    assert result.returncode == 0, result.stderr
    [line] = output_lines(result)
    assert line.startswith(NOTHING) and "agentharm-test_public.json" in line


def test_run_on_an_all_quarantined_landing_says_so_and_exits_0(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "landing").mkdir(parents=True)
    land_orphans(home / "landing")
    result = litmus(home, "run")
    assert result.returncode == 0, result.stderr
    progress, line = output_lines(result)
    assert progress.startswith("[1/3] ingesting")
    assert line.startswith(NOTHING)
    assert "2 record(s) in 1 landed file(s) was quarantined" in line
    assert "2 wait for a suite that is not loaded" in line and "litmus quarantine" in line
    assert not (home / "exports" / "leaderboard.html").exists()
    # the records stay held back, and say for what
    listed = litmus(home, "quarantine")
    assert listed.returncode == 0
    assert (
        listed.stdout.count(f"unknown suite 'nowhere' (load it first)  [{HELD_BACK_FOR_SUITE}]")
        == 2
    )
    # a file landed since waits, and both commands say so instead of "every file was ingested"
    write_jsonl(
        home / "landing" / "later.jsonl", [record("fam-1/hs", suite="nowhere", run_id="r2")]
    )
    waiting = "waiting: later.jsonl: landed, not ingested yet (`litmus run`)"
    assert waiting in litmus(home, "quarantine").stdout.splitlines()
    assert waiting in litmus(home, "status").stdout.splitlines()
    # once a suite file is added, the held-back records wait for the next run, which loads it
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(ONE_FAMILY_SUITE))
    assert litmus(home, "suite-add", str(suite)).returncode == 0
    assert f"[{HELD_BACK_NEXT_RUN}]" in litmus(home, "quarantine").stdout
    # status starts with what the warehouse holds; the commands that need a configuration
    # say in one line that every record was quarantined
    assert litmus(home, "status").stdout.splitlines()[0].startswith("warehouse ")
    for command, opening in NOTHING_YET.items():
        result = litmus(home, *command.split())
        assert result.returncode == 0, result.stderr
        [line] = output_lines(result)
        assert line.startswith(opening) and "was quarantined" in line, line
    assert not (home / "audit" / "audit_queue.csv").exists()


# What each command that needs a scored configuration says first when there is none.
NOTHING_YET = {
    "alerts": "no release drift or alert: ",
    "audit export": "nothing to audit: ",
    "rescore": "nothing to re-score: ",
    "rescore --dry-run": "nothing to re-score: ",
}


def test_commands_on_an_empty_home_answer_in_one_line_and_create_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for command, opening in {
        **NOTHING_YET,
        "quarantine": "nothing quarantined: no run file has landed here yet; ",
        "status": "no warehouse at ",
    }.items():
        result = litmus(home, *command.split())
        assert result.returncode == 0, f"{command}: {result.stderr}"
        [line] = output_lines(result)
        assert line.startswith(opening), f"{command}: {line}"
        assert "litmus land" in line or command == "status", f"{command}: {line}"
    # verify: nothing to verify is not verified (exit 1), in one line saying why
    result = litmus(home, "verify")
    assert result.returncode == 1
    [line] = output_lines(result)
    assert line.startswith(f"litmus: error: nothing published in {home} yet: no receipt at ")
    assert not home.exists() or not [p for p in home.rglob("*") if p.is_file()]


def test_output_into_a_pipe_its_reader_closed_ends_quietly(tmp_path: Path) -> None:
    """`litmus status | head -1` (and any command whose reader goes away): no "Broken pipe"
    error and no traceback, the exit code a shell shows for a pipe its reader closed."""
    from conftest import litmus_command
    from litmus_dagster.cli import BROKEN_PIPE_EXIT

    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first line is written
    try:
        result = subprocess.run(
            litmus_command(tmp_path / "home", "status"),
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        os.close(writer)
    assert result.returncode == BROKEN_PIPE_EXIT == 128 + signal.SIGPIPE
    assert result.stderr == ""


def test_commands_on_a_suite_only_home_say_no_run_file_landed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(ONE_FAMILY_SUITE))
    assert litmus(home, "suite-add", str(suite)).returncode == 0
    for command, opening in NOTHING_YET.items():
        result = litmus(home, *command.split())
        assert result.returncode == 0, f"{command}: {result.stderr}"
        [line] = output_lines(result)
        assert line.startswith(opening) and "no run file landed" in line, f"{command}: {line}"
    assert not (home / "warehouse.duckdb").exists()


def test_alerts_start_with_their_first_line(litmus_home: LitmusPaths, capsys) -> None:
    from litmus_dagster.releases.cli import print_release_summary

    with connect(litmus_home.duckdb_path):
        pass  # an empty warehouse of the current schema
    print_release_summary(litmus_home, separated=False)
    assert capsys.readouterr().out.splitlines()[0].startswith("release drift ")
    print_release_summary(litmus_home)  # after a run's board: a blank line before it
    assert capsys.readouterr().out.splitlines()[0] == ""


def test_quarantine_before_any_run_says_the_landed_files_wait(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "landing").mkdir(parents=True)
    land_orphans(home / "landing")
    result = litmus(home, "quarantine")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "nothing quarantined yet; 1 landed file(s) wait to be ingested by `litmus run`: "
        "orphans.jsonl"
    ]


# ----------------------------------------------------------------------------- sensor path


def tick(instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"warehouse": LitmusWarehouse()}
    )
    return landing_sensor(context)


def publish_requested(instance: dg.DagsterInstance) -> bool:
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    return any(
        r.key == dg.AssetJobKey(publish_job.name) and r.true_subset.size for r in result.results
    )


def test_the_sensor_scores_an_all_quarantined_landing_without_a_failed_run(
    litmus_home: LitmusPaths,
) -> None:
    instance = dg.DagsterInstance.ephemeral()
    empty = tick(instance, None)  # an empty home: nothing to do, said
    assert empty.run_requests == [] and empty.skip_reason.skip_message == "no new landed files"

    land_orphans(litmus_home.landing)
    settling = tick(instance, empty.cursor)
    result = tick(instance, settling.cursor)
    [request] = result.run_requests
    for add in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(add.partitions_def_name, add.partition_keys)
    run = defs.resolve_job_def(request.job_name).execute_in_process(
        instance=instance, partition_key=request.partition_key, tags=request.tags
    )
    # the run succeeds: the file is stored and its records quarantined, nothing is labeled
    assert run.success
    materialized = {event.asset_key.path[-1] for event in run.get_asset_materialization_events()}
    assert "raw_run_files" in materialized and "raw_trajectories" not in materialized
    assert "labeled_trajectories" not in materialized
    with connect(litmus_home.duckdb_path) as con:
        assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 2
    assert not publish_requested(instance)
    # publishing anyway (a person in the UI) publishes nothing and fails nothing
    published = defs.resolve_job_def(publish_job.name).execute_in_process(instance=instance)
    assert published.success
    assert not (litmus_home.exports / "leaderboard.html").exists()
    assert not (litmus_home.exports / "receipt.json").exists()


def test_the_sensor_on_a_suite_only_home_skips_and_says_why(litmus_home: LitmusPaths) -> None:
    (litmus_home.suites / "suite.json").write_text(json.dumps(ONE_FAMILY_SUITE))
    instance = dg.DagsterInstance.ephemeral()
    first = tick(instance, None)
    second = tick(instance, first.cursor)
    for result in (first, second):
        assert result.run_requests == []
        assert result.skip_reason.skip_message == "no new landed files"
    assert not litmus_home.duckdb_path.exists()  # a tick with nothing landed writes nothing


# ------------------------------------------------------------------- empty parameter lists


def test_gates_on_a_warehouse_without_configurations_record_nothing(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    results = evaluate_rate_gates(warehouse)
    assert results == []
    record_rate_gates(warehouse, results)  # no parameter sets: nothing to insert, no error
    flags = evaluate_precision_flags(warehouse)
    assert flags.empty and flags["low_precision"].dtype == bool
    assert list(flags[flags["low_precision"]].columns) == list(flags.columns)


def test_execute_many_of_no_rows_inserts_nothing() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER)")
    execute_many(con, "INSERT INTO t VALUES (?)", [])
    execute_many(con, "INSERT INTO t VALUES (?)", [[1], [2]])
    assert con.execute("SELECT sum(a) FROM t").fetchone()[0] == 3


def test_an_interrupt_after_the_transaction_ended_is_reported_as_the_interrupt() -> None:
    con = duckdb.connect()
    with pytest.raises(KeyboardInterrupt), transaction(con):
        con.execute("COMMIT")  # DuckDB ended it: a ROLLBACK now has no transaction
        raise KeyboardInterrupt


# ----------------------------------------------------------------------------- help texts


def test_every_command_and_option_has_help_text() -> None:
    import argparse

    from litmus_dagster.cli import build_parser

    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                for name, sub in action.choices.items():
                    if name not in helped:
                        missing.append(f"{path} {name}".strip())
                    walk(sub, f"{path} {name}".strip())
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "")
    assert missing == []


def test_the_readme_names_the_lineage_navigation_of_the_installed_dagster_ui() -> None:
    """README's way to the lineage graph is this Dagster's: its left navigation's "Lineage"
    item opening /asset-groups (read from the installed web app; fails on an upgrade that
    renames it)."""
    import dagster_webserver

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert "**Lineage** in the left navigation" in readme and "/asset-groups" in readme
    chunks = Path(dagster_webserver.__file__).parent / "webapp" / "build" / "_next" / "static"
    assert any(
        'label:"Lineage",href:"/asset-groups"' in path.read_text(encoding="utf-8", errors="ignore")
        for path in chunks.rglob("*.js")
    )


# ------------------------------------------------------------------------ rescore --dry-run

PROBE = """
import json, sys
from litmus_dagster.cli import main
code = main(["--home", sys.argv[1], "rescore", "--dry-run"])
# not pandas: DuckDB 1.5 (pinned: the lake's extensions exist for it) imports it on the first
# query with parameters, whatever they are
heavy = sorted(
    name for name in sys.modules
    if name.split(".")[0] in ("dagster", "dbt", "great_expectations", "matplotlib")
)
print(json.dumps({"code": code, "heavy": heavy[:5]}))
"""


def test_rescore_dry_run_reads_only_and_loads_no_pipeline(litmus_home: LitmusPaths) -> None:
    import subprocess
    import sys

    with connect(litmus_home.duckdb_path):
        pass  # an empty warehouse of the current schema
    before = litmus_home.duckdb_path.stat()
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(litmus_home.home)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert json.loads(probe.stdout) == {"code": 0, "heavy": []}, probe.stderr
    [line] = probe.stderr.splitlines()  # no configuration yet: nothing to re-score
    assert line.startswith("nothing to re-score: ") and "litmus land" in line
    after = litmus_home.duckdb_path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


# --------------------------------------------------------------------- ./dev.sh ui and SIGTERM


def test_dev_ui_starts_dagster_dev_with_sigint_restored_so_sigterm_stops_it(tmp_path: Path) -> None:
    """dagster dev maps SIGTERM to its SIGINT handling; started in the background (SIGINT
    ignored, as a shell does) it would ignore SIGTERM too. dev.sh's launcher restores SIGINT
    before exec: the program it starts gets Python's KeyboardInterrupt handler."""
    import re
    import signal
    import subprocess
    import sys

    dev = (Path(__file__).resolve().parents[1] / "dev.sh").read_text(encoding="utf-8")
    (launcher,) = re.findall(r"exec \.venv/bin/python -c \\\n\s+'([^']+)'", dev)
    report = tmp_path / "report.py"
    report.write_text(
        "import signal\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    started = subprocess.run(
        [sys.executable, "-c", launcher, sys.executable, str(report)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # a background job
    )
    assert started.stdout.split() == ["True"], started.stderr


# ------------------------------------------------------- Ctrl-C while DuckDB runs a query

# a query that runs for seconds: the signal sent 0.3 s into it arrives while it runs (were it
# not interrupted, it would end, and the assertions fail instead of the test hanging)
LONG_QUERY = "SELECT count(*) FROM range(3000000000)"


def _query_interrupted_soon() -> None:
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    duckdb.connect().execute(LONG_QUERY).fetchall()


def test_a_ctrl_c_during_a_duckdb_query_in_a_step_stops_the_executor() -> None:
    """DuckDB runs the Python signal handler during a query but raises its own error instead
    of the handler's (the adapter ``executor.DUCKDB_INTERRUPTED``; this fails on an upgrade
    that changes it). A Ctrl-C while a labeling step queries DuckDB must stop `litmus run`
    (exit 130), not count as one configuration's failure and go on to the next."""
    from litmus_dagster.executor import DUCKDB_INTERRUPTED, was_interrupted

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(RuntimeError) as raised:
            _query_interrupted_soon()
        assert (type(raised.value).__name__, str(raised.value)) == DUCKDB_INTERRUPTED

        @dg.op
        def long_query() -> None:
            _query_interrupted_soon()

        @dg.job
        def querying() -> None:
            long_query()

        run = querying.execute_in_process(raise_on_error=False)
        assert not run.success and was_interrupted(run)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_run_out_of_duckdbs_memory_says_which_limit_and_how_to_raise_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(ONE_FAMILY_SUITE))
    assert litmus(home, "suite-add", str(suite)).returncode == 0
    write_jsonl(home / "landing" / "run.jsonl", [record("fam-1/hs"), record("fam-1/eb")])
    monkeypatch.setenv("LITMUS_MEMORY_LIMIT", "1MB")
    result = litmus(home, "run")
    assert result.returncode == 1
    line = result.stderr.splitlines()[-1]
    assert line.startswith("litmus: error: Out of Memory Error: "), result.stderr
    assert line.endswith(
        "(DuckDB reached the warehouse's memory limit, 1MB: set LITMUS_MEMORY_LIMIT higher)"
    )
    assert not (home / "exports" / "leaderboard.html").exists()


def test_a_failed_step_is_reported_by_its_cause_not_dagsters_wrapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A configuration that could not be scored says which step failed and why (the innermost
    exception's first line), with the way out when DuckDB ran out of its memory limit."""
    monkeypatch.setenv("LITMUS_MEMORY_LIMIT", "2MB")

    @dg.asset
    def wide_sort() -> None:
        with duckdb.connect() as con:
            con.execute("SET memory_limit = '2MB'")
            con.execute("SELECT list(range) FROM range(5000000)").fetchall()

    run = dg.materialize([wide_sort], raise_on_error=False)
    error = first_step_error(run)
    assert error is not None and error.startswith(
        "step wide_sort: _duckdb.OutOfMemoryException: Out of Memory Error: "
    ), error
    assert error.endswith(
        "(DuckDB reached the warehouse's memory limit, 2MB: set LITMUS_MEMORY_LIMIT higher)"
    )
