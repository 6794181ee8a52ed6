"""Ingestion (SPEC §4, §10): landed files → immutable raw store → validated rows + quarantine.

Guarantees, each checked in code or by a test:

- every landed file is copied into the raw store under its SHA-256, read-only;
- every record ends up either accepted or quarantined with file, line, field and reason
  (``records_total == accepted + quarantined`` is asserted per file);
- a file is ingested in one DuckDB transaction, so a crash part-way leaves no partial file
  behind, and re-ingesting a file already recorded in ``raw_files`` is a no-op;
- records stream through in bounded batches (Arrow → DuckDB), never one giant list.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
from pydantic import ValidationError

from litmus.errors import LitmusError
from litmus.formats import RunRecord
from litmus.globmatch import match_text
from litmus.keys import config_key, lineage_key, partition_key_for, trajectory_id
from litmus.settings import LitmusPaths
from litmus.suite import DuplicateKeyError, format_location, reject_duplicate_keys
from litmus.warehouse import transaction

if TYPE_CHECKING:
    from litmus.importers.inspect_log import ImportMapping

BATCH_RECORDS = 5_000
EXCERPT_CHARS = 300

ProgressCallback = Callable[[int], None]


@dataclass(frozen=True)
class RecordProblem:
    """A record that could not be mapped before validation (e.g. by an importer)."""

    field: str
    reason: str
    excerpt: str | None = None


# One item of a source: its line (or sample) number and either raw bytes, an already-parsed
# object, or a problem found by an importer.
SourceItem = tuple[int, bytes | dict[str, Any] | RecordProblem]


@dataclass
class IngestReport:
    source_name: str
    file_hash: str
    stored_path: Path
    skipped: bool = False
    records_total: int = 0
    accepted: int = 0
    quarantined: int = 0
    partitions: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        if self.skipped:
            return f"{self.source_name}: already ingested ({self.file_hash[:12]}), nothing to do"
        return (
            f"{self.source_name}: {self.records_total} records, {self.accepted} accepted, "
            f"{self.quarantined} quarantined, {len(self.partitions)} configuration(s)"
        )


class _Rejected(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field, self.reason = field, reason


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def store_raw_file(path: Path, paths: LitmusPaths, digest: str) -> Path:
    """Copy into the content-addressed store; the name comes from the hash, never the input."""
    suffix = _format_suffix(path)
    target = paths.raw_store / digest[:2] / f"{digest}{suffix}"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_copies(target)
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    try:
        shutil.copyfile(path, partial)
        if file_sha256(partial) != digest:
            raise OSError(f"{path}: changed while being copied into the raw store")
        partial.chmod(0o444)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _remove_abandoned_copies(target: Path) -> None:
    """Delete half-written copies of ``target`` left by processes that no longer exist."""
    for leftover in target.parent.glob(target.name + ".partial-*"):
        pid_text = leftover.name.rpartition("-")[2]
        if pid_text.isdigit() and not _process_alive(int(pid_text)):
            leftover.unlink(missing_ok=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def _format_suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in (".jsonl", ".eval", ".json"):
        if name.endswith(suffix):
            return suffix
    return ".jsonl"


def detect_format(path: Path) -> str:
    suffix = _format_suffix(path)
    return {".jsonl": "native-jsonl", ".eval": "inspect-eval", ".json": "inspect-json"}[suffix]


def iter_jsonl_lines(path: Path) -> Iterator[SourceItem]:
    with path.open("rb") as handle:
        for line_no, line in enumerate(handle, start=1):
            if line.strip():
                yield line_no, line


# ----------------------------------------------------------------------------- validation


def _reject_constant(name: str) -> Any:
    raise _Rejected("<record>", f"non-standard JSON constant {name}")


def _parse_line(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Rejected("<record>", f"not valid UTF-8 (byte {exc.start} of the line)") from None
    try:
        value = json.loads(
            text, object_pairs_hook=reject_duplicate_keys, parse_constant=_reject_constant
        )
    except DuplicateKeyError as exc:
        raise _Rejected(exc.key, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise _Rejected("<record>", f"malformed JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise _Rejected("<record>", "JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise _Rejected("<record>", f"a record must be a JSON object, not {type(value).__name__}")
    return value


# A lone UTF-16 surrogate can only reach a parsed string through a \\uD800–\\uDFFF escape:
# strict UTF-8 decoding rejects encoded surrogates. A line without one skips the check below.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _validate(value: dict[str, Any], *, may_hold_surrogates: bool = True) -> RunRecord:
    try:
        record = RunRecord.model_validate(value)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        reason = "; ".join(f"{format_location(e['loc'])}: {e['msg']}" for e in errors[:5])
        if len(errors) > 5:
            reason += f"; … {len(errors) - 5} more"
        raise _Rejected(format_location(first["loc"]), reason) from None
    except RecursionError:
        raise _Rejected("<record>", "record nested too deeply") from None
    if not may_hold_surrogates:
        return record
    try:
        # DuckDB stores UTF-8; a lone surrogate from a "\ud800" escape cannot be stored.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise _Rejected("<record>", "string contains an unpaired UTF-16 surrogate") from None
    return record


# ----------------------------------------------------------------------------- staging


class _Batch:
    """Columnar buffers for one batch of accepted records."""

    TRAJECTORY_COLUMNS = (
        "trajectory_id",
        "partition_key",
        "config_key",
        "lineage_key",
        "model",
        "model_release",
        "harness",
        "harness_version",
        "plugin",
        "policy_version",
        "run_id",
        "suite",
        "suite_version",
        "instance_id",
        "epoch",
        "termination",
        "final_response",
        "n_steps",
        "has_unguarded_effect",
        "unguarded_effect_prohibited",
        "unguarded_effect_description",
        "harm_prevented_by",
        "judge_refusal",
        "judge_task_completed",
        "judge_helpfulness",
        "judge_tool_call_risk",
        "judge_engagement",
        "judge_name",
        "source_file_hash",
        "source_line",
        "record_sha256",
    )
    STEP_COLUMNS = (
        "source_line",
        "trajectory_id",
        "step_idx",
        "thought",
        "message",
        "tool_name",
        "arguments_json",
        "match_args",
        "status",
        "output",
    )

    def __init__(self) -> None:
        self.trajectories: dict[str, list[Any]] = {c: [] for c in self.TRAJECTORY_COLUMNS}
        self.steps: dict[str, list[Any]] = {c: [] for c in self.STEP_COLUMNS}
        # the same lists, in column order, for appending without a dict lookup per value
        self._trajectory_lists = [self.trajectories[c] for c in self.TRAJECTORY_COLUMNS]
        self._step_lists = [self.steps[c] for c in self.STEP_COLUMNS]

    def __len__(self) -> int:
        return len(self.trajectories["trajectory_id"])

    def add(self, record: RunRecord, file_hash: str, line_no: int, record_sha: str) -> str:
        cfg = record.config
        tid = trajectory_id(record.run_id, record.instance_id, record.epoch)
        judge = record.judgments
        effect = record.unguarded_effect
        partition_key = partition_key_for(cfg)
        values = (
            tid,
            partition_key,
            config_key(cfg),
            lineage_key(cfg),
            cfg.model,
            cfg.model_release,
            cfg.harness,
            cfg.harness_version,
            cfg.plugin,
            cfg.policy_version,
            record.run_id,
            record.suite,
            record.suite_version,
            record.instance_id,
            record.epoch,
            record.termination,
            record.final_response,
            len(record.steps),
            effect is not None,
            effect.prohibited if effect else None,
            effect.description if effect else None,
            record.harm_prevented_by,
            judge.refusal if judge else None,
            judge.task_completed if judge else None,
            judge.helpfulness if judge else None,
            judge.tool_call_risk if judge else None,
            judge.engagement if judge else None,
            judge.judge if judge else None,
            file_hash,
            line_no,
            record_sha,
        )
        for column, value in zip(self._trajectory_lists, values, strict=True):
            column.append(value)
        (
            step_lines,
            step_ids,
            step_indexes,
            thoughts,
            messages,
            tool_names,
            arguments_json,
            match_args,
            statuses,
            outputs,
        ) = self._step_lists
        for index, step in enumerate(record.steps):
            call, result = step.tool_call, step.tool_result
            step_lines.append(line_no)
            step_ids.append(tid)
            step_indexes.append(index)
            thoughts.append(step.thought)
            messages.append(step.message)
            if call is None:
                tool_names.append(None)
                arguments_json.append(None)
                match_args.append(None)
            else:
                tool_names.append(call.name)
                arguments_json.append(
                    json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
                )
                match_args.append([(key, match_text(v)) for key, v in call.arguments.items()])
            statuses.append(result.status if result else None)
            outputs.append(result.output if result else None)
        return partition_key


_STAGING_DDL = """
CREATE OR REPLACE TEMP TABLE staged_trajectories AS SELECT * FROM raw_trajectories LIMIT 0;
CREATE OR REPLACE TEMP TABLE staged_steps AS
    SELECT *, 0::BIGINT AS source_line FROM raw_steps LIMIT 0;
CREATE OR REPLACE TEMP TABLE staged_quarantine AS SELECT * FROM quarantine LIMIT 0;
"""

_TYPES: dict[str, pa.DataType] = {
    "epoch": pa.int32(),
    "n_steps": pa.int32(),
    "step_idx": pa.int32(),
    "judge_helpfulness": pa.int32(),
    "judge_tool_call_risk": pa.int32(),
    "judge_engagement": pa.int32(),
    "source_line": pa.int64(),
    "line_no": pa.int64(),
    "has_unguarded_effect": pa.bool_(),
    "unguarded_effect_prohibited": pa.bool_(),
    "judge_task_completed": pa.bool_(),
    "quarantined_at": pa.timestamp("us"),
    "match_args": pa.map_(pa.string(), pa.string()),
}


def _arrow(columns: dict[str, list[Any]]) -> pa.Table:
    return pa.table(
        {
            name: pa.array(values, type=_TYPES.get(name, pa.string()))
            for name, values in columns.items()
        }
    )


def _append(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, list[Any]]) -> None:
    frame = _arrow(columns)
    if frame.num_rows == 0:
        return
    con.register("incoming_batch", frame)
    names = ", ".join(columns)
    con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM incoming_batch")
    con.unregister("incoming_batch")


# ----------------------------------------------------------------------------- ingestion


def _known_instances(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], set[str]]:
    known: dict[tuple[str, str], set[str]] = {}
    for suite, version, instance_id in con.execute(
        "SELECT suite, suite_version, instance_id FROM suite_instances"
    ).fetchall():
        known.setdefault((suite, version), set()).add(instance_id)
    return known


def ingest_items(
    con: duckdb.DuckDBPyConnection,
    items: Iterable[SourceItem],
    *,
    source_name: str,
    file_hash: str,
    stored_path: Path,
    file_format: str,
    size_bytes: int,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Validate and store one source's records in a single transaction."""
    report = IngestReport(source_name, file_hash, stored_path)
    already = con.execute(
        "SELECT count(*) FROM raw_files WHERE file_hash = ?", [file_hash]
    ).fetchone()
    if already and already[0]:
        report.skipped = True
        return report

    known = _known_instances(con)
    suite_versions: dict[str, list[str]] = {}
    for suite, version in known:
        suite_versions.setdefault(suite, []).append(version)
    now = datetime.now(UTC).replace(tzinfo=None)
    quarantine: dict[str, list[Any]] = {
        c: []
        for c in (
            "source_file_hash",
            "source_name",
            "line_no",
            "field",
            "reason",
            "raw_excerpt",
            "quarantined_at",
        )
    }

    def quarantine_record(line_no: int, field_name: str, reason: str, excerpt: str | None) -> None:
        for column, value in (
            ("source_file_hash", file_hash),
            ("source_name", source_name),
            ("line_no", line_no),
            ("field", field_name),
            ("reason", reason),
            ("raw_excerpt", excerpt),
            ("quarantined_at", now),
        ):
            quarantine[column].append(value)

    with transaction(con):
        con.execute(_STAGING_DDL)
        batch = _Batch()
        for line_no, payload in items:
            report.records_total += 1
            excerpt: str | None = None
            try:
                if isinstance(payload, RecordProblem):
                    raise _Rejected(payload.field, payload.reason)
                if isinstance(payload, bytes):
                    excerpt = payload[:EXCERPT_CHARS].decode("utf-8", errors="replace")
                    record_sha = hashlib.sha256(payload.rstrip(b"\r\n")).hexdigest()
                    value = _parse_line(payload)
                    may_hold_surrogates = _SURROGATE_ESCAPE.search(payload) is not None
                else:
                    value = payload
                    may_hold_surrogates = True
                    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False)
                    excerpt = canonical[:EXCERPT_CHARS]
                    record_sha = hashlib.sha256(canonical.encode("utf-8", "replace")).hexdigest()
                record = _validate(value, may_hold_surrogates=may_hold_surrogates)
                versions = suite_versions.get(record.suite)
                if versions is None:
                    raise _Rejected("suite", f"unknown suite {record.suite!r} (load it first)")
                if record.suite_version not in versions:
                    raise _Rejected(
                        "suite_version",
                        f"suite/version mismatch: suite {record.suite!r} has no version "
                        f"{record.suite_version!r} (stored: {', '.join(sorted(versions))})",
                    )
                if record.instance_id not in known[(record.suite, record.suite_version)]:
                    raise _Rejected(
                        "instance_id",
                        f"unknown instance_id {record.instance_id!r} in suite "
                        f"{record.suite}@{record.suite_version}",
                    )
            except _Rejected as rejected:
                quarantine_record(line_no, rejected.field, rejected.reason, excerpt)
            else:
                batch.add(record, file_hash, line_no, record_sha)
                if len(batch) >= BATCH_RECORDS:
                    _flush(con, batch)
                    batch = _Batch()
            if progress is not None and report.records_total % 10_000 == 0:
                progress(report.records_total)
        _flush(con, batch)
        _append(con, "staged_quarantine", quarantine)
        _quarantine_duplicates(con, now, source_name)
        _publish_staged(con, report)
        if report.records_total != report.accepted + report.quarantined:
            raise AssertionError(
                f"{source_name}: reconciliation failed: {report.records_total} records in, "
                f"{report.accepted} accepted + {report.quarantined} quarantined"
            )
        con.execute(
            "INSERT INTO raw_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                file_hash,
                source_name,
                str(stored_path),
                file_format,
                size_bytes,
                report.records_total,
                report.accepted,
                report.quarantined,
                now,
            ],
        )
    if progress is not None:
        progress(report.records_total)
    return report


def _flush(con: duckdb.DuckDBPyConnection, batch: _Batch) -> None:
    _append(con, "staged_trajectories", batch.trajectories)
    _append(con, "staged_steps", batch.steps)


def _quarantine_duplicates(con: duckdb.DuckDBPyConnection, now: datetime, source_name: str) -> None:
    """SPEC §7: one trajectory per (run, instance, epoch), within this file and across files."""
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE duplicate_lines AS
        WITH ranked AS (
            SELECT s.trajectory_id, s.source_line, s.run_id, s.instance_id, s.epoch,
                   first_value(s.source_line) OVER (
                       PARTITION BY s.trajectory_id ORDER BY s.source_line) AS first_line,
                   row_number() OVER (
                       PARTITION BY s.trajectory_id ORDER BY s.source_line) AS occurrence
            FROM staged_trajectories s
        )
        SELECT r.source_line, r.trajectory_id,
               CASE WHEN e.trajectory_id IS NOT NULL
                    THEN 'duplicate (run_id, instance_id, epoch) = (' || r.run_id || ', '
                         || r.instance_id || ', ' || r.epoch || '): already ingested from '
                         || f.original_name || ' line ' || e.source_line
                    ELSE 'duplicate (run_id, instance_id, epoch) = (' || r.run_id || ', '
                         || r.instance_id || ', ' || r.epoch || '): first seen at line '
                         || r.first_line
               END AS reason
        FROM ranked r
        LEFT JOIN raw_trajectories e USING (trajectory_id)
        LEFT JOIN raw_files f ON f.file_hash = e.source_file_hash
        WHERE r.occurrence > 1 OR e.trajectory_id IS NOT NULL
        """
    )
    con.execute(
        """
        INSERT INTO staged_quarantine
        SELECT s.source_file_hash, f.source_name, d.source_line, 'instance_id', d.reason, NULL, ?
        FROM duplicate_lines d
        JOIN staged_trajectories s USING (source_line)
        CROSS JOIN (SELECT ? AS source_name) f
        """,
        [now, source_name],
    )
    for table in ("staged_trajectories", "staged_steps"):
        con.execute(
            f"DELETE FROM {table} WHERE source_line IN (SELECT source_line FROM duplicate_lines)"
        )


def _publish_staged(con: duckdb.DuckDBPyConnection, report: IngestReport) -> None:
    con.execute("INSERT INTO raw_trajectories SELECT * FROM staged_trajectories")
    # Each step carries its trajectory's partition and instance (see warehouse.raw_steps).
    steps_in = con.execute("SELECT count(*) FROM staged_steps").fetchall()[0][0]
    steps_out = con.execute(
        """
        INSERT INTO raw_steps BY NAME
        SELECT s.* EXCLUDE (source_line, partition_key, suite, suite_version, instance_id),
               t.partition_key, t.suite, t.suite_version, t.instance_id
        FROM staged_steps s
        JOIN staged_trajectories t
          ON t.source_line = s.source_line AND t.trajectory_id = s.trajectory_id
        """
    ).fetchall()[0][0]
    if steps_out != steps_in:
        raise RuntimeError(f"{steps_in - steps_out} staged steps lost their trajectory")
    con.execute("INSERT INTO quarantine SELECT * FROM staged_quarantine")
    report.accepted = con.execute("SELECT count(*) FROM staged_trajectories").fetchone()[0]
    report.quarantined = con.execute("SELECT count(*) FROM staged_quarantine").fetchone()[0]
    report.partitions = dict(
        con.execute(
            "SELECT partition_key, count(*) FROM staged_trajectories GROUP BY 1 ORDER BY 1"
        ).fetchall()
    )
    for reason, count in con.execute(
        "SELECT split_part(reason, ':', 1), count(*) FROM staged_quarantine GROUP BY 1"
    ).fetchall():
        report.reasons[reason] = count


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    paths: LitmusPaths,
    *,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Keep the file in the raw store, then ingest it from there (never from the landing copy)."""
    digest = file_sha256(path)
    stored = store_raw_file(path, paths, digest)
    file_format = detect_format(path)
    items: Iterable[SourceItem] = (
        iter_jsonl_lines(stored)
        if file_format == "native-jsonl"
        else _inspect_items(stored, load_inspect_mapping(paths))
    )
    return ingest_items(
        con,
        items,
        source_name=path.name,
        file_hash=digest,
        stored_path=stored,
        file_format=file_format,
        size_bytes=stored.stat().st_size,
        progress=progress,
    )


INSPECT_MAPPING_FILE = "inspect_mapping.json"


def load_inspect_mapping(paths: LitmusPaths) -> ImportMapping:
    """The mapping for Inspect logs dropped into the landing folder.

    ``<home>/inspect_mapping.json`` (optional) holds ``ImportMapping`` fields, e.g.
    ``{"harness": "react", "refusal_scorer": "refusal_judge"}``; see docs/importers.md.
    """
    from litmus.importers.inspect_log import ImportMapping

    config = paths.home / INSPECT_MAPPING_FILE
    if not config.exists():
        return ImportMapping()
    try:
        values = json.loads(config.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LitmusError(f"{config}: not valid JSON ({exc})") from None
    if not isinstance(values, dict):
        raise LitmusError(f"{config}: must hold a JSON object of ImportMapping fields")
    known = set(ImportMapping.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise LitmusError(
            f"{config}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return ImportMapping(**values)


def _inspect_items(stored: Path, mapping: ImportMapping) -> Iterator[SourceItem]:
    """Samples of an Inspect AI log as ingestion items (sample ordinal stands for the line)."""
    from litmus.importers.inspect_log import ImportProblem, iter_inspect_records

    for ordinal, item in enumerate(iter_inspect_records(stored, mapping), start=1):
        if isinstance(item, ImportProblem):
            yield ordinal, RecordProblem(item.field, f"sample {item.sample}: {item.reason}")
        else:
            yield ordinal, item
