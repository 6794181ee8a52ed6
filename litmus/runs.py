"""Where input files are found: landed run logs and suite files."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from litmus.settings import LitmusPaths

RUN_SUFFIXES = (".jsonl", ".eval", ".json")
SUITE_SUFFIXES = (".json", ".yaml", ".yml")


def landed_files(paths: LitmusPaths) -> list[Path]:
    """Run files in the landing directory, oldest name first; hidden and partial files skipped."""
    return sorted(
        p
        for p in paths.landing.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.name.lower().endswith(RUN_SUFFIXES)
    )


def not_ingested(paths: LitmusPaths) -> list[tuple[str, str]]:
    """(file, reason) for every entry of the landing folder ingestion will not take: of a
    type it does not read, or empty. Reported, never silently skipped; hidden files (names
    starting with ".", e.g. partial uploads) are left alone."""
    problems: list[tuple[str, str]] = []
    if not paths.landing.is_dir():
        return problems
    for entry in sorted(paths.landing.rglob("*")):
        if entry.name.startswith(".") or entry.is_dir():
            continue
        name = entry.relative_to(paths.landing).as_posix()
        if not entry.is_file():
            problems.append((name, "not a regular file"))
        elif not entry.name.lower().endswith(RUN_SUFFIXES):
            problems.append(
                (name, f"unsupported file type (ingestion reads {', '.join(RUN_SUFFIXES)})")
            )
        elif entry.stat().st_size == 0:
            problems.append((name, "empty file: no records"))
    return problems


def suite_files(paths: LitmusPaths) -> list[Path]:
    return sorted(
        p
        for p in paths.suites.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.name.lower().endswith(SUITE_SUFFIXES)
    )


def _observe(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_size, stat.st_mtime_ns


def settled_files(
    files: Sequence[Path], *, quiet_seconds: float = 1.0, max_wait_seconds: float = 10.0
) -> tuple[list[Path], list[Path]]:
    """Split ``files`` into those safe to ingest and those still being written (or removed).

    A file last modified more than ``quiet_seconds`` ago is settled at once. A newer one (or
    one dated in the future) is settled once its size and modification time stay the same
    over ``quiet_seconds``; a file still changing after ``max_wait_seconds`` is left for the
    next run rather than ingested half-written.
    """
    settled: list[Path] = []
    watching: dict[Path, tuple[int, int] | None] = {}
    now_ns = time.time_ns()
    for path in files:
        observed = _observe(path)
        if observed is not None and now_ns - observed[1] > quiet_seconds * 1e9:
            settled.append(path)
        else:
            watching[path] = observed
    deadline = time.monotonic() + max_wait_seconds
    while watching and time.monotonic() < deadline:
        time.sleep(min(quiet_seconds, max(0.0, deadline - time.monotonic())))
        for path, before in list(watching.items()):
            after = _observe(path)
            if after is not None and after == before:
                settled.append(path)
                del watching[path]
            else:
                watching[path] = after
    return sorted(settled), sorted(watching)
