"""Where input files are found: landed run logs and suite files (and where a sample goes)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from stat import S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFSOCK, S_ISREG
from typing import TYPE_CHECKING

from litmus.settings import RUN_SUFFIXES, LitmusPaths

if TYPE_CHECKING:
    from litmus.sample import SampleManifest

SUITE_SUFFIXES = (".json", ".yaml", ".yml")


def _landing_entries(paths: LitmusPaths) -> Iterator[tuple[Path, os.stat_result]]:
    """Every run-file-named entry under landing/ with its own (never followed) status.

    Symlinked folders are not descended into; hidden and partial names are skipped."""
    for folder, subfolders, names in os.walk(paths.landing, followlinks=False):
        subfolders.sort()
        for name in [*names, *subfolders]:
            if name.startswith(".") or not name.lower().endswith(RUN_SUFFIXES):
                continue
            path = Path(folder) / name
            try:
                yield path, path.lstat()
            except FileNotFoundError:  # removed meanwhile
                continue


# A hard link is refused: a file with another name may be one outside the landing folder
# (``ln /etc/shadow landing/x.jsonl`` needs no permission on the file's contents to land
# them), and which of its names is "the" file cannot be told. Copy a file in instead.
HARD_LINK = "a hard link (the file has another name); only files with a single name are ingested"


def _landable(status: os.stat_result) -> bool:
    return S_ISREG(status.st_mode) and status.st_nlink == 1


def landed_files(paths: LitmusPaths) -> list[Path]:
    """Run files in the landing directory, oldest name first: regular files with one name
    only (a symlink, hard link, folder, FIFO or device is never read;
    :func:`refused_landing_entries` names them)."""
    return sorted(path for path, status in _landing_entries(paths) if _landable(status))


def refused_landing_entries(paths: LitmusPaths) -> list[tuple[str, str]]:
    """(name under landing/, why it is not ingested) for every entry named like a run file
    that is not a regular file with one name."""
    refused = []
    for path, status in _landing_entries(paths):
        if _landable(status):
            continue
        name = path.relative_to(paths.landing).as_posix()
        if S_ISREG(status.st_mode):
            refused.append((name, HARD_LINK))
        else:
            kind = _FILE_KINDS.get(S_IFMT(status.st_mode), "not a regular file")
            refused.append((name, f"{kind}; only regular files are ingested"))
    return sorted(refused)


_FILE_KINDS = {
    S_IFLNK: "a symbolic link",
    S_IFDIR: "a folder",
    S_IFIFO: "a FIFO (named pipe)",
    S_IFSOCK: "a socket",
    S_IFCHR: "a character device",
    S_IFBLK: "a block device",
}


def not_ingested(paths: LitmusPaths) -> list[tuple[str, str]]:
    """(file, reason) for every entry of the landing folder ingestion will not take: not a
    regular file (:func:`refused_landing_entries`), of a type it does not read, or empty.
    Reported, never silently skipped; hidden files (names starting with ".", e.g. partial
    uploads) are left alone. Links are never followed."""
    problems = refused_landing_entries(paths)
    if not paths.landing.is_dir():
        return problems
    for folder, subfolders, names in os.walk(paths.landing, followlinks=False):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(names):
            if name.startswith(".") or name.lower().endswith(RUN_SUFFIXES):
                continue  # run-named entries: ingested, or named by refused_landing_entries
            path = Path(folder) / name
            shown = path.relative_to(paths.landing).as_posix()
            problems.append(
                (shown, f"unsupported file type (ingestion reads {', '.join(RUN_SUFFIXES)})")
            )
    for path in landed_files(paths):
        try:
            empty = path.lstat().st_size == 0
        except FileNotFoundError:
            continue
        if empty:
            problems.append((path.relative_to(paths.landing).as_posix(), "empty file: no records"))
    return sorted(problems)


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


@dataclass(frozen=True)
class SettlingClock:
    """How :func:`settled_files` tells time and waits between two looks at a file."""

    monotonic: Callable[[], float] = time.monotonic
    wall_ns: Callable[[], int] = time.time_ns  # compared with file modification times
    sleep: Callable[[float], None] = time.sleep


# The clock ingestion uses; a test replaces it with one whose every wait is a slow copy's next
# write, so what it shows does not depend on how fast the machine is.
settling_clock = SettlingClock()


def settled_files(
    files: Sequence[Path],
    *,
    quiet_seconds: float = 1.0,
    max_wait_seconds: float = 10.0,
    clock: SettlingClock | None = None,
) -> tuple[list[Path], list[Path]]:
    """Split ``files`` into those safe to ingest and those still being written (or removed).

    A file last modified more than ``quiet_seconds`` ago is settled at once. A newer one (or
    one dated in the future) is settled once its size and modification time stay the same
    over ``quiet_seconds``; a file still changing after ``max_wait_seconds`` is left for the
    next run rather than ingested half-written.
    """
    clock = clock or settling_clock
    settled: list[Path] = []
    watching: dict[Path, tuple[int, int] | None] = {}
    now_ns = clock.wall_ns()
    for path in files:
        observed = _observe(path)
        if observed is not None and now_ns - observed[1] > quiet_seconds * 1e9:
            settled.append(path)
        else:
            watching[path] = observed
    deadline = clock.monotonic() + max_wait_seconds
    while watching and clock.monotonic() < deadline:
        clock.sleep(min(quiet_seconds, max(0.0, deadline - clock.monotonic())))
        for path, before in list(watching.items()):
            after = _observe(path)
            if after is not None and after == before:
                settled.append(path)
                del watching[path]
            else:
                watching[path] = after
    return sorted(settled), sorted(watching)


def stage_sample(paths: LitmusPaths, manifest: SampleManifest) -> None:
    """Put a generated sample where ingestion looks: the suite and every run file."""
    import shutil

    shutil.copyfile(manifest.suite_path, paths.suites / manifest.suite_path.name)
    for run_path in manifest.run_paths.values():
        shutil.copyfile(run_path, paths.landing / run_path.name)
