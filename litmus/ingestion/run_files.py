"""Ingestion (SPEC §4, §10): landed files → immutable raw store → validated rows + quarantine.

Guarantees, each checked in code or by a test:

- every landed file is copied into the raw store under its SHA-256, read-only;
- every record ends up either accepted or quarantined with file, line, field and reason
  (``records_total == accepted + quarantined`` is asserted per file);
- a file is ingested in one DuckDB transaction, so a crash part-way leaves no partial file
  behind, and re-ingesting a file already recorded in ``raw_files`` is a no-op;
- records stream through in bounded batches (Arrow → DuckDB), never one giant list, and the
  file's transaction runs under a DuckDB memory limit, so memory stays flat with file size;
  a line over ``MAX_RECORD_BYTES`` is quarantined with its size and never held whole, so
  memory stays flat with line size too;
- raw lines are first offered to the vectorized path (``litmus.ingestion.bulk``), which accepts
  only what it proves the validator accepts; every other record, and every quarantine
  reason, comes from the per-record validator below.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import math
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import duckdb
import pyarrow as pa
from pydantic import ValidationError

from litmus.canonical import compact_json
from litmus.errors import LitmusError
from litmus.formats import RunRecord, post_state_text
from litmus.globmatch import match_text
from litmus.ingestion import derivation
from litmus.ingestion.bulk import (
    Proven,
    insert_arrow,
    open_scratch,
    prove_lines,
    stage_provable_lines,
    stage_proven,
    stored_instances,
)
from litmus.ingestion.provers import ProverPool, default_provers
from litmus.ingestion.suites import DuplicateKeyError, format_location, reject_duplicate_keys
from litmus.keys import config_key, lineage_key, partition_key_for, trajectory_id
from litmus.settings import RUN_SUFFIXES, LitmusPaths
from litmus.warehouse import atomically, bounded_memory

if TYPE_CHECKING:
    from litmus.importers.inspect_log import ImportMapping

BATCH_RECORDS = 5_000
# ... or once the records validated one by one since the last flush held this many bytes
# (records of up to MAX_RECORD_BYTES each: 5,000 of them would not be a bounded batch).
BATCH_BYTES = 64 << 20
# Raw lines are proven valid in bulk (litmus.ingestion.bulk) in batches this large at most.
BULK_LINES = 10_000
BULK_BYTES = 32 << 20
# DuckDB runs the bulk path's SQL one vector (2048 rows) at a time, and its JSON functions
# hold many times a vector's text while they run: under the provers' memory limit a vector of
# 2048 lines of 3 KB passes and of 6 KB fails, one line of 8 MB or eight of 1 MB fail. So a
# batch is also cut once one vector's lines reach VECTOR_BYTES, and a line over
# BULK_MAX_LINE_BYTES goes to the per-record validator: a vector never holds more than
# their sum, whatever the lines' sizes.
DUCKDB_VECTOR_ROWS = 2048
VECTOR_BYTES = 5 << 20
BULK_MAX_LINE_BYTES = 512 << 10
PROGRESS_RECORDS = 10_000
# Files from this size on are proven by helper processes (ingest_file's default): about two
# bulk batches of the sample's lines; below it, starting the processes costs more.
PROVERS_MIN_BYTES = 16 << 20
# Batches cut and not yet staged, at most (with the provers' own): each holds its lines
# (at most BULK_BYTES) and its proof until staged.
MAX_WAITING_BATCHES = 4
EXCERPT_CHARS = 300

ProgressCallback = Callable[[int], None]


@dataclass(frozen=True)
class RecordProblem:
    """A record that could not be mapped before validation (e.g. by an importer)."""

    field: str
    reason: str
    excerpt: str | None = None
    code: str = "unmapped"  # a ReasonCode


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
    # records accepted by the vectorized path (the rest went through the validator one by one)
    bulk_accepted: int = 0

    def summary(self) -> str:
        if self.skipped:
            return f"{self.source_name}: already ingested ({self.file_hash[:12]}), nothing to do"
        return (
            f"{self.source_name}: {self.records_total} records, {self.accepted} accepted, "
            f"{self.quarantined} quarantined, {len(self.partitions)} configuration(s)"
        )


class ReasonCode(StrEnum):
    """Why a record was quarantined, as a code programs match (the reason text is for
    people and may be worded anew)."""

    MALFORMED = "malformed"  # not one unambiguous JSON object (bytes, syntax, depth, keys)
    INVALID = "invalid"  # a JSON object the record format refuses
    OVERSIZED = "oversized"  # over MAX_RECORD_BYTES, not read
    UNMAPPED = "unmapped"  # an importer could not map it to a record
    DUPLICATE = "duplicate"  # its (run_id, instance_id, epoch) was seen before
    UNKNOWN_SUITE = "unknown_suite"
    UNKNOWN_SUITE_VERSION = "unknown_suite_version"
    UNKNOWN_INSTANCE = "unknown_instance"


# The codes a loaded suite (or the right version of it) cures: such records are retried from
# the raw store once a suite was stored after they were quarantined.
CURABLE_REASON_CODES = frozenset(
    {ReasonCode.UNKNOWN_SUITE, ReasonCode.UNKNOWN_SUITE_VERSION, ReasonCode.UNKNOWN_INSTANCE}
)
# The same, as a condition on quarantine rows (tests/test_quarantine_recovery.py pins the two).
CURABLE_QUARANTINE_SQL = (
    "(reason_code IN ('unknown_suite', 'unknown_suite_version', 'unknown_instance'))"
)


class _Rejected(Exception):
    def __init__(self, field: str, reason: str, code: ReasonCode = ReasonCode.INVALID) -> None:
        super().__init__(reason)
        self.field, self.reason, self.code = field, reason, code


class NotARegularFileError(LitmusError):
    """A landed entry that is a symlink, folder, FIFO or device: never read."""


def open_regular_file(path: Path) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file itself, with no other name: a
    symlink is not followed, a hard link is refused, and so is a FIFO, without blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotARegularFileError(f"{path.name}: a symbolic link; not ingested") from None
        raise
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise NotARegularFileError(f"{path.name}: not a regular file; not ingested")
    if status.st_nlink > 1:  # litmus.runs.HARD_LINK: maybe a file outside the landing folder
        os.close(fd)
        raise NotARegularFileError(f"{path.name}: a hard link; not ingested")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def file_sha256(path: Path, *, regular_only: bool = False) -> str:
    """SHA-256 of a file; ``regular_only`` refuses a symlink, folder or FIFO (landed files)."""
    digest = hashlib.sha256()
    with open_regular_file(path) if regular_only else path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def store_raw_file(path: Path, paths: LitmusPaths, digest: str) -> Path:
    """Copy into the content-addressed store; the name comes from the hash, never the input."""
    suffix = _format_suffix(path)
    target = paths.raw_file(digest, suffix)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_copies(target)
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    try:
        # the copied bytes are hashed as they pass (not read back after): the same check that
        # the file did not change since it was hashed, without reading it a third time
        copied = hashlib.sha256()
        with open_regular_file(path) as source, partial.open("wb") as copy:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                copied.update(chunk)
                copy.write(chunk)
        if copied.hexdigest() != digest:
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
    for suffix in RUN_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    return ".jsonl"


def detect_format(path: Path) -> str:
    suffix = _format_suffix(path)
    return {".jsonl": "native-jsonl", ".eval": "inspect-eval", ".json": "inspect-json"}[suffix]


READ_CHUNK_BYTES = 1 << 20
# The largest record (one JSONL line, without its terminator) ingestion reads: a longer line
# is quarantined with its size and never held in memory whole, so one line cannot exhaust
# the memory of every run that ingests it (issue 44). A trajectory is text one run produced;
# 4 MiB is far beyond a real one, and well within what the bulk path's DuckDB parses under
# its memory limit (a 7 MB line failed there).
MAX_RECORD_BYTES = 4 << 20
# How much of an over-long line is kept, for its quarantine excerpt.
OVERSIZED_HEAD_BYTES = 1024
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class OversizedLine:
    """A line longer than the limit, skipped: its size in bytes and its first bytes."""

    size: int
    head: bytes


def split_lines(
    path: Path, chunk_bytes: int = READ_CHUNK_BYTES, max_line_bytes: int = MAX_RECORD_BYTES
) -> Iterator[bytes | OversizedLine]:
    """The lines of a file, each without its terminator, read in bounded chunks; a line
    longer than ``max_line_bytes`` comes as an :class:`OversizedLine` instead (memory stays
    within about ``max_line_bytes + chunk_bytes`` whatever the file holds). A UTF-8 byte order
    mark at the start of the file is not part of its first line.

    A line ends at LF, CRLF or a lone CR (a file from an old Mac tool is not one record), so
    JSON text, which never holds a raw CR or LF inside a string, splits the same either way.
    """

    def oversized(line: bytes) -> OversizedLine:
        return OversizedLine(len(line), line[: min(OVERSIZED_HEAD_BYTES, max_line_bytes)])

    pending = b""
    skipped: OversizedLine | None = None  # the over-long line being skipped to its end
    drop_lf = False  # the skipped line ended at a CR that may be the first half of a CRLF
    with path.open("rb") as handle:
        if handle.read(len(UTF8_BOM)) != UTF8_BOM:
            handle.seek(0)
        while chunk := handle.read(chunk_bytes):
            if drop_lf:
                chunk, drop_lf = chunk.removeprefix(b"\n"), False
            if skipped is not None:
                end = _first_terminator(chunk)
                if end < 0:
                    skipped = OversizedLine(skipped.size + len(chunk), skipped.head)
                    continue
                yield OversizedLine(skipped.size + end, skipped.head)
                skipped = None
                if chunk[end : end + 2] == b"\r\n":
                    end += 1
                elif chunk.endswith(b"\r") and end == len(chunk) - 1:
                    drop_lf = True
                chunk = chunk[end + 1 :]
            pending += chunk
            # bytes.splitlines breaks at exactly LF, CRLF and CR (str's breaks at more)
            lines = pending.splitlines()
            if pending.endswith(b"\r"):
                pending = lines.pop() + b"\r"  # maybe the first half of a CRLF split
            elif pending.endswith(b"\n") or not lines:
                pending = b""
            else:
                pending = lines.pop()  # the file's next chunk continues it
            if max(map(len, lines), default=0) <= max_line_bytes:  # nearly always: at C speed
                yield from lines
            else:
                for line in lines:
                    yield line if len(line) <= max_line_bytes else oversized(line)
            if len(pending.removesuffix(b"\r")) > max_line_bytes:
                if pending.endswith(b"\r"):  # complete but for a possible LF
                    yield oversized(pending[:-1])
                    pending, drop_lf = b"", True
                else:
                    skipped, pending = oversized(pending), b""
    if skipped is not None:
        yield skipped
    elif pending:
        line = pending.removesuffix(b"\r")
        yield line if len(line) <= max_line_bytes else oversized(line)


def _first_terminator(chunk: bytes) -> int:
    """Where the first CR or LF of ``chunk`` is, or -1."""
    ends = [at for at in (chunk.find(b"\n"), chunk.find(b"\r")) if at >= 0]
    return min(ends, default=-1)


def iter_jsonl_lines(path: Path) -> Iterator[SourceItem]:
    """(line number, line) of every non-empty line; a whitespace-only line is an item too
    (quarantined as blank), so nothing in the file goes uncounted. A line over
    ``MAX_RECORD_BYTES`` is a problem to quarantine, with its size and first bytes."""
    for line_no, line in enumerate(split_lines(path), start=1):
        if type(line) is bytes:
            if line:
                yield line_no, line
        else:
            assert isinstance(line, OversizedLine)
            yield (
                line_no,
                RecordProblem(
                    "<record>",
                    f"line of {line.size:,} bytes is over the limit of {MAX_RECORD_BYTES:,} bytes "
                    "per record; not read",
                    line.head[:EXCERPT_CHARS].decode("utf-8", errors="replace"),
                    ReasonCode.OVERSIZED,
                ),
            )


# ----------------------------------------------------------------------------- validation


def _reject_constant(name: str) -> Any:
    raise _Rejected("<record>", f"non-standard JSON constant {name}", ReasonCode.MALFORMED)


# Every integer in a record must fit a 64-bit signed integer (DuckDB BIGINT, and what other
# JSON tools can read back exactly); the epoch is narrower still (see formats.MAX_EPOCH).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_MAX_INT64_DIGITS = 19
# A tool call's arguments are free-form JSON, stored as JSON text and matched as text (SPEC
# §3): any integer is kept exactly, up to the digits Python converts (its default limit).
MAX_ARGUMENT_DIGITS = 4300
# How deeply a record's JSON may nest (objects and arrays; a record itself is 1, its tool
# call's arguments are 5): the parser, the validator and the writers all recurse per level,
# so a fixed limit keeps a deep record from failing anywhere but here, with its reason.
MAX_JSON_DEPTH = 256


@dataclass(frozen=True)
class _Unstorable:
    """A number in a record that cannot be stored: where the parser met it, why."""

    text: str
    reason: str
    integer: bool = False  # an integer literal (``text``), exact where free-form JSON is


def _integer(text: str) -> int | _Unstorable:
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT64_DIGITS + 1:  # never convert a huge literal (Python caps at 4,300)
        return _Unstorable(text, f"integer of {digits} digits is outside the 64-bit range", True)
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        return _Unstorable(text, f"integer {value} is outside the 64-bit range", True)
    return value


def _exact_integers(node: Any) -> Any:
    """``node`` (free-form JSON) with every integer literal kept exactly: an integer beyond
    64 bits is a Python int (written back as the same digits), one beyond
    ``MAX_ARGUMENT_DIGITS`` stays unstorable, with that reason."""
    if isinstance(node, dict):
        return {key: _exact_integers(child) for key, child in node.items()}
    if isinstance(node, list):
        return [_exact_integers(child) for child in node]
    if isinstance(node, _Unstorable) and node.integer:
        digits = len(node.text.lstrip("-"))
        if digits > MAX_ARGUMENT_DIGITS:
            return _Unstorable(
                node.text,
                f"integer of {digits} digits is longer than the {MAX_ARGUMENT_DIGITS:,} digits "
                "a tool call argument may hold",
            )
        return int(node.text)
    return node


def _admit_free_form(record: dict[str, Any]) -> None:
    """Keep the big integers of every tool call's arguments (free-form, stored as JSON text)."""
    steps = record.get("steps")
    for step in steps if isinstance(steps, list) else ():
        call = step.get("tool_call") if isinstance(step, dict) else None
        if isinstance(call, dict) and isinstance(call.get("arguments"), dict):
            call["arguments"] = _exact_integers(call["arguments"])


def _nesting_depth(value: Any) -> int:
    """How many objects and arrays deep ``value`` nests (walked without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest if isinstance(value, dict | list) else 0


def _number(text: str) -> float | _Unstorable:
    value = float(text)
    if not math.isfinite(value):  # 1e400: as unstorable as a literal Infinity
        return _Unstorable(text, f"number {text[:40]} is too large (it would be infinite)")
    return value


def _in_arguments(at: tuple[str | int, ...]) -> bool:
    """Whether ``at`` (a location in a record) is inside a tool call's arguments."""
    return len(at) > 4 and at[0] == "steps" and at[2:4] == ("tool_call", "arguments")


def _unstorable(value: Any, free_form: bool = False) -> _Unstorable | None:
    """Why ``value`` (one leaf) cannot be stored, if it cannot; ``free_form``: a leaf of a
    tool call's arguments, where any integer is kept."""
    if isinstance(value, _Unstorable):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not free_form and not INT64_MIN <= value <= INT64_MAX:
        return _Unstorable("", f"integer of {value.bit_length()} bits is outside the 64-bit range")
    if isinstance(value, float) and not math.isfinite(value):
        return _Unstorable("", f"number {value} cannot be stored")
    return None


def _find_unstorable(
    value: Any, at: tuple[str | int, ...] = ()
) -> tuple[tuple[str | int, ...], _Unstorable] | None:
    """The location of the first number in ``value`` that cannot be stored, and why."""
    if isinstance(value, dict | list):
        children = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in children:
            found = _find_unstorable(child, (*at, key))
            if found is not None:
                return found
        return None
    problem = _unstorable(value, _in_arguments(at))
    return None if problem is None else (at, problem)


def _reject_unstorable(value: Any) -> None:
    found = _find_unstorable(value)
    if found is not None:
        where, problem = found
        raise _Rejected(format_location(where) if where else "<record>", problem.reason)


def _parse_line(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise _Rejected("<record>", "blank line (whitespace only)", ReasonCode.MALFORMED)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Rejected(
            "<record>", f"not valid UTF-8 (byte {exc.start} of the line)", ReasonCode.MALFORMED
        ) from None
    unstorable: list[_Unstorable] = []

    def integer(text: str) -> int | _Unstorable:
        parsed = _integer(text)
        if isinstance(parsed, _Unstorable):
            unstorable.append(parsed)
        return parsed

    def number(text: str) -> float | _Unstorable:
        parsed = _number(text)
        if isinstance(parsed, _Unstorable):
            unstorable.append(parsed)
        return parsed

    try:
        value = json.loads(
            text,
            object_pairs_hook=reject_duplicate_keys,
            parse_constant=_reject_constant,
            parse_int=integer,
            parse_float=number,
        )
    except DuplicateKeyError as exc:
        raise _Rejected(exc.key, str(exc), ReasonCode.MALFORMED) from None
    except json.JSONDecodeError as exc:
        reason = f"malformed JSON: {exc.msg} at column {exc.colno}"
        raise _Rejected("<record>", reason, ReasonCode.MALFORMED) from None
    except RecursionError:
        raise _Rejected("<record>", _TOO_DEEP, ReasonCode.MALFORMED) from None
    if isinstance(value, dict | list) and _nesting_depth(value) > MAX_JSON_DEPTH:
        raise _Rejected("<record>", _TOO_DEEP, ReasonCode.MALFORMED)
    if not isinstance(value, dict):
        reason = f"a record must be a JSON object, not {type(value).__name__}"
        raise _Rejected("<record>", reason, ReasonCode.MALFORMED)
    if unstorable:  # only then walk the record, to name the field
        _admit_free_form(value)
        _reject_unstorable(value)
    return value


_TOO_DEEP = f"JSON nested deeper than the limit of {MAX_JSON_DEPTH} levels"


def _validate(value: dict[str, Any]) -> RunRecord:
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
        raise _Rejected("<record>", "record nested too deeply", ReasonCode.MALFORMED) from None
    try:
        # DuckDB stores UTF-8; a lone surrogate from a "\ud800" escape cannot be stored.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        reason = "string contains an unpaired UTF-16 surrogate"
        raise _Rejected("<record>", reason, ReasonCode.MALFORMED) from None
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
        "post_state",
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
        "input_role",
        "input_content",
    )

    def __init__(self) -> None:
        self.trajectories: dict[str, list[Any]] = {c: [] for c in self.TRAJECTORY_COLUMNS}
        self.steps: dict[str, list[Any]] = {c: [] for c in self.STEP_COLUMNS}
        self.source_bytes = 0  # of the raw lines whose records it holds

    def full(self) -> bool:
        return len(self) >= BATCH_RECORDS or self.source_bytes >= BATCH_BYTES

    def __len__(self) -> int:
        return len(self.trajectories["trajectory_id"])

    def add(self, record: RunRecord, file_hash: str, line_no: int, record_sha: str) -> str:
        cfg = record.config
        tid = trajectory_id(record.run_id, record.instance_id, record.epoch)
        judge = record.judgments
        effect = record.unguarded_effect
        row = {
            "trajectory_id": tid,
            "partition_key": partition_key_for(cfg),
            "config_key": config_key(cfg),
            "lineage_key": lineage_key(cfg),
            "model": cfg.model,
            "model_release": cfg.model_release,
            "harness": cfg.harness,
            "harness_version": cfg.harness_version,
            "plugin": cfg.plugin,
            "policy_version": cfg.policy_version,
            "run_id": record.run_id,
            "suite": record.suite,
            "suite_version": record.suite_version,
            "instance_id": record.instance_id,
            "epoch": record.epoch,
            "termination": record.termination,
            "final_response": record.final_response,
            "n_steps": len(record.steps),
            "has_unguarded_effect": effect is not None,
            "unguarded_effect_prohibited": effect.prohibited if effect else None,
            "unguarded_effect_description": effect.description if effect else None,
            "harm_prevented_by": record.harm_prevented_by,
            "judge_refusal": judge.refusal if judge else None,
            "judge_task_completed": judge.task_completed if judge else None,
            "judge_helpfulness": judge.helpfulness if judge else None,
            "judge_tool_call_risk": judge.tool_call_risk if judge else None,
            "judge_engagement": judge.engagement if judge else None,
            "judge_name": judge.judge if judge else None,
            "source_file_hash": file_hash,
            "source_line": line_no,
            "record_sha256": record_sha,
            # compact JSON, keys in the record's order; None: not observed (SPEC §4)
            "post_state": None if record.post_state is None else post_state_text(record.post_state),
        }
        for column, value in row.items():
            self.trajectories[column].append(value)
        for index, step in enumerate(record.steps):
            call, result = step.tool_call, step.tool_result
            for column, value in (
                ("source_line", line_no),
                ("trajectory_id", tid),
                ("step_idx", index),
                ("thought", step.thought),
                ("message", step.message),
                ("tool_name", call.name if call else None),
                (
                    "arguments_json",
                    compact_json(call.arguments) if call else None,
                ),
                (
                    "match_args",
                    [(key, match_text(value)) for key, value in call.arguments.items()]
                    if call
                    else None,
                ),
                ("status", result.status if result else None),
                ("output", result.output if result else None),
                ("input_role", step.input.role if step.input else None),
                ("input_content", step.input.content if step.input else None),
            ):
                self.steps[column].append(value)
        return row["partition_key"]


_STAGING_DDL = """
CREATE OR REPLACE TEMP TABLE staged_trajectories AS
    SELECT *, NULL::VARCHAR AS post_state FROM raw_trajectories LIMIT 0;
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
    insert_arrow(con, table, frame, ", ".join(columns))


# ----------------------------------------------------------------------------- ingestion


def _for_bulk(payload: object) -> bool:
    """Whether an item goes to the bulk path: a raw line no longer than BULK_MAX_LINE_BYTES."""
    return isinstance(payload, bytes) and len(payload) <= BULK_MAX_LINE_BYTES


class _BatchCut:
    """Where the bulk path cuts a batch (whoever cuts it: :func:`ingest_items` or
    :func:`start_proving`): at ``BULK_LINES`` lines, ``BULK_BYTES`` bytes, ``VECTOR_BYTES``
    in one DuckDB vector's lines, or a progress report."""

    def __init__(self) -> None:
        self.lines = self.bytes = self.vector_bytes = 0

    def add(self, size: int, records_total: int) -> bool:
        """Count a line of ``size`` bytes; whether the batch is full with it."""
        if self.lines % DUCKDB_VECTOR_ROWS == 0:
            self.vector_bytes = 0
        self.lines += 1
        self.bytes += size
        self.vector_bytes += size
        return (
            self.lines >= BULK_LINES
            or self.bytes >= BULK_BYTES
            or self.vector_bytes >= VECTOR_BYTES
            or records_total % PROGRESS_RECORDS == 0
        )

    def reset(self) -> None:
        self.lines = self.bytes = self.vector_bytes = 0


@dataclass
class HeadStart:
    """A file's first batches, handed to provers before its ingestion began: ``batches``
    holds each one's lines and the record count when it was cut, ``rest`` the items after
    them (``records_total`` of them were read)."""

    pool: ProverPool
    batches: list[tuple[list[tuple[int, bytes]], int]]
    records_total: int
    rest: Iterator[SourceItem]


def start_proving(
    items: Iterator[SourceItem], provers: int, instances: pa.Table, file_hash: str
) -> HeadStart:
    """Cut a file's first batches exactly as :func:`ingest_items` would and hand them to new
    provers. At most ``MAX_WAITING_BATCHES`` (the bound on batches waiting to be staged); it
    stops before the first item that is not a raw line (the serial path's)."""
    pool = ProverPool(provers, instances, file_hash)
    batches: list[tuple[list[tuple[int, bytes]], int]] = []
    pending: list[tuple[int, bytes]] = []
    cut = _BatchCut()
    records_total = 0
    rest: Iterator[SourceItem] = items
    try:
        for item in items:
            line_no, payload = item
            if not _for_bulk(payload):
                rest = itertools.chain([item], items)
                break
            assert isinstance(payload, bytes)
            records_total += 1
            pending.append((line_no, payload))
            if cut.add(len(payload), records_total):
                pool.submit(pending)
                batches.append((pending, records_total))
                pending = []
                cut.reset()
                if len(batches) >= MAX_WAITING_BATCHES:
                    break
        if pending:  # the end of the file, or of its raw lines: the rest is the caller's
            rest = itertools.chain(pending, rest)
            records_total -= len(pending)
    except BaseException:
        pool.close()
        raise
    return HeadStart(pool, batches, records_total, rest)


def _already_ingested(con: duckdb.DuckDBPyConnection, file_hash: str) -> bool:
    (count,) = con.execute(
        "SELECT count(*) FROM raw_files WHERE file_hash = ?", [file_hash]
    ).fetchall()[0]
    return bool(count)


def _known_instances(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], set[str]]:
    """(suite, version) → its stored instance ids; grouped by DuckDB, which halves the time
    of a Python loop over every instance."""
    return {
        (suite, version): set(instance_ids)
        for suite, version, instance_ids in con.execute(
            "SELECT suite, suite_version, list(instance_id) FROM suite_instances GROUP BY ALL"
        ).fetchall()
    }


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
    retry_lines: frozenset[int] | None = None,
    vectorized: bool = True,
    provers: int = 0,
    head_start: HeadStart | None = None,
    while_committing: Callable[[pa.Table], None] | None = None,
) -> IngestReport:
    """Validate and store one source's records in a single transaction.

    ``provers``: how many helper processes prove the bulk path's batches
    (``litmus.ingestion.provers``) while this one stages them; 0 proves them here. Either
    way the same rows are staged in the same order.

    ``head_start``: the source's first batches, already handed to provers
    (:func:`start_proving`); ``items`` is then what follows them. Its provers are stopped
    here once their proofs are received, and by the caller in any case (closing a pool again
    does nothing). ``while_committing`` is
    called once every record is staged, before the file is published and committed, with
    the stored instances: :func:`ingest_files` starts proving the next file there.

    ``retry_lines``: the lines of an already ingested file whose curable quarantine rows are
    being retried (``items`` holds exactly those); their old quarantine rows are replaced and
    the file's counts updated, so that records in = accepted + quarantined still holds.
    """
    report = IngestReport(source_name, file_hash, stored_path)
    if retry_lines is None and _already_ingested(con, file_hash):
        report.skipped = True
        return report
    source = _SourceIngestion(
        con,
        report,
        file_format=file_format,
        size_bytes=size_bytes,
        retry_lines=retry_lines,
        progress=progress,
        head_start=head_start,
    )
    return source.run(
        items, vectorized=vectorized, provers=provers, while_committing=while_committing
    )


QUARANTINE_COLUMNS = (
    "source_file_hash",
    "source_name",
    "line_no",
    "field",
    "reason",
    "raw_excerpt",
    "quarantined_at",
    "reason_code",
)

# A batch of raw lines cut for the bulk path: (line number, bytes) in file order.
Lines = list[tuple[int, bytes]]


class _SourceIngestion:
    """One source's records through :func:`ingest_items`: raw lines cut into batches that the
    bulk path proves (here or in provers) and stages in file order, every other record through
    the strict validator, each rejected one into the quarantine; then the staged rows are
    published and the file recorded in the same transaction."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        report: IngestReport,
        *,
        file_format: str,
        size_bytes: int,
        retry_lines: frozenset[int] | None,
        progress: ProgressCallback | None,
        head_start: HeadStart | None,
    ) -> None:
        self.con, self.report = con, report
        self.file_format, self.size_bytes = file_format, size_bytes
        self.retry_lines, self.progress = retry_lines, progress
        self.now = datetime.now(UTC).replace(tzinfo=None)
        self.quarantine: dict[str, list[Any]] = {column: [] for column in QUARANTINE_COLUMNS}
        self.batch = _Batch()  # validated records not yet staged
        # The stored instances as Python sets, for the records the bulk path leaves to the
        # validator: read on the first such record, since a file the bulk path proves whole
        # needs none (125,000 instances take ~0.05 s to read).
        self.known: dict[tuple[str, str], set[str]] | None = None
        self.suite_versions: dict[str, list[str]] = {}
        self.pending: Lines = []  # raw lines of the batch being cut
        self.cut = _BatchCut()
        self.pool: ProverPool | None = None
        self.worker: duckdb.DuckDBPyConnection | None = None
        # batches cut and not staged yet, oldest first: their lines, the record count when
        # each was cut (its progress report is due once it is staged) and, for a batch this
        # process proved itself, its proof (None: a prover's, to be received)
        self.waiting: deque[tuple[Lines, int, Proven | None]] = deque()
        if head_start is not None:
            self.pool = head_start.pool
            self.waiting.extend((lines, count, None) for lines, count in head_start.batches)
            report.records_total = head_start.records_total

    def run(
        self,
        items: Iterable[SourceItem],
        *,
        vectorized: bool,
        provers: int,
        while_committing: Callable[[pa.Table], None] | None,
    ) -> IngestReport:
        con = self.con
        try:
            instances = stored_instances(con)
            self.worker = open_scratch(instances)
            if self.pool is None and provers and vectorized:
                self.pool = ProverPool(provers, instances, self.report.file_hash)
            with bounded_memory(con):
                # staged in temporary tables; only their publication writes the warehouse,
                # so a publication that loses a write conflict is rolled back to the staged
                # rows and run again (litmus.warehouse.atomically)
                con.execute(_STAGING_DDL)
                self.stage_items(items, vectorized=vectorized)
                self.stage_rest()
                if while_committing is not None:
                    while_committing(instances)
                atomically(con, self.publish, what=f"ingesting {self.report.source_name}")
        finally:
            if self.worker is not None:
                self.worker.close()
            if self.pool is not None:
                self.pool.close()
        if self.progress is not None and self.retry_lines is None:
            self.progress(self.report.records_total)
        return self.report

    # ------------------------------------------------------------------ reading and staging

    def stage_items(self, items: Iterable[SourceItem], *, vectorized: bool) -> None:
        """Every item in file order: raw lines batched for the bulk path, the rest validated
        one by one once the batches cut before it are staged."""
        report = self.report
        for line_no, payload in items:
            report.records_total += 1
            deferred = False  # the progress report waits for the batch's staging
            if vectorized and _for_bulk(payload):
                assert isinstance(payload, bytes)
                self.pending.append((line_no, payload))
                if self.cut.add(len(payload), report.records_total):
                    self.validate_pending()
                    deferred = self.pool is not None
            else:
                self.drain()  # the serial path has staged every batch cut before this record
                self.validate_one(line_no, payload)
            if (
                self.progress is not None
                and not deferred
                and report.records_total % PROGRESS_RECORDS == 0
            ):
                self.progress(report.records_total)

    def stage_rest(self) -> None:
        """The last batch cut and staged, every proof received, the buffers written."""
        self.validate_pending()
        self.drain()
        if self.pool is not None:  # every proof is received: the provers' work here is done
            self.pool.close()
            self.pool = None
        _flush(self.con, self.batch)
        self.flush_quarantine()

    def validate_pending(self) -> None:
        """The batch of raw lines: proven in bulk where possible, the rest one by one."""
        pool, worker = self.pool, self.worker
        assert worker is not None
        if pool is None:
            proven = stage_provable_lines(self.con, worker, self.pending, self.report.file_hash)
            self.finish_batch(self.pending, proven)
            self.pending.clear()
        elif self.pending:
            # Staging stays in file order; who proves a batch does not change its proof.
            while self.head_ready():
                self.stage_oldest()
            if len(self.waiting) >= MAX_WAITING_BATCHES:  # bounds unstaged batches' memory
                self.stage_oldest()
            count = self.report.records_total
            if pool.full:
                # the provers are busy: prove this one here rather than wait for them (so
                # both cores work whichever side, proving or staging, is behind)
                proof = prove_lines(worker, self.pending, self.report.file_hash)
                self.waiting.append((self.pending, count, proof))
            else:
                pool.submit(self.pending)
                self.waiting.append((self.pending, count, None))
            self.pending = []
        self.cut.reset()

    def head_ready(self) -> bool:
        """Whether the oldest waiting batch can be staged without waiting for a prover."""
        assert self.pool is not None
        return bool(self.waiting) and (self.waiting[0][2] is not None or self.pool.oldest_ready())

    def stage_oldest(self) -> None:
        assert self.pool is not None
        lines, count, proven = self.waiting.popleft()
        proof = proven if proven is not None else self.pool.receive()
        self.finish_batch(lines, stage_proven(self.con, proof))
        if self.progress is not None and count % PROGRESS_RECORDS == 0:
            self.progress(count)

    def drain(self) -> None:
        while self.waiting:
            self.stage_oldest()

    def finish_batch(self, lines: Lines, staged: set[int]) -> None:
        """A batch whose proven lines are staged: the rest one by one, in file order."""
        self.report.bulk_accepted += len(staged)
        for line_no, payload in lines:
            if line_no not in staged:
                self.validate_one(line_no, payload)
        if len(self.quarantine["line_no"]) >= BATCH_RECORDS:
            self.flush_quarantine()

    # ------------------------------------------------------------------ the strict validator

    def validate_one(self, line_no: int, payload: bytes | dict[str, Any] | RecordProblem) -> None:
        """The reference path: one record through the strict validator."""
        excerpt: str | None = None
        try:
            if isinstance(payload, RecordProblem):
                excerpt = payload.excerpt
                raise _Rejected(payload.field, payload.reason, ReasonCode(payload.code))
            if isinstance(payload, bytes):
                excerpt = payload[:EXCERPT_CHARS].decode("utf-8", errors="replace")
                record_sha = hashlib.sha256(payload.rstrip(b"\r\n")).hexdigest()
                value = _parse_line(payload)
            else:
                value = payload
                _reject_unstorable(value)
                canonical = json.dumps(value, sort_keys=True, ensure_ascii=False)
                excerpt = canonical[:EXCERPT_CHARS]
                record_sha = hashlib.sha256(canonical.encode("utf-8", "replace")).hexdigest()
            record = _validate(value)
            self.check_instance(record)
        except _Rejected as rejected:
            self.quarantine_record(line_no, rejected, excerpt)
            return
        self.batch.add(record, self.report.file_hash, line_no, record_sha)
        self.batch.source_bytes += len(payload) if isinstance(payload, bytes) else 0
        if self.batch.full():
            _flush(self.con, self.batch)
            self.batch = _Batch()

    def check_instance(self, record: RunRecord) -> None:
        """Reject a record whose suite, version or instance is not stored."""
        if self.known is None:
            self.known = _known_instances(self.con)
            for suite, version in self.known:
                self.suite_versions.setdefault(suite, []).append(version)
        versions = self.suite_versions.get(record.suite)
        if versions is None:
            raise _Rejected(
                "suite", f"unknown suite {record.suite!r} (load it first)", ReasonCode.UNKNOWN_SUITE
            )
        if record.suite_version not in versions:
            raise _Rejected(
                "suite_version",
                f"suite/version mismatch: suite {record.suite!r} has no version "
                f"{record.suite_version!r} (stored: {', '.join(sorted(versions))})",
                ReasonCode.UNKNOWN_SUITE_VERSION,
            )
        if record.instance_id not in self.known[(record.suite, record.suite_version)]:
            raise _Rejected(
                "instance_id",
                f"unknown instance_id {record.instance_id!r} in suite "
                f"{record.suite}@{record.suite_version}",
                ReasonCode.UNKNOWN_INSTANCE,
            )

    def quarantine_record(self, line_no: int, rejected: _Rejected, excerpt: str | None) -> None:
        report = self.report
        for column, value in (
            ("source_file_hash", report.file_hash),
            ("source_name", report.source_name),
            ("line_no", line_no),
            ("field", rejected.field),
            ("reason", rejected.reason),
            ("raw_excerpt", excerpt),
            ("quarantined_at", self.now),
            ("reason_code", str(rejected.code)),
        ):
            self.quarantine[column].append(value)

    def flush_quarantine(self) -> None:
        _append(self.con, "staged_quarantine", self.quarantine)
        for values in self.quarantine.values():
            values.clear()

    # ------------------------------------------------------------------ publishing

    def publish(self) -> None:
        """The staged rows published, the counts reconciled and the file recorded (inside
        the caller's transaction, which rolls the staged tables back with it)."""
        con, report = self.con, self.report
        _quarantine_duplicates(con, self.now, report.source_name)
        if self.retry_lines is not None:
            _forget_retried(con, report.file_hash, self.retry_lines)
        _publish_staged(con, report)
        if report.records_total != report.accepted + report.quarantined:
            raise AssertionError(
                f"{report.source_name}: reconciliation failed: {report.records_total} records "
                f"in, {report.accepted} accepted + {report.quarantined} quarantined"
            )
        if self.retry_lines is not None:
            con.execute(
                "UPDATE raw_files SET records_accepted = records_accepted + ?, "
                "records_quarantined = records_quarantined - ? + ? WHERE file_hash = ?",
                [report.accepted, len(self.retry_lines), report.quarantined, report.file_hash],
            )
            derivation.record_stored(con, report.file_hash)
            return
        con.execute(
            "INSERT INTO raw_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                report.file_hash,
                report.source_name,
                str(report.stored_path),
                self.file_format,
                self.size_bytes,
                report.records_total,
                report.accepted,
                report.quarantined,
                self.now,
            ],
        )
        derivation.record_staged(con, report.file_hash)


def _forget_retried(
    con: duckdb.DuckDBPyConnection, file_hash: str, retry_lines: frozenset[int]
) -> None:
    """Drop the curable quarantine rows being retried (the retry quarantines again what is
    still not acceptable, with its current reason)."""
    con.execute(
        f"DELETE FROM quarantine WHERE source_file_hash = ? AND list_contains(?, line_no) "
        f"AND {CURABLE_QUARANTINE_SQL}",
        [file_hash, sorted(retry_lines)],
    )


def curable_quarantine(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, list[int]]]:
    """(file hash, stored path, format, lines) of quarantined records a suite stored since
    may cure."""
    return [
        (file_hash, stored, file_format, sorted(lines))
        for file_hash, stored, file_format, lines in con.execute(
            f"""
            SELECT q.source_file_hash, f.stored_path, f.file_format, list(q.line_no)
            FROM quarantine q JOIN raw_files f ON f.file_hash = q.source_file_hash
            WHERE {CURABLE_QUARANTINE_SQL}
              AND EXISTS (SELECT 1 FROM suites s WHERE s.loaded_at >= q.quarantined_at)
            GROUP BY ALL ORDER BY 1
            """
        ).fetchall()
    ]


def retry_curable_quarantine(
    con: duckdb.DuckDBPyConnection, paths: LitmusPaths
) -> list[IngestReport]:
    """Re-ingest, from the raw store, the records held back for a reason a suite loaded
    since cures (unknown suite, version or instance). Nothing is lost: a record still not
    acceptable is quarantined again with its current reason; an accepted one goes through
    the same duplicate check as any other."""
    reports = []
    for file_hash, stored_path, file_format, lines in curable_quarantine(con):
        stored = Path(stored_path)
        if not stored.is_file():
            continue  # the raw store lost it: the quarantine rows stay as the record
        wanted = frozenset(lines)
        source = (
            iter_jsonl_lines(stored)
            if file_format == "native-jsonl"
            else _inspect_items(stored, load_inspect_mapping(paths))
        )
        name = con.execute(
            "SELECT original_name FROM raw_files WHERE file_hash = ?", [file_hash]
        ).fetchall()[0][0]
        reports.append(
            ingest_items(
                con,
                ((line, payload) for line, payload in source if line in wanted),
                source_name=name,
                file_hash=file_hash,
                stored_path=stored,
                file_format=file_format,
                size_bytes=stored.stat().st_size,
                retry_lines=wanted,
            )
        )
    return reports


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
        SELECT s.source_file_hash, f.source_name, d.source_line, 'instance_id', d.reason, NULL, ?,
               'duplicate'
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
    con.execute(
        "INSERT INTO raw_trajectories SELECT * EXCLUDE (post_state) FROM staged_trajectories"
    )
    con.execute(
        "INSERT INTO raw_post_states SELECT trajectory_id, partition_key, post_state "
        "FROM staged_trajectories WHERE post_state IS NOT NULL"
    )
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


def warehouse_partition_keys(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every configuration (partition key) that has trajectories in the warehouse."""
    return [
        row[0]
        for row in con.execute(
            "SELECT DISTINCT partition_key FROM raw_trajectories ORDER BY 1"
        ).fetchall()
    ]


@dataclass
class PreparedFile:
    """A landed file kept in the raw store, ready to ingest from there (never from the
    landing copy): :func:`prepare_file`."""

    path: Path
    digest: str
    stored: Path
    file_format: str
    size_bytes: int
    items: Iterator[SourceItem]
    provers: int
    head_start: HeadStart | None = None

    def abandon(self) -> None:
        """Stop the provers of its head start, if any (those of a file that is done, or that
        will not be ingested)."""
        if self.head_start is not None:
            self.head_start.pool.close()
            self.head_start = None


def prepare_file(path: Path, paths: LitmusPaths, *, provers: int | None = None) -> PreparedFile:
    """Hash a landed file, keep it in the raw store and open its records there.

    ``provers``: helper processes proving the bulk path's batches (see :func:`ingest_items`);
    by default ``provers.default_provers()`` for a file of more than a couple of batches,
    none for a smaller one (starting them costs more than they save there).
    """
    digest = file_sha256(path, regular_only=True)
    stored = store_raw_file(path, paths, digest)
    file_format = detect_format(path)
    items: Iterator[SourceItem] = (
        iter_jsonl_lines(stored)
        if file_format == "native-jsonl"
        else _inspect_items(stored, load_inspect_mapping(paths))
    )
    size_bytes = stored.stat().st_size
    if provers is None:
        provers = default_provers() if size_bytes >= PROVERS_MIN_BYTES else 0
    return PreparedFile(
        path,
        digest,
        stored,
        file_format,
        size_bytes,
        items,
        provers if file_format == "native-jsonl" else 0,
    )


def ingest_prepared(
    con: duckdb.DuckDBPyConnection,
    prepared: PreparedFile,
    *,
    progress: ProgressCallback | None = None,
    vectorized: bool = True,
    while_committing: Callable[[pa.Table], None] | None = None,
) -> IngestReport:
    """Ingest a :func:`prepare_file` (see :func:`ingest_items`). Its head start's provers
    are stopped however the ingestion ends (skipped, failed before it took them over, done)."""
    try:
        return ingest_items(
            con,
            prepared.items,
            source_name=prepared.path.name,
            file_hash=prepared.digest,
            stored_path=prepared.stored,
            file_format=prepared.file_format,
            size_bytes=prepared.size_bytes,
            progress=progress,
            vectorized=vectorized,
            provers=prepared.provers,
            head_start=prepared.head_start,
            while_committing=while_committing,
        )
    finally:
        prepared.abandon()


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    paths: LitmusPaths,
    *,
    progress: ProgressCallback | None = None,
    vectorized: bool = True,
    provers: int | None = None,
) -> IngestReport:
    """Keep the file in the raw store, then ingest it from there (never from the landing copy).

    ``vectorized=False`` sends every record through the per-record validator (the reference
    the vectorized path is checked against). ``provers``: see :func:`prepare_file`.
    """
    prepared = prepare_file(path, paths, provers=provers)
    return ingest_prepared(con, prepared, progress=progress, vectorized=vectorized)


@dataclass
class _Deferred:
    """An error preparing the next file while the current one committed: it is the next
    file's, raised (or reported) when that file's turn comes, as if it had happened then."""

    error: Exception


def ingest_files(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[Path],
    paths: LitmusPaths,
    *,
    progress: Callable[[Path, int], None] | None = None,
) -> Iterator[tuple[Path, IngestReport | NotARegularFileError]]:
    """Ingest landed files in order, one transaction each: each file's report once it is
    committed, or the error refusing an entry that is not a regular file.

    While one file is published and committed (about a second and a half of one core for
    100 MB), the next is hashed, kept in the raw store and its first batches handed to
    provers (:func:`start_proving`), so that the other core proves meanwhile. A proof is a
    pure function of the lines and the stored instances, so what is staged is what the file
    alone would stage; an error preparing the next file is raised only when its turn comes,
    after the current file committed, as it was when files were ingested one by one.
    """
    upcoming: PreparedFile | _Deferred | None = None
    try:
        for index, path in enumerate(files):
            current: PreparedFile | _Deferred
            if upcoming is not None:
                current, upcoming = upcoming, None
            else:
                try:
                    current = prepare_file(path, paths)
                except NotARegularFileError as error:
                    yield path, error
                    continue
            if isinstance(current, _Deferred):
                if isinstance(current.error, NotARegularFileError):
                    yield path, current.error
                    continue
                raise current.error
            following = files[index + 1] if index + 1 < len(files) else None
            digest = current.digest

            def prepare_following(
                instances: pa.Table, following: Path | None = following, digest: str = digest
            ) -> None:
                nonlocal upcoming
                if following is None:
                    return
                try:
                    upcoming = prepare_file(following, paths)
                    already = upcoming.digest == digest or _already_ingested(con, upcoming.digest)
                    if upcoming.provers and not already:
                        upcoming.head_start = start_proving(
                            upcoming.items, upcoming.provers, instances, upcoming.digest
                        )
                        upcoming.items = upcoming.head_start.rest
                except Exception as error:  # the next file's: raised (or reported) in its turn
                    if isinstance(upcoming, PreparedFile):
                        upcoming.abandon()
                    upcoming = _Deferred(error)

            report = ingest_prepared(
                con,
                current,
                progress=None if progress is None else partial(progress, path),
                while_committing=prepare_following,
            )
            yield path, report
    finally:
        if isinstance(upcoming, PreparedFile):
            upcoming.abandon()


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
