"""Publishing the board, its plots, its warehouse table and its receipt together or not at all.

Everything one publication makes visible is written into a staging folder,
``<exports>/.staging``: the leaderboard files (CSV, Markdown, HTML, boundary plots), the plots
published beside them (release drift plots, the plug-in delta plot: :func:`is_exported_plot`)
and the rows of the warehouse's ``leaderboard`` table (:data:`STAGED_TABLE`, Arrow IPC); the
receipt, which holds the SHA-256 of each file and the digest of each row, is written there
last. Publication is then committed in three steps:

1. a journal, ``<exports>/.publication.json``, naming every staged file, is written atomically
   (write + rename): from this moment the publication has happened;
2. the ``leaderboard`` table is replaced by the staged rows, in one transaction;
3. each staged file is renamed over its published name (the receipt last), files of the
   previous publication that this one does not have are removed, then the journal and the
   staging folder.

A process killed anywhere leaves either the journal (the next :func:`recover` finishes steps
2 and 3: roll forward; both can be repeated) or no journal (an uncommitted staging folder,
which :func:`recover` deletes: the previous board, plots, table and receipt stay published,
untouched). ``litmus run`` recovers first, and ``litmus verify`` reports a journal it finds,
so nobody reads a board beside a receipt of another publication.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litmus.faults import crash_point
from litmus.files import write_atomically
from litmus.warehouse import atomically, replace_rows

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

# opens the warehouse a publication's table is replaced in (only when there is one to replace)
OpenWarehouse = Callable[[], AbstractContextManager["duckdb.DuckDBPyConnection"]]

STAGING_NAME = ".staging"
JOURNAL_NAME = ".publication.json"
RECEIPT_NAME = "receipt.json"
# Every file one publication may hold (the receipt lists the ones it has, with their digests):
# these, plus one boundary plot per suite board when there are several (SUITE_PLOT_PATTERN).
BOARD_FILES = ("leaderboard.csv", "leaderboard.md", "leaderboard.html", "boundary_plot.png")
PUBLISHED_FILES = (*BOARD_FILES, RECEIPT_NAME)
SUITE_PLOT_PATTERN = re.compile(r"boundary_plot_[A-Za-z0-9._@-]+\.png")
# Plots published beside the board (the receipt lists them among its exported files): one
# release drift plot per lineage (litmus.releases.drift_plot.drift_plot_file_name) and the
# plug-in delta plot.
EXPORTED_PLOT_PATTERN = re.compile(r"drift_[A-Za-z0-9._-]+\.png|plugin_deltas\.png")
# the rows of the warehouse's ``leaderboard`` table, staged with the files they are shown in
STAGED_TABLE = "leaderboard.arrow"


def is_board_file(name: str) -> bool:
    """A name a publication may hold besides its receipt (never a path: no separator)."""
    return name in BOARD_FILES or SUITE_PLOT_PATTERN.fullmatch(name) is not None


def is_published_file(name: str) -> bool:
    return name == RECEIPT_NAME or is_board_file(name)


def is_exported_plot(name: str) -> bool:
    """A plot a publication stages beside its board (never a path: no separator)."""
    return EXPORTED_PLOT_PATTERN.fullmatch(name) is not None


def _is_staged_file(name: str) -> bool:
    return is_published_file(name) or is_exported_plot(name)


def files_named(folder: Path, wanted: Callable[[str], bool]) -> tuple[str, ...]:
    """The names of the files in ``folder`` that are ``wanted``, sorted."""
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.name for p in folder.iterdir() if p.is_file() and wanted(p.name)))


def board_files(folder: Path) -> tuple[str, ...]:
    """The board files present in ``folder``, sorted."""
    return files_named(folder, is_board_file)


def other_exports(exports: Path) -> tuple[str, ...]:
    """Every entry of ``exports`` that is not the publication's own (its board files, its
    receipt, its staging folder and journal): release drift plots, the plug-in delta plot, and
    whatever else was put there. The receipt lists their digests; verify reports any it does
    not list."""
    if not exports.is_dir():
        return ()
    own = {STAGING_NAME, JOURNAL_NAME}
    return tuple(
        sorted(
            p.name for p in exports.iterdir() if p.name not in own and not is_published_file(p.name)
        )
    )


def staging_dir(exports: Path) -> Path:
    return exports / STAGING_NAME


def begin(exports: Path, open_warehouse: OpenWarehouse) -> Path:
    """A fresh, empty staging folder (after finishing or discarding an earlier one)."""
    recover(exports, open_warehouse)
    staging = staging_dir(exports)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def file_digests(folder: Path, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """name → {sha256, bytes} of each of ``names`` (default: every board file) in ``folder``."""
    digests = {}
    for name in board_files(folder) if names is None else names:
        path = folder / name
        if path.is_file():
            data = path.read_bytes()
            digests[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    return digests


def stage_table(staging: Path, rows: pa.Table) -> None:
    """Stage the ``leaderboard`` table's rows: it is replaced by them when the publication
    commits (Arrow IPC keeps every type exactly as the table will store it)."""
    import pyarrow as pa

    path = os.fspath(staging / STAGED_TABLE)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
        writer.write_table(rows)


def staged_table(staging: Path) -> pa.Table | None:
    """The staged rows of the ``leaderboard`` table, if any are staged."""
    import pyarrow as pa

    path = staging / STAGED_TABLE
    if not path.is_file():
        return None
    with pa.memory_map(os.fspath(path)) as source:
        return pa.ipc.open_file(source).read_all()


def exported_digests(exports: Path) -> dict[str, Any]:
    """The digests of every other file ``exports`` will hold once what is staged is
    published: the staged plots (which replace the published ones), and whatever else was
    put there (a receipt vouches for every file in exports)."""
    staging = staging_dir(exports)
    kept = tuple(name for name in other_exports(exports) if not is_exported_plot(name))
    staged_plots = files_named(staging, is_exported_plot)
    return {**file_digests(exports, kept), **file_digests(staging, staged_plots)}


def commit(exports: Path, open_warehouse: OpenWarehouse) -> list[Path]:
    """Publish everything staged (the table and the receipt included) as one unit; returns
    the paths."""
    staging = staging_dir(exports)
    staged = [
        *board_files(staging),
        *files_named(staging, is_exported_plot),
        *([RECEIPT_NAME] if (staging / RECEIPT_NAME).is_file() else []),
    ]
    if RECEIPT_NAME not in staged:
        raise RuntimeError(f"{staging}: nothing to publish without a receipt")
    if not (staging / STAGED_TABLE).is_file():
        raise RuntimeError(f"{staging}: nothing to publish without the board's table")
    # the commit point
    write_atomically(exports / JOURNAL_NAME, json.dumps({"files": staged}), durable=True)
    crash_point("publication.committed")
    _roll_forward(exports, staged, open_warehouse)
    return [exports / name for name in staged]


def recover(exports: Path, open_warehouse: OpenWarehouse) -> None:
    """Finish a committed publication a crash interrupted, or discard an uncommitted one."""
    journal = exports / JOURNAL_NAME
    if journal.is_file():
        try:
            staged = [str(name) for name in json.loads(journal.read_text("utf-8"))["files"]]
        except (OSError, ValueError, KeyError, TypeError):
            staged = None
        if staged is not None and all(_is_staged_file(name) for name in staged):
            _roll_forward(exports, staged, open_warehouse)
            return
        journal.unlink()  # unreadable: written by no LITMUS; the published files stand
    for leftover in exports.glob(f"*{JOURNAL_NAME}.partial-*"):  # write_atomically's
        leftover.unlink(missing_ok=True)
    shutil.rmtree(staging_dir(exports), ignore_errors=True)


def _roll_forward(exports: Path, staged: list[str], open_warehouse: OpenWarehouse) -> None:
    staging = staging_dir(exports)
    rows = staged_table(staging)
    if rows is not None:  # else replaced before the crash (it goes with the staging folder)
        with open_warehouse() as con:
            atomically(con, lambda: replace_rows(con, "leaderboard", rows), what="leaderboard")
    # the receipt last: until it is replaced, the old receipt is what a reader checks against
    for name in sorted(staged, key=lambda name: name == RECEIPT_NAME):
        source = staging / name
        if source.is_file():  # else moved before the crash
            os.replace(source, exports / name)
            crash_point("publication.file_moved")
    for name in [*board_files(exports), *files_named(exports, is_exported_plot), RECEIPT_NAME]:
        if name not in staged:  # e.g. no plot this time: the old one must not stay beside it
            (exports / name).unlink(missing_ok=True)
    (exports / JOURNAL_NAME).unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
