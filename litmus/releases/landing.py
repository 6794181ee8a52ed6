"""Watching the landing directory (SPEC §9): which landed files are new, settled, and which
configurations they hold.

A file is **settled** when its size and modification time are the same in two successive
observations, so a file still being copied is left alone until the copy ends. A settled file
is identified by its SHA-256: a file copied in again (same bytes, any name) is not new, and
neither is one already kept in the raw store by an ingestion that did not go through the
watcher (``litmus run``).

The configurations of a new file are read cheaply: a JSONL run log is streamed line by line
and only each record's ``config`` object is validated (the full record is validated later, at
ingestion; a line that is not JSON or has no valid ``config`` is skipped here and quarantined
there). An Inspect log is one configuration, read from its first mappable sample with the same
import mapping ingestion uses. Partition keys come from :func:`litmus.keys.partition_key_for`,
never from file names.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from litmus.formats import RunConfig
from litmus.ingestion.run_files import detect_format, file_sha256, load_inspect_mapping, split_lines
from litmus.keys import config_key, partition_key_for
from litmus.runs import landed_files
from litmus.settings import LitmusPaths

CURSOR_VERSION = 1


class LandingCursorError(ValueError):
    """A stored watcher cursor that cannot be read back."""


@dataclass(frozen=True)
class FileObservation:
    size: int
    mtime_ns: int
    sha256: str | None = None  # known once the file settled


@dataclass
class LandingCursor:
    """What the watcher remembers between evaluations (stored as JSON)."""

    files: dict[str, FileObservation] = field(default_factory=dict)  # path under landing/
    seen: set[str] = field(default_factory=set)  # content hashes already handled

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": CURSOR_VERSION,
                "files": {
                    name: [obs.size, obs.mtime_ns, obs.sha256]
                    for name, obs in sorted(self.files.items())
                },
                "seen": sorted(self.seen),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> LandingCursor:
        if not text:
            return cls()
        try:
            value = json.loads(text)
            if value.get("version") != CURSOR_VERSION:
                raise LandingCursorError(f"unsupported cursor version {value.get('version')!r}")
            files = {
                str(name): FileObservation(int(size), int(mtime), None if sha is None else str(sha))
                for name, (size, mtime, sha) in value["files"].items()
            }
            return cls(files=files, seen={str(sha) for sha in value["seen"]})
        except LandingCursorError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as problem:
            raise LandingCursorError(f"unreadable landing cursor: {problem}") from None


@dataclass(frozen=True)
class LandedFile:
    path: Path
    name: str  # path relative to the landing directory (for people only)
    sha256: str


@dataclass(frozen=True)
class LandingScan:
    new_files: list[LandedFile]
    cursor: LandingCursor
    waiting: list[str]  # still changing (or first seen): looked at again next time
    already_stored: list[str]  # settled, new to the watcher, but already in the raw store
    repeated: list[str]  # settled copies of content the watcher handled before
    deferred: list[str] = field(default_factory=list)  # settled, left for the next scan


def in_raw_store(paths: LitmusPaths, sha256: str) -> bool:
    """Is a file with this content already kept in the content-addressed raw store?"""
    return paths.stored_raw_file(sha256) is not None


def scan_landing(
    paths: LitmusPaths, cursor: LandingCursor, *, byte_budget: int | None = None
) -> LandingScan:
    """Observe the landing directory once; report files that settled since the last time and
    carry content the watcher has not handled. The returned cursor remembers them as handled.

    ``byte_budget`` bounds how much new content one scan hashes: settled files beyond it are
    ``deferred`` (still settled, handled by the next scan); the first one is always handled.
    """
    files: dict[str, FileObservation] = {}
    seen = set(cursor.seen)
    new_files: list[LandedFile] = []
    waiting: list[str] = []
    already_stored: list[str] = []
    repeated: list[str] = []
    deferred: list[str] = []
    hashed_bytes = 0
    for path in landed_files(paths):
        name = path.relative_to(paths.landing).as_posix()
        try:
            status = path.stat()
        except FileNotFoundError:  # moved away between listing and looking
            continue
        before = cursor.files.get(name)
        now = FileObservation(status.st_size, status.st_mtime_ns)
        if before is None or (before.size, before.mtime_ns) != (now.size, now.mtime_ns):
            files[name] = now
            waiting.append(name)
            continue
        over_budget = byte_budget is not None and hashed_bytes + now.size > byte_budget
        if before.sha256 is None and hashed_bytes > 0 and over_budget:
            files[name] = before
            deferred.append(name)
            continue
        if before.sha256 is None:
            hashed_bytes += now.size
        sha = before.sha256 or file_sha256(path)
        files[name] = FileObservation(now.size, now.mtime_ns, sha)
        if sha in seen:
            if before.sha256 is None:
                repeated.append(name)
            continue
        seen.add(sha)
        if in_raw_store(paths, sha):
            already_stored.append(name)
        else:
            new_files.append(LandedFile(path, name, sha))
    return LandingScan(
        new_files=new_files,
        cursor=LandingCursor(files=files, seen=seen),
        waiting=waiting,
        already_stored=already_stored,
        repeated=repeated,
        deferred=deferred,
    )


@dataclass(frozen=True)
class FileConfigurations:
    """The configurations one run file holds: partition key → configuration key."""

    configurations: dict[str, str]
    records_read: int
    records_without_config: int


def file_configurations(path: Path, paths: LitmusPaths) -> FileConfigurations:
    """The configurations in a landed run file (see the module docstring for how)."""
    if detect_format(path) == "native-jsonl":
        return _jsonl_configurations(path)
    return _inspect_configurations(path, paths)


def _jsonl_configurations(path: Path) -> FileConfigurations:
    found: dict[str, str] = {}
    validated: dict[str, str | None] = {}  # the config's JSON text → partition key (None: invalid)
    records = unusable = 0
    for raw in _lines(path):
        records += 1
        config = _config_of(raw)
        if config is None:
            unusable += 1
            continue
        text = json.dumps(config, sort_keys=True)
        if text not in validated:
            validated[text] = _partition_of(config, found)
        if validated[text] is None:
            unusable += 1
    return FileConfigurations(found, records, unusable)


def _lines(path: Path) -> Iterator[bytes]:
    for line in split_lines(path):  # the lines ingestion will see (LF, CRLF or CR)
        if isinstance(line, bytes) and line.strip():  # an over-long line is quarantined
            yield line


def _config_of(raw: bytes) -> Any:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return value.get("config") if isinstance(value, dict) else None


def _partition_of(config: Any, found: dict[str, str]) -> str | None:
    try:
        parsed = RunConfig.model_validate(config)
    except ValidationError:
        return None
    key = partition_key_for(parsed)
    found[key] = config_key(parsed)
    return key


def _inspect_configurations(path: Path, paths: LitmusPaths) -> FileConfigurations:
    """One Inspect log is one configuration: take it from the first sample that maps."""
    from litmus.importers.inspect_log import iter_inspect_records

    found: dict[str, str] = {}
    read = problems = 0
    # one sample is all it takes: no reader processes for that
    for item in iter_inspect_records(path, load_inspect_mapping(paths), processes=1):
        read += 1
        if isinstance(item, dict) and _partition_of(item.get("config"), found) is not None:
            break
        problems += 1
    return FileConfigurations(found, read, problems)
