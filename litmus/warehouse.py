"""The embedded DuckDB warehouse: connection discipline and the table definitions.

DuckDB allows one process at a time to hold a database file open for writing (and a
read-write holder excludes every other process), so every connection takes an exclusive
advisory lock on ``<db>.lock`` first (filelock; a read-only connection takes a shared one).
Concurrent Dagster steps or CLI commands then wait their turn instead of failing with a lock
error. The wait is bounded and reported.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from litmus.errors import LitmusError

DEFAULT_LOCK_TIMEOUT_S = 900.0


class WarehouseBusyError(RuntimeError):
    """Another process held the warehouse for longer than the allowed wait."""


class WarehouseUpgradeError(LitmusError):
    """A warehouse written by an older LITMUS that cannot be upgraded as it is."""


class WarehouseMissingError(LitmusError):
    """A command that only reads found no warehouse (it never creates one)."""


# Told once per wait when a lock is held by another process (the CLI prints it); None: quiet.
_wait_notice: Callable[[str], None] | None = None


def set_wait_notice(notice: Callable[[str], None] | None) -> None:
    """Who hears "waiting for the warehouse" (the CLI's stderr); None keeps waits silent."""
    global _wait_notice
    _wait_notice = notice


@contextmanager
def writer_lock(db_path: Path, timeout_s: float) -> Iterator[None]:
    """The exclusive lock on ``<db>.lock`` (filelock's ``flock``). The lock file is kept on
    release: readers take a shared ``flock`` on the same file (:func:`reader_lock`)."""
    from filelock import FileLock, Timeout  # on use: read-only commands never take it

    lock_path = db_path.with_name(db_path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path, mode=0o644, preserve_lock_file=True, poll_interval=0.05)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if _wait_notice is not None:  # say once why nothing seems to happen
            _wait_notice(_waiting_message(db_path))
        try:
            lock.acquire(timeout=timeout_s)
        except Timeout:
            raise WarehouseBusyError(_busy_message(db_path, timeout_s)) from None
    try:
        yield
    finally:
        lock.release()


def _waiting_message(db_path: Path) -> str:
    return f"waiting for {db_path.name}: another LITMUS process holds it (lock {db_path.name}.lock)"


def _busy_message(db_path: Path, timeout_s: float) -> str:
    return (
        f"warehouse {db_path} stayed busy for {timeout_s:.0f}s "
        "(another LITMUS process is writing to it)"
    )


@contextmanager
def reader_lock(db_path: Path, timeout_s: float) -> Iterator[None]:
    """A shared lock: waits for a writer, never for another reader. Creates nothing: with no
    lock file (or one this user cannot open) there is no writer to wait for."""
    lock_path = db_path.with_name(db_path.name + ".lock")
    try:
        fd: int | None = os.open(lock_path, os.O_RDONLY)
    except OSError:
        fd = None
    if fd is None:
        yield
        return
    with _flocked(fd, db_path, timeout_s, fcntl.LOCK_SH):
        yield


@contextmanager
def _flocked(fd: int, db_path: Path, timeout_s: float, mode: int) -> Iterator[None]:
    told = False
    try:
        deadline = time.monotonic() + timeout_s
        delay = 0.02
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WarehouseBusyError(_busy_message(db_path, timeout_s)) from None
                if not told and _wait_notice is not None:
                    told = True  # say once why nothing seems to happen
                    _wait_notice(_waiting_message(db_path))
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


@contextmanager
def connect(
    db_path: str | Path, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse with the cross-process writer lock held for the connection's life."""
    path = Path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with writer_lock(path, timeout_s):
        con = duckdb.connect(str(path))
        try:
            try:
                ensure_schema(con)
            except WarehouseUpgradeError as error:
                raise WarehouseUpgradeError(f"{path}: {error}") from None
            yield con
        finally:
            con.close()


@contextmanager
def connect_read_only(
    db_path: str | Path, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open an existing warehouse for reading only (``litmus status``, ``verify``): nothing
    is created, not the file, its folder or a table, and a read-only home is enough."""
    path = Path(db_path)
    if not path.is_file():
        raise WarehouseMissingError(
            f"no warehouse at {path}: nothing has been ingested here (`litmus run` creates "
            "it; --home picks another state folder)"
        )
    with reader_lock(path, timeout_s):
        con = duckdb.connect(str(path), read_only=True)
        try:
            yield con
        finally:
            con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the block as one DuckDB transaction: committed at its end, rolled back when
    anything (an interrupt included) escapes it."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


# What DuckDB may hold in memory while a file is ingested: the file's uncommitted rows spill
# to the database's temporary folder (``<db>.tmp``) beyond it, so a large file's ingestion
# stays within a bounded footprint instead of about four times the file (issue 14).
INGEST_MEMORY_LIMIT = "384MB"


@contextmanager
def bounded_memory(
    con: duckdb.DuckDBPyConnection, limit: str = INGEST_MEMORY_LIMIT
) -> Iterator[None]:
    """DuckDB's memory limit set to ``limit`` for the block, then put back as it was."""
    setting = "SELECT current_setting('memory_limit')"
    before = con.execute(setting).fetchall()[0][0]
    con.execute("RESET memory_limit")
    # the setting reads back rounded: setting that text again would lower it a little
    was_default = con.execute(setting).fetchall()[0][0] == before
    con.execute(f"SET memory_limit = '{limit}'")
    try:
        yield
    finally:
        con.execute("RESET memory_limit" if was_default else f"SET memory_limit = '{before}'")


SCHEMA_DDL = """
CREATE TABLE IF NOT EXISTS raw_files (
    file_hash VARCHAR PRIMARY KEY,
    original_name VARCHAR NOT NULL,
    stored_path VARCHAR NOT NULL,
    file_format VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL,
    records_total BIGINT NOT NULL,
    records_accepted BIGINT NOT NULL,
    records_quarantined BIGINT NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS suites (
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    suite_hash VARCHAR NOT NULL,
    source_name VARCHAR NOT NULL,
    n_families INTEGER NOT NULL,
    n_instances INTEGER NOT NULL,
    complete_siblings BOOLEAN NOT NULL,
    loaded_at TIMESTAMP NOT NULL,
    PRIMARY KEY (suite, suite_version)
);
-- The suite's sibling_policy (complete | partial), read by the sibling-consistency gate.
ALTER TABLE suites ADD COLUMN IF NOT EXISTS sibling_policy VARCHAR;
-- Suite files already stored, by the SHA-256 of their bytes: a file seen before is not
-- parsed and validated again on every run (a 125,000-instance suite takes tens of seconds).
CREATE TABLE IF NOT EXISTS suite_files (
    file_sha256 VARCHAR PRIMARY KEY,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    first_seen_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS suite_instances (
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    family_id VARCHAR NOT NULL,
    category VARCHAR NOT NULL,
    subcategory VARCHAR,
    instance_id VARCHAR NOT NULL,
    split VARCHAR NOT NULL,
    request_harm_class VARCHAR NOT NULL,
    declared_harm_class VARCHAR,
    prompt VARCHAR NOT NULL,
    pair_id VARCHAR,
    register VARCHAR,
    n_prohibited INTEGER NOT NULL,
    n_completion INTEGER NOT NULL,
    PRIMARY KEY (suite, suite_version, instance_id)
);
-- a private family's prompts never leave the warehouse (docs/statistics.md)
ALTER TABLE suite_instances ADD COLUMN IF NOT EXISTS private BOOLEAN DEFAULT false;
CREATE TABLE IF NOT EXISTS oracle_matchers (
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,          -- prohibited | completion
    matcher_idx INTEGER NOT NULL,
    tool VARCHAR NOT NULL,
    -- every listed argument with its fnmatch pattern and two translations of it: a DuckDB
    -- GLOB pattern when one exists (fast), else an RE2 regex (see litmus/globmatch.py)
    arg_patterns STRUCT(
        arg_key VARCHAR, pattern VARCHAR, glob_pattern VARCHAR, regex_pattern VARCHAR
    )[] NOT NULL
);
CREATE TABLE IF NOT EXISTS raw_trajectories (
    trajectory_id VARCHAR PRIMARY KEY,
    partition_key VARCHAR NOT NULL,
    config_key VARCHAR NOT NULL,
    lineage_key VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    model_release VARCHAR NOT NULL,
    harness VARCHAR NOT NULL,
    harness_version VARCHAR NOT NULL,
    plugin VARCHAR NOT NULL,
    policy_version VARCHAR,
    run_id VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL,
    epoch INTEGER NOT NULL,
    termination VARCHAR NOT NULL,
    final_response VARCHAR,
    n_steps INTEGER NOT NULL,
    has_unguarded_effect BOOLEAN NOT NULL,
    unguarded_effect_prohibited BOOLEAN,
    unguarded_effect_description VARCHAR,
    harm_prevented_by VARCHAR,
    judge_refusal VARCHAR,
    judge_task_completed BOOLEAN,
    judge_helpfulness INTEGER,
    judge_tool_call_risk INTEGER,
    judge_engagement INTEGER,
    judge_name VARCHAR,
    source_file_hash VARCHAR NOT NULL,
    source_line BIGINT NOT NULL,
    record_sha256 VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS raw_steps (
    trajectory_id VARCHAR NOT NULL,
    step_idx INTEGER NOT NULL,
    thought VARCHAR,
    message VARCHAR,
    tool_name VARCHAR,
    arguments_json VARCHAR,
    -- argument name → the text patterns match against (strings as-is, else compact JSON)
    match_args MAP(VARCHAR, VARCHAR),
    status VARCHAR,
    output VARCHAR,
    -- copied from the step's trajectory at ingestion, so the labeler reads a partition's
    -- steps and matches them to their oracle without joining a million trajectories first
    partition_key VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL
);
-- A step's incoming turn (SPEC §4 ``input``): kept for the auditor, never read as agent text.
ALTER TABLE raw_steps ADD COLUMN IF NOT EXISTS input_role VARCHAR;
ALTER TABLE raw_steps ADD COLUMN IF NOT EXISTS input_content VARCHAR;
CREATE TABLE IF NOT EXISTS refusal_signals (
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    classifier_version VARCHAR NOT NULL,
    classifier_refusal VARCHAR NOT NULL,
    classifier_step INTEGER,
    classifier_confidence DOUBLE NOT NULL,
    classifier_engagement INTEGER
);
-- An LLM refusal judge's verdict per trajectory, with provenance (litmus/refusal_judge.py).
-- judge_refusal is NULL when the judge gave no verdict (status says why); the labeler reads
-- the rows of the configured judge and prompt version only.
CREATE TABLE IF NOT EXISTS refusal_judgments (
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    judge_model VARCHAR NOT NULL,
    prompt_version VARCHAR NOT NULL,
    input_sha256 VARCHAR NOT NULL,
    judge_refusal VARCHAR,
    status VARCHAR NOT NULL,
    detail VARCHAR,
    cached BOOLEAN NOT NULL,
    judged_at TIMESTAMP NOT NULL
);
-- The labeler's output: decisions and evidence only, one row per trajectory. People and dbt
-- read the view labeled_trajectories, which joins in the trajectory and suite columns.
CREATE TABLE IF NOT EXISTS trajectory_labels (
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    -- NULL (unknown) on a harmful instance that declares no prohibited effect (SPEC §5)
    attempted BOOLEAN,
    realized BOOLEAN,
    blocked BOOLEAN,
    first_prohibited_step INTEGER,
    refusal VARCHAR NOT NULL,
    refusal_step INTEGER,
    refusal_source VARCHAR NOT NULL,
    complied BOOLEAN NOT NULL,
    completed BOOLEAN,
    refusal_uncertain BOOLEAN NOT NULL,
    label VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,
    harm_prevented_by VARCHAR,
    naive_label VARCHAR NOT NULL,
    engagement INTEGER,
    engagement_source VARCHAR,
    classifier_refusal VARCHAR,
    classifier_step INTEGER,
    classifier_confidence DOUBLE,
    labeler_version VARCHAR NOT NULL,
    labeled_at TIMESTAMP NOT NULL
);
-- Why a needs_audit row needs a person (litmus.labeler.decision.AUDIT_REASONS); NULL otherwise.
ALTER TABLE trajectory_labels ADD COLUMN IF NOT EXISTS audit_reason_code VARCHAR;
CREATE OR REPLACE VIEW labeled_trajectories AS
SELECT l.trajectory_id, l.partition_key, t.config_key, t.lineage_key, t.model, t.model_release,
       t.harness, t.harness_version, t.plugin, t.policy_version, t.run_id, t.suite,
       t.suite_version, i.family_id, i.category, i.subcategory, t.instance_id, i.split,
       i.request_harm_class, i.pair_id, i.register, t.epoch, l.attempted, l.realized,
       l.blocked, l.first_prohibited_step, l.refusal, l.refusal_step, l.refusal_source,
       l.complied, l.completed, l.refusal_uncertain, l.label, l.outcome, l.harm_prevented_by,
       l.naive_label, l.engagement, l.engagement_source, t.judge_refusal, l.classifier_refusal,
       l.classifier_step, l.classifier_confidence, l.audit_reason_code, l.labeler_version,
       l.labeled_at
FROM trajectory_labels l
JOIN raw_trajectories t USING (trajectory_id)
JOIN suite_instances i USING (suite, suite_version, instance_id);
CREATE TABLE IF NOT EXISTS quarantine (
    source_file_hash VARCHAR NOT NULL,
    source_name VARCHAR NOT NULL,
    line_no BIGINT NOT NULL,
    field VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    raw_excerpt VARCHAR,
    quarantined_at TIMESTAMP NOT NULL
);
"""


# Columns raw_steps gained after its first release, each filled from the step's trajectory.
_STEP_CONTEXT_COLUMNS = ("partition_key", "suite", "suite_version", "instance_id")


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    _upgrade_raw_steps(con)
    con.execute(SCHEMA_DDL)
    _allow_unknown_harm_evidence(con)


def _allow_unknown_harm_evidence(con: duckdb.DuckDBPyConnection) -> None:
    """Labels written before oracle-less instances existed declared the harm evidence NOT NULL;
    it is now NULL (unknown) on a harmful instance without an oracle."""
    still_required = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_name = 'trajectory_labels' AND is_nullable = 'NO' "
        "AND column_name IN ('attempted', 'realized', 'blocked') ORDER BY 1"
    ).fetchall()
    for (column,) in still_required:
        con.execute(_DROP_NOT_NULL[column])


_DROP_NOT_NULL = {
    "attempted": "ALTER TABLE trajectory_labels ALTER COLUMN attempted DROP NOT NULL",
    "realized": "ALTER TABLE trajectory_labels ALTER COLUMN realized DROP NOT NULL",
    "blocked": "ALTER TABLE trajectory_labels ALTER COLUMN blocked DROP NOT NULL",
}


def _upgrade_raw_steps(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild a raw_steps written before the step context columns existed, in one transaction."""
    existing = table_columns(con, "raw_steps")
    present = [c for c in _STEP_CONTEXT_COLUMNS if c in existing]
    if not existing or len(present) == len(_STEP_CONTEXT_COLUMNS):
        return
    if present:
        raise WarehouseUpgradeError(
            f"cannot upgrade raw_steps: it has only some of {_STEP_CONTEXT_COLUMNS}"
        )
    with transaction(con):
        con.execute("ALTER TABLE raw_steps RENAME TO raw_steps_before_upgrade")
        con.execute(SCHEMA_DDL)
        before = con.execute("SELECT count(*) FROM raw_steps_before_upgrade").fetchall()[0][0]
        after = con.execute(
            "INSERT INTO raw_steps BY NAME "
            "SELECT s.*, t.partition_key, t.suite, t.suite_version, t.instance_id "
            "FROM raw_steps_before_upgrade s JOIN raw_trajectories t USING (trajectory_id)"
        ).fetchall()[0][0]
        if after != before:
            raise WarehouseUpgradeError(
                f"cannot upgrade raw_steps: {before - after} steps have no trajectory"
            )
        con.execute("DROP TABLE raw_steps_before_upgrade")


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    # fetchall, not fetchone: DuckDB 2 keeps a half-read result open, and the next con.sql()
    # on this connection would then fail
    rows = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchall()
    return bool(rows and rows[0][0])


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The column names of a table (or view) in ``main``, in declaration order."""
    return [
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
    ]


# The spot-check sample (litmus.spotcheck draws it at publication; litmus.audit creates it
# with the verdict tables).
SPOT_CHECK_SAMPLE_DDL = """
CREATE TABLE IF NOT EXISTS spot_check_sample (
    partition_key VARCHAR NOT NULL,
    trajectory_id VARCHAR NOT NULL,
    request_harm_class VARCHAR NOT NULL,
    stratum VARCHAR NOT NULL,             -- the rule label
    stratum_size BIGINT NOT NULL,         -- rule-decided rows of this label in the configuration
    stratum_sample_size BIGINT NOT NULL,
    draw_rank BIGINT NOT NULL,
    seed BIGINT NOT NULL,
    share DOUBLE NOT NULL,
    minimum BIGINT NOT NULL,
    PRIMARY KEY (trajectory_id)
)
"""
