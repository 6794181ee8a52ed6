"""A tool that behaves (issue 15): safe demo folders, one-line errors, waits that say so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import litmus, litmus_command
from litmus.warehouse import connect, writer_lock
from litmus_dagster.cli import DEMO_MARKER, INTERRUPTED, prepare_demo_home


def test_demo_refuses_a_folder_that_is_not_an_earlier_demos(tmp_path: Path) -> None:
    home = tmp_path / "real-work"
    home.mkdir()
    (home / "notes.txt").write_text("not LITMUS's")
    (home / "raw").mkdir()
    (home / "raw" / "precious.jsonl").write_text("{}\n")
    result = litmus(home, "demo")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(home) in lines[0] and "not an earlier demo" in lines[0]
    assert (home / "notes.txt").read_text() == "not LITMUS's"
    assert (home / "raw" / "precious.jsonl").exists()
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt", "raw"]  # nothing added


def test_demo_resets_only_litmus_files_of_an_earlier_demo(tmp_path: Path) -> None:
    home = tmp_path / "demo"
    prepare_demo_home(home, keep=False)  # a new folder becomes a demo folder
    assert (home / DEMO_MARKER).is_file()
    (home / "raw").mkdir()
    (home / "raw" / "old.jsonl").write_text("{}\n")
    (home / "warehouse.duckdb").write_text("old")
    (home / "my-notes.md").write_text("kept")
    prepare_demo_home(home, keep=False)
    assert not (home / "raw").exists() and not (home / "warehouse.duckdb").exists()
    assert (home / "my-notes.md").read_text() == "kept"
    # an empty folder is fine as well
    empty = tmp_path / "empty"
    empty.mkdir()
    prepare_demo_home(empty, keep=False)
    assert (empty / DEMO_MARKER).is_file()


def test_a_command_waiting_for_the_warehouse_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with connect(home / "warehouse.duckdb"):  # status reads an existing warehouse only
        pass
    # The holder keeps the lock until told to let go (a line on its stdin), so however slowly
    # `litmus status` starts on a loaded machine, it finds the warehouse held.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pathlib import Path\n"
            "from litmus.warehouse import writer_lock\n"
            f"with writer_lock(Path({str(home / 'warehouse.duckdb')!r}), 60):\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    # `status` starts only once the lock is held: started before, it could (on a loaded
    # machine, with a slow holder) find the warehouse free and never wait
    assert holder.stdout.readline().strip() == "held"
    status = subprocess.Popen(
        litmus_command(home, "status"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert status.stderr is not None
    try:
        waiting = status.stderr.readline()  # status says so while it waits, then we release
        holder.stdin.write("release\n")
        holder.stdin.flush()
        _output, rest = status.communicate(timeout=120)
    finally:
        if status.poll() is None:
            status.kill()
        if holder.poll() is None:
            holder.stdin.close()  # end of input lets go of the lock as well
        holder.wait(timeout=30)
        status.wait(timeout=30)
    assert status.returncode == 0, waiting + rest
    assert "waiting for warehouse.duckdb: another LITMUS process holds it" in waiting
    with writer_lock(home / "warehouse.duckdb", 1):  # released afterwards
        pass


def _stop_mid_run(home: Path, signum: int) -> tuple[int, list[str]]:
    """Start `litmus run`, send ``signum`` once a configuration is being labeled; return the
    exit code and the stderr lines printed after the signal."""
    process = subprocess.Popen(
        litmus_command(home, "run"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        for line in process.stderr:
            if line.startswith("[2/3] labeling configuration 1/"):
                break
        else:
            raise AssertionError("the run ended before labeling")
        process.send_signal(signum)
        # bounded: a run that does not stop (or a child of it that keeps stderr open) fails
        # the test instead of holding the suite
        _output, after = process.communicate(timeout=120)
        return process.returncode, after.splitlines()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sigterm_and_ctrl_c_stop_the_whole_run_and_leave_the_board(tmp_path: Path) -> None:
    import signal

    home = tmp_path / "home"
    assert litmus(home, "sample", "--families", "4").returncode == 0
    exports = home / "exports"
    previous = {name: f"previous {name}\n" for name in ("leaderboard.html", "leaderboard.csv")}
    for name, text in previous.items():
        (exports / name).write_text(text)
    for signum in (signal.SIGTERM, signal.SIGINT):
        code, after = _stop_mid_run(home, signum)
        assert code == 130, after
        assert after == [INTERRUPTED], after  # one line: no traceback, no next configuration
        for name, text in previous.items():
            assert (exports / name).read_text() == text


# A process with the CLI's stop handling (its handler, as `litmus` installs it), told to stop
# while it is inside a section a stop must not cut into.
STOPPED_INSIDE_A_DEFERRED_SECTION = """
import os, signal, sys, threading
from litmus_dagster import cli, stop
cli.STOP_GRACE_S = float(sys.argv[1])
signal.signal(signal.SIGTERM, cli._interrupt)
held = threading.Lock()
try:
    with stop.deferred(), held:
        os.kill(os.getpid(), signal.SIGTERM)
        print("inside, not interrupted", flush=True)
        if sys.argv[2] == "stuck":
            held.acquire()  # waits for good, as a lock taken twice by one thread does
except KeyboardInterrupt:
    print("interrupted where the section ended", flush=True)
"""


def _stop_inside_a_deferred_section(grace_s: float, then: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", STOPPED_INSIDE_A_DEFERRED_SECTION, str(grace_s), then],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_stop_inside_a_deferred_section_is_raised_where_the_section_ends() -> None:
    """The run history's connection handling (a lock, a pooled connection) is such a section:
    an interrupt inside it would leave the lock taken for the next write of the process."""
    result = _stop_inside_a_deferred_section(60, "leaves")
    assert result.stdout.splitlines() == [
        "inside, not interrupted",
        "interrupted where the section ended",
    ], result.stderr
    assert result.returncode == 0, result.stderr


def test_a_process_that_cannot_stop_by_itself_is_ended_and_says_so() -> None:
    result = _stop_inside_a_deferred_section(0.5, "stuck")
    assert result.stdout.splitlines() == ["inside, not interrupted"], result.stderr
    assert result.returncode == 130
    assert result.stderr.splitlines() == [INTERRUPTED]


def test_a_directory_or_missing_file_is_one_line_naming_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for command in (
        ["land", str(folder)],
        ["suite-add", str(folder)],
        ["import-inspect", str(folder)],
        ["audit", "load", str(folder)],
        ["verify", str(folder)],
    ):
        result = litmus(home, *command)
        assert result.returncode == 1, command
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"litmus: error: {folder}: is a directory; expected "), line
    missing = tmp_path / "missing.jsonl"
    for command in (["land", str(missing)], ["audit", "load", str(missing)]):
        result = litmus(home, *command)
        assert result.stderr.strip() == f"litmus: error: {missing}: no such file"
    # nothing is landed when one of several names is bad
    good = tmp_path / "good.jsonl"
    good.write_text("{}\n")
    assert litmus(home, "land", str(good), str(folder)).returncode == 1
    assert not (home / "landing" / "good.jsonl").exists()


def test_a_sample_that_clashes_with_the_stored_suite_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    from litmus.ingestion.suites import store_suite
    from litmus.sample import sample_suite
    from litmus.warehouse import connect

    home = tmp_path / "home"
    home.mkdir()
    with connect(home / "warehouse.duckdb") as con:
        store_suite(con, sample_suite(n_families=3), "suite.json")
    result = litmus(home, "sample", "--families", "4")
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "litmus-sample@2026.11.0 (4 families) is already stored with different content" in line
    assert "(3 families, from suite.json)" in line
    assert not (home / "sample").exists()  # refused before writing anything
    assert litmus(home, "sample", "--families", "3").returncode == 0  # the same suite is fine
    # a clashing suite file put into the suites folder by hand stops `litmus run` up front
    import json

    (home / "suites" / "hand-made.json").write_text(
        json.dumps(sample_suite(n_families=5).model_dump(mode="json", exclude_none=True))
    )
    run = litmus(home, "run")
    assert run.returncode == 1
    (line,) = run.stderr.strip().splitlines()
    assert "(5 families) is already stored with different content" in line
    assert not (home / "last_run.log").exists()  # no pipeline step started
