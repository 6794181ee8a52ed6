"""Issue 14: what a red team broke, each attack reproduced with the real hostile bytes, the
real symlink or the real command, and what must hold now. (Item 1 and the kill inside the
receipt step: ``test_crash_loop.py``; verify: ``test_receipts.py``; webhook secrets:
``test_alerts.py``; the audit sheet: ``test_audit.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pandas as pd
import pytest

from conftest import CONFIG, ONE_FAMILY_SUITE, call, record, write_jsonl
from litmus.formats import Suite
from litmus.ingestion.run_files import NotARegularFileError, ingest_file
from litmus.ingestion.suites import store_suite
from litmus.metrics.leaderboard import Leaderboard
from litmus.metrics.plots import boundary_plot_png
from litmus.neutralize import for_csv_cell, for_terminal, safe_file_name, terminal_name
from litmus.planning.status import (
    NOT_ON_BOARD,
    PartitionReview,
    publication_state,
    published_partitions,
)
from litmus.settings import LitmusPaths, litmus_paths
from litmus.trust.receipts import git_commit
from litmus.warehouse import connect
from litmus_dagster.cli import main

INSTANCES = ("fam-1/hs", "fam-1/cm", "fam-1/eb", "fam-1/hb")


def with_suite(paths: LitmusPaths) -> None:
    with connect(paths.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")


def good_records(run_id: str, config: dict[str, Any] = CONFIG) -> list[dict[str, Any]]:
    return [record(i, [call("fs.list")], run_id=run_id, config=config) for i in INSTANCES]


def quarantined(paths: LitmusPaths, name: str) -> list[tuple[int, str, str]]:
    with connect(paths.duckdb_path) as con:
        return con.execute(
            "SELECT line_no, field, reason FROM quarantine WHERE source_name = ? ORDER BY 1",
            [name],
        ).fetchall()


# ----------------------------------------------------------------------------- item 2


def test_values_that_cannot_be_stored_are_quarantined_and_later_files_still_ingest(
    litmus_home: LitmusPaths,
) -> None:
    """Attack: ``"epoch": 2147483648`` (or ≥ 2^63, or a 5,000-digit integer, in the epoch or in
    tool arguments, or 1e400) failed the whole run with "Value … too large to fit in C integer
    type", naming no file or line; every rerun failed the same way and files sorting after it
    were never ingested."""
    with_suite(litmus_home)
    hostile = litmus_home.landing / "a-hostile.jsonl"
    base = record("fam-1/hs", [call("fs.list", path="/tmp")], run_id="hostile")
    lines = [
        json.dumps(base | {"epoch": 2**31}),
        json.dumps(base | {"epoch": 2**63}),
        json.dumps(base).replace('"epoch": 0', '"epoch": ' + "9" * 5000),
        json.dumps(base).replace('"path": "/tmp"', '"path": ' + "9" * 5000),
        json.dumps(base | {"epoch": 2}).replace('"path": "/tmp"', '"path": 18446744073709551616'),
        json.dumps(base).replace('"path": "/tmp"', '"path": 1e400'),
        json.dumps(base).replace('"path": "/tmp"', '"path": -1e400'),
        json.dumps(base | {"epoch": 1}),  # a good record in the same file still lands
    ]
    hostile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    later = write_jsonl(litmus_home.landing / "b-later.jsonl", good_records("later"))

    with connect(litmus_home.duckdb_path) as con:
        report = ingest_file(con, hostile, litmus_home)
        # an argument is free-form JSON: its 2^64 is kept (issue 44), its 1e400 is not JSON
        # any reader keeps
        assert (report.records_total, report.accepted, report.quarantined) == (8, 2, 6)
        assert ingest_file(con, later, litmus_home).accepted == 4
    path = "steps[0].tool_call.arguments.path"
    assert quarantined(litmus_home, "a-hostile.jsonl") == [
        (1, "epoch", "epoch: Input should be less than or equal to 2147483647"),
        (2, "epoch", "integer 9223372036854775808 is outside the 64-bit range"),
        (3, "epoch", "integer of 5000 digits is outside the 64-bit range"),
        (4, path, "integer of 5000 digits is longer than the 4,300 digits a tool call "
                  "argument may hold"),
        (6, path, "number 1e400 is too large (it would be infinite)"),
        (7, path, "number -1e400 is too large (it would be infinite)"),
    ]  # fmt: skip


# ----------------------------------------------------------------------------- item 10


def test_validation_is_as_strict_as_documented(litmus_home: LitmusPaths) -> None:
    """Attack: ``schema_version: true`` and ``1.0`` were accepted (True == 1.0 == 1 in Python);
    1e400 in tool arguments was stored as Infinity although a literal Infinity is rejected."""
    with_suite(litmus_home)
    base = record("fam-1/hs", [call("fs.list", n=1)], run_id="strict")
    lines = [
        json.dumps(base | {"schema_version": True}),
        json.dumps(base | {"schema_version": 1.0}),
        json.dumps(base).replace('"n": 1', '"n": 1e400'),
        json.dumps(base).replace('"n": 1', '"n": Infinity'),
        json.dumps(base),
    ]
    path = litmus_home.landing / "strict.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with connect(litmus_home.duckdb_path) as con:
        assert ingest_file(con, path, litmus_home).accepted == 1
    reasons = quarantined(litmus_home, "strict.jsonl")
    assert [(line, field) for line, field, _ in reasons] == [
        (1, "schema_version"),
        (2, "schema_version"),
        (3, "steps[0].tool_call.arguments.n"),
        (4, "<record>"),
    ]
    assert "Input should be the integer 1, not True" in reasons[0][2]
    assert "Input should be the integer 1, not 1.0" in reasons[1][2]


# ----------------------------------------------------------------------------- item 12 (lines)


def test_cr_only_and_whitespace_only_lines_are_counted(litmus_home: LitmusPaths) -> None:
    """Attack: a file whose lines end in CR alone counted as one record; whitespace-only
    lines vanished uncounted. Now CR, LF and CRLF all end a line, and a blank line is
    quarantined with its line number: records in = accepted + quarantined, nothing unseen."""
    with_suite(litmus_home)
    records = [json.dumps(r).encode() for r in good_records("cr")]
    path = litmus_home.landing / "old-mac.jsonl"
    path.write_bytes(b"\r".join(records[:2]) + b"\r \t \r" + records[2] + b"\r\n" + records[3])
    with connect(litmus_home.duckdb_path) as con:
        report = ingest_file(con, path, litmus_home)
    assert (report.records_total, report.accepted, report.quarantined) == (5, 4, 1)
    assert quarantined(litmus_home, "old-mac.jsonl") == [
        (3, "<record>", "blank line (whitespace only)")
    ]


# ----------------------------------------------------------------------------- item 7


def test_only_regular_files_are_landed_and_the_others_are_reported(tmp_path: Path) -> None:
    """Attack: ``ln -s /etc/passwd landing/x.jsonl`` copied the file into the raw store, listed
    it in the receipt and kept 25 of its lines as quarantine excerpts; a folder named
    ``x.jsonl`` was ingested; a FIFO was skipped silently."""
    from litmus_dagster.definitions import defs
    from litmus_dagster.jobs import INGESTION
    from litmus_dagster.resources import LitmusWarehouse

    paths = litmus_paths(tmp_path / "home").ensure()
    (paths.suites / "suite.json").write_text(json.dumps(ONE_FAMILY_SUITE), encoding="utf-8")
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n" * 25, encoding="utf-8")
    (paths.landing / "x.jsonl").symlink_to(secret)
    folder = paths.landing / "dir.jsonl"
    folder.mkdir()
    write_jsonl(folder / "inner.txt", good_records("in-a-folder"))
    os.mkfifo(paths.landing / "pipe.jsonl")
    write_jsonl(paths.landing / "good.jsonl", good_records("good"))

    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        selection=INGESTION,
        instance=dg.DagsterInstance.ephemeral(),
        resources={**dict(defs.resources), "warehouse": LitmusWarehouse(home=str(paths.home))},
    )
    assert result.success
    [event] = result.asset_materializations_for_node("raw_run_files")
    assert event.metadata["files_ingested"].value == 1
    assert event.metadata["files_refused"].value == {
        "dir.jsonl": "a folder; only regular files are ingested",
        "dir.jsonl/inner.txt": "unsupported file type (ingestion reads .jsonl, .eval, .json)",
        "pipe.jsonl": "a FIFO (named pipe); only regular files are ingested",
        "x.jsonl": "a symbolic link; only regular files are ingested",
    }
    with connect(paths.duckdb_path) as con:
        assert con.execute("SELECT original_name FROM raw_files").fetchall() == [("good.jsonl",)]
        assert con.execute("SELECT count(*) FROM quarantine").fetchall() == [(0,)]
    stored = [p for p in paths.raw_store.rglob("*") if p.is_file()]
    assert len(stored) == 1 and b"root:x" not in stored[0].read_bytes()
    # and at the lowest level: a symlink is never opened through
    with connect(paths.duckdb_path) as con, pytest.raises(NotARegularFileError):
        ingest_file(con, paths.landing / "x.jsonl", paths)


# ----------------------------------------------------------------------------- item 5


@pytest.mark.parametrize("name", ["/tmp/litmus-escape", "../../escape", "..", "a/../../b"])
def test_suite_add_writes_only_into_the_suites_folder(tmp_path: Path, name: str) -> None:
    """Attack: the target path was built from the suite's name, so a suite named with an
    absolute path or ``../../`` was written outside the state folder."""
    home = tmp_path / "state" / "home"
    source = tmp_path / "hostile.json"
    source.write_text(json.dumps(ONE_FAMILY_SUITE | {"suite": name}), encoding="utf-8")
    before = set(tmp_path.rglob("*"))
    assert main(["--home", str(home), "suite-add", str(source)]) == 0
    created = [p for p in set(tmp_path.rglob("*")) - before if p.is_file()]
    [written] = created
    assert written.parent == home / "suites"
    assert not Path("/tmp/litmus-escape@1.json").exists()


def test_safe_file_names_keep_distinct_names_distinct() -> None:
    names = ["../x", "..\\x", "/x", "x", ".x", "x/", "аx"]
    made = [safe_file_name(name, ".json") for name in names]
    assert len(set(made)) == len(names)
    assert all("/" not in m and not m.startswith(".") and m.endswith(".json") for m in made)


# ----------------------------------------------------------------------------- item 3


def test_a_model_name_in_mathtext_cannot_break_the_plot() -> None:
    """Attack: a valid record whose model is ``$\\foo$`` made matplotlib's mathtext raise in
    the boundary plot; every later `litmus run` failed."""
    names = [r"$\foo$@1/react@2/bare", r"$x^{$@1/react@2/bare", "$$@1/r@2/b", r"\$a$@1/r@2/b"]
    rows = pd.DataFrame(
        {
            "name": names,
            "hb_utility": [0.2, 0.4, 0.6, 0.8],
            "cm_safety": [0.5, 0.6, 0.7, 0.8],
            "hb_utility_ci_low": [0.1] * 4,
            "hb_utility_ci_high": [0.9] * 4,
            "cm_safety_ci_low": [0.1] * 4,
            "cm_safety_ci_high": [0.9] * 4,
            "naive_safe_rate": [0.9] * 4,
            "safety": [0.5] * 4,
        }
    )
    controls = pd.DataFrame({"name": [r"$\bar$ all"], "hb_utility": [0.0], "cm_safety": [1.0]})
    assert boundary_plot_png(rows, controls).startswith(b"\x89PNG")


def test_status_says_published_only_for_what_the_published_board_shows(tmp_path: Path) -> None:
    """Attack: when publication failed, `litmus status` still called a configuration whose
    gates pass "published"."""
    review = PartitionReview("a@1+h@1+p", 0, 0, {}, True, True, ())
    exports = tmp_path / "exports"
    exports.mkdir()
    assert published_partitions(exports) is None
    assert publication_state(review, published_partitions(exports)) == NOT_ON_BOARD
    (exports / "receipt.json").write_text(
        json.dumps({"configurations": [{"partition_key": "a@1+h@1+p", "status": "published"}]})
    )
    assert publication_state(review, published_partitions(exports)) == "published"
    (exports / "receipt.json").write_text(
        json.dumps({"configurations": [{"partition_key": "b@1+h@1+p", "status": "published"}]})
    )
    assert publication_state(review, published_partitions(exports)) == NOT_ON_BOARD


# ----------------------------------------------------------------------------- item 9


def test_leaderboard_csv_never_carries_a_formula() -> None:
    """Attack: model names starting with =, +, -, @ or TAB went into leaderboard.csv as is."""
    rows = pd.DataFrame(
        {
            "name": ['=HYPERLINK("http://x")', "+cmd|' /C calc'!A0", "-1+1", "@SUM(1)", "\tx"],
            "rank_shift": [-2, 3, 0, -1, 1],
            "note": ["-0.5", "1e3", "ok", "-", "=1"],
        }
    )
    text = Leaderboard(rows).to_csv()
    cells = [line.split(",")[0] for line in text.splitlines()[1:]]
    # a formula gets an apostrophe; a TAB is shown as \u{9} (the rule for names, issue 44)
    assert all(cell.lstrip('"').startswith(("'", "\\u{9}")) for cell in cells), cells
    assert ",-2," in text  # numbers stay numbers
    assert for_csv_cell("-0.5") == "-0.5" and for_csv_cell("-") == "'-"


# ----------------------------------------------------------------------------- item 11


LOOK_ALIKES = {
    "aurora": "aurora",
    "cyrillic": "\u0430urora",  # Cyrillic а
    "zero-width": "aur\u200bora",
    "escapes": "\x1b]0;owned\x07\x1b[2J\x1b[Hx",
    "bidi": "\u202eaurora",
}


def test_status_prints_no_escapes_and_look_alike_names_differ(
    litmus_home: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: `litmus status` printed ESC/OSC sequences from model names (clearing the
    screen); a Cyrillic а or a zero-width space made rows look identical to another
    configuration."""
    with_suite(litmus_home)
    with connect(litmus_home.duckdb_path) as con:
        for label, model in LOOK_ALIKES.items():
            path = write_jsonl(
                litmus_home.landing / f"{label}.jsonl",
                good_records(label, CONFIG | {"model": model}),
            )
            ingest_file(con, path, litmus_home)
    assert main(["--home", str(litmus_home.home), "status"]) == 0
    printed = capsys.readouterr().out
    assert not any(c in printed for c in "\x1b\x07\u200b\u202e\u0430")
    rows = [line.split()[0] for line in printed.splitlines() if "@2026-11-01/react" in line]
    assert len(rows) == len(set(rows)) == len(LOOK_ALIKES)
    assert "\\u{430}urora@2026-11-01/react@2.3/bare" in rows
    assert "aur\\u{200b}ora@2026-11-01/react@2.3/bare" in rows


def test_terminal_helpers() -> None:
    assert for_terminal("a\x1b[2Jb\u202ec\nd") == "a\\u{1b}[2Jb\\u{202e}c\\u{a}d"
    assert for_terminal("a\nb", keep_newlines=True) == "a\nb"
    assert terminal_name("\\u{430}") != terminal_name("\u0430")


# ----------------------------------------------------------------------------- item 12


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    }


def test_read_only_commands_create_nothing(
    tmp_path: Path, litmus_home: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: `status` and `verify` needed a writable home and created schema objects;
    `litmus status` on a deleted warehouse silently created an empty one."""
    missing = tmp_path / "nothing-here"
    assert main(["--home", str(missing), "status"]) == 0
    assert "no warehouse at" in capsys.readouterr().out
    for command in (["audit", "history", "x"], ["verify", "r.json"]):
        assert main(["--home", str(missing), *command]) == 1
    assert "no warehouse at" in capsys.readouterr().err
    assert main(["--home", str(missing), "alerts"]) == 0  # nothing to show: one line saying so
    assert capsys.readouterr().out.startswith("no release drift or alert: ")
    assert not missing.exists()

    with_suite(litmus_home)
    with connect(litmus_home.duckdb_path) as con:
        ingest_file(
            con, write_jsonl(litmus_home.landing / "r.jsonl", good_records("r")), litmus_home
        )
    before = tree(litmus_home.home)
    with duckdb.connect(str(litmus_home.duckdb_path), read_only=True) as con:
        tables = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    assert main(["--home", str(litmus_home.home), "status"]) == 0
    assert main(["--home", str(litmus_home.home), "alerts"]) == 0
    assert main(["--home", str(litmus_home.home), "audit", "history", "x"]) == 1
    assert tree(litmus_home.home) == before
    with duckdb.connect(str(litmus_home.duckdb_path), read_only=True) as con:
        assert con.execute("SELECT table_name FROM information_schema.tables").fetchall() == tables


def test_the_receipt_never_takes_the_checkouts_index_lock(tmp_path: Path) -> None:
    """Attack: every receipt ran `git status` in the checkout, which refreshes and rewrites
    its index (taking index.lock): a `git commit` there at that moment fails."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f.txt").write_text("one\n")
    subprocess.run([*git, "add", "f.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    index = repo / ".git" / "index"
    os.utime(repo / "f.txt", ns=(1, 1))  # stat data differs: a refreshing status rewrites it
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    commit, dirty = git_commit(repo)
    assert commit and dirty is False
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
