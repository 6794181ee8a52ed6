"""Whether a ``litmus run`` has anything to do: the state a successful run left behind.

A run that finished without failures records, in ``<home>/last_run_state.json``,

- ``inputs``: every landed run file and suite file (path, size, modification time) as they
  were when the run *started*;
- ``outputs``: the exported board files and a digest of the warehouse tables the board is
  built from (row counts and latest timestamps), as they were when it *ended*;
- ``code``: the code, dbt models, gate suites and ``LITMUS_*`` settings it ran with.

The next run compares; when everything is equal and the plan (``litmus.planning.plan``) names
nothing to label or re-audit, it has nothing new to do and says so instead of running
the pipeline. Anything unequal, unreadable or missing means "run": the check can only skip
work that would reproduce the board already published.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from litmus import PROJECT_DIR
from litmus.files import write_atomically
from litmus.runs import landed_files, suite_files
from litmus.settings import LitmusPaths

STATE_FILE = "last_run_state.json"
STATE_VERSION = 1
_REPOSITORY = PROJECT_DIR
_CODE_FOLDERS = ("litmus", "litmus_dagster", "dbt_project/models", "dbt_project/macros")
_CODE_FILES = ("dbt_project/dbt_project.yml",)
_LOCATION_SETTINGS = frozenset({"LITMUS_HOME", "LITMUS_DUCKDB_PATH"})
_CODE_SUFFIXES = (".py", ".sql", ".json", ".yml", ".yaml", ".txt")
# Tables whose change can change the board: (table, timestamp column or None).
_WAREHOUSE_TABLES: tuple[tuple[str, str | None], ...] = (
    ("raw_files", "ingested_at"),
    ("suites", "loaded_at"),
    ("trajectory_labels", "labeled_at"),
    ("refusal_signals", None),
    ("audited_trajectories", None),
    ("audit_verdicts", None),
    ("alerts", None),
    ("publication_gates", "evaluated_at"),
    ("quarantine", "quarantined_at"),
)


@dataclass(frozen=True)
class Observation:
    """The inputs as seen at the start of a run."""

    started_at: float
    inputs: dict[str, list[Any]]


def _stat_entry(path: Path, root: Path) -> list[Any] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return [str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns]


def observe_inputs(paths: LitmusPaths) -> Observation:
    """Landed and suite files by path, size and modification time, before anything reads
    them. A file still being written then is either ingested by the run once it holds
    still, or changes after this observation, so the next run sees it as new."""
    return Observation(started_at=time.time(), inputs=_current_inputs(paths))


def _landed(paths: LitmusPaths) -> list[Path]:
    return landed_files(paths) if paths.landing.exists() else []


def _suites(paths: LitmusPaths) -> list[Path]:
    return suite_files(paths) if paths.suites.exists() else []


def _current_inputs(paths: LitmusPaths) -> dict[str, list[Any]]:
    return {
        name: [e for e in (_stat_entry(p, paths.home) for p in files) if e is not None]
        for name, files in (("landing", _landed(paths)), ("suites", _suites(paths)))
    }


def code_digest() -> str:
    """The code and configuration a run executes (files by size and modification time)."""
    digest = hashlib.sha256()
    files: list[Path] = [_REPOSITORY / name for name in _CODE_FILES]
    for folder in _CODE_FOLDERS:
        root = _REPOSITORY / folder
        if root.exists():
            files.extend(p for p in root.rglob("*") if p.suffix in _CODE_SUFFIXES)
    files.append(_REPOSITORY / "expectations")
    files.extend((_REPOSITORY / "expectations").glob("*.json"))
    for path in sorted(files):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    # settings (alert sinks, signing key path, …) change outputs; only their digest is kept.
    # Where the state lives is not one of them: the state file and warehouse digest say it.
    for name in sorted(
        k for k in os.environ if k.startswith("LITMUS_") and k not in _LOCATION_SETTINGS
    ):
        digest.update(f"{name}\0{os.environ[name]}\n".encode("utf-8", "replace"))
    return digest.hexdigest()


def warehouse_digest(con: duckdb.DuckDBPyConnection) -> list[list[Any]]:
    """Row counts and latest timestamps of the tables the board is computed from."""
    out: list[list[Any]] = []
    for table, stamp in _WAREHOUSE_TABLES:
        latest = f"CAST(max({stamp}) AS VARCHAR)" if stamp else "NULL"
        count, last = con.execute(f"SELECT count(*), {latest} FROM {table}").fetchall()[0]
        out.append([table, int(count), last])
    return out


def _exports(paths: LitmusPaths) -> list[list[Any]]:
    if not paths.exports.exists():
        return []
    return [
        e
        for e in (_stat_entry(p, paths.home) for p in sorted(paths.exports.iterdir()))
        if e is not None and not e[0].endswith(".tmp")
    ]


def record_run_state(
    paths: LitmusPaths, observation: Observation, con: duckdb.DuckDBPyConnection
) -> None:
    """After a run that finished without failures: what it started from and ended with."""
    state = {
        "version": STATE_VERSION,
        "started_at": observation.started_at,
        "inputs": observation.inputs,
        "code": code_digest(),
        "warehouse": warehouse_digest(con),
        "exports": _exports(paths),
    }
    write_atomically(paths.home / STATE_FILE, json.dumps(state, indent=1))


def forget_run_state(paths: LitmusPaths) -> None:
    (paths.home / STATE_FILE).unlink(missing_ok=True)


def _same_entries(recorded: Iterable[Any], current: Iterable[Any]) -> bool:
    return sorted(map(tuple, recorded)) == sorted(map(tuple, current))


def nothing_new(paths: LitmusPaths) -> str | None:
    """Why the last run's board is still current (a sentence), or None when a run must go on.

    Checks, all of which must hold: the last run recorded its state; the code and settings
    are the same; no landed or suite file appeared, changed or vanished; the warehouse tables
    and the exported board are as that run left them; and no configuration is stale, needs
    re-auditing or lacks its gate verdicts (e.g. rows ingested without labels).
    """
    try:
        state = json.loads((paths.home / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        return None
    if state.get("code") != code_digest():
        return None
    current = _current_inputs(paths)
    recorded = state.get("inputs") or {}
    for name in ("landing", "suites"):
        if not _same_entries(recorded.get(name) or [], current[name]):
            return None
    if not _same_entries(state.get("exports") or [], _exports(paths)):
        return None
    from litmus.warehouse import connect, warehouse_exists

    if not warehouse_exists(paths.duckdb_path):
        return None
    from litmus.planning.plan import compute_plan, read_facts

    with connect(paths.duckdb_path) as con:
        if warehouse_digest(con) != state.get("warehouse"):
            return None
        facts = read_facts(con)
    if not compute_plan(facts).empty:  # what `litmus run` would label or re-audit
        return None
    statuses = facts.statuses
    n_files = len(current["landing"])
    return (
        f"nothing new since the last run: {n_files} landed file(s) already ingested, "
        f"{len(statuses)} configuration(s) labeled, audited and gated with the current code; "
        "the published board is current"
    )
