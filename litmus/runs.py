"""Where input files are found: landed run logs and suite files."""

from __future__ import annotations

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


def suite_files(paths: LitmusPaths) -> list[Path]:
    return sorted(
        p
        for p in paths.suites.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.name.lower().endswith(SUITE_SUFFIXES)
    )
